"""The CLI's other tables: the scenarios the simulator offers, an ingest's summary, the
observability maturity ``suanli check`` scores."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rich.console import Group
from rich.table import Table
from rich.text import Text

from suanli.ingest.records import IngestReport

__all__ = ["ingest_table", "maturity_table", "scenarios_table"]


def scenarios_table(scenarios: Iterable[tuple[str, str]]) -> Table:
    table = Table("scenario", "what it injects", title="suanli simulate --scenario NAME")
    for name, desc in scenarios:
        table.add_row(name, desc)
    return table


def ingest_table(report: IngestReport) -> Group:
    """Loaded and unresolved records per kind; the rejected lines (which have no kind: they did not
    parse) are counted under the table, never in the "loaded" column."""
    table = Table("records", "loaded", "unresolved", title="ingest summary")
    for kind in sorted(set(report.loaded) | set(report.unresolved)):
        table.add_row(kind, f"{report.loaded.get(kind, 0):,}", f"{report.unresolved.get(kind, 0):,}")
    return Group(table, Text(f"rejected: {report.rejected:,} line(s) that did not parse (named above)"))


def maturity_table(maturity: Mapping[str, tuple[int, str]]) -> Table:
    table = Table("dimension", "level", "why", title="observability maturity")
    for dim, (level, why) in maturity.items():
        table.add_row(dim, str(level), why)
    return table
