"""Read a scenario folder or single files into a store (spec/telemetry.md "The scenario folder").

A path may be a folder (``inventory.yaml``, ``metrics.om``, ``traces.otlp.jsonl``, ``kernel.log``,
``trainer.log``, and any other ``*.om``/``*.prom``/``*.txt`` metrics, ``*.jsonl``/``*.json``/
``*.pb`` traces, ``*.log`` logs; ``truth.json`` and other files are ignored) or a single file of
those kinds (``*.yaml``/``*.yml`` is an inventory). The inventory is loaded first (from the
paths, else the one the store already keeps) and stored with ``put_inventory``; each record is
resolved once, here. Metrics go through DuckDB's bulk path when the store is a
:class:`~suanli.store.duck.DuckStore`, else through the streaming parser and ``add_samples``.

``progress(what, done, total)`` is called before each file (``done`` files of ``total``) and once
at the end with ``done == total``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from suanli.errors import InputError
from suanli.ingest.openmetrics import read_openmetrics
from suanli.ingest.records import IngestReport
from suanli.ingest.resolve import InventoryLookups, ResolverLike
from suanli.store.api import Store

__all__ = ["LoadPlan", "load_paths", "missing_inputs", "plan_paths"]

Progress = Callable[[str, int, int], None]

METRIC_SUFFIXES = (".om", ".prom", ".txt", ".openmetrics")
TRACE_SUFFIXES = (".jsonl", ".json", ".pb", ".binpb", ".ndjson")
LOG_SUFFIXES = (".log",)
INVENTORY_NAMES = ("inventory.yaml", "inventory.yml")
IGNORED_NAMES = frozenset({"truth.json"})


@dataclass
class LoadPlan:
    """The files of one load, by kind."""

    inventory: Path | None = None
    metrics: list[Path] = field(default_factory=list)
    traces: list[Path] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)

    def files(self) -> list[tuple[str, Path]]:
        return ([("metrics", p) for p in self.metrics] + [("traces", p) for p in self.traces]
                + [("logs", p) for p in self.logs])


def _kind_of_file(path: Path) -> str | None:
    name = path.name.lower()
    if name in IGNORED_NAMES:
        return None
    if name.endswith((".yaml", ".yml")):
        return "inventory"
    for kind, suffixes in (("metrics", METRIC_SUFFIXES), ("traces", TRACE_SUFFIXES),
                           ("logs", LOG_SUFFIXES)):
        if name.endswith(suffixes) or name.endswith(tuple(s + ".gz" for s in suffixes)):
            return kind
    return None


def plan_paths(paths: Sequence[Path]) -> LoadPlan:
    """Sort paths into inventory / metrics / traces / logs; InputError for a path that is missing."""
    plan = LoadPlan()
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise InputError("no such file or folder", file=str(path))
        if path.is_dir():
            entries: Iterable[Path] = sorted(p for p in path.iterdir() if p.is_file())
            entries = [p for p in entries
                       if _kind_of_file(p) != "inventory" or p.name.lower() in INVENTORY_NAMES]
        else:
            entries = [path]
        for entry in entries:
            kind = _kind_of_file(entry)
            if kind == "inventory":
                if plan.inventory is not None and plan.inventory != entry:
                    raise InputError(f"two inventories given (also {plan.inventory})", file=str(entry))
                plan.inventory = entry
            elif kind is not None:
                getattr(plan, kind).append(entry)
    return plan


def _inventory(plan: LoadPlan, store: Store) -> Any | None:
    inventory_mod = importlib.import_module("suanli.inventory")
    if plan.inventory is not None:
        text = plan.inventory.read_text(encoding="utf-8")
        inv = inventory_mod.parse_inventory(text, source=str(plan.inventory))
        store.put_inventory(text, str(plan.inventory))
        return inv
    kept = store.inventory_text()
    if kept is None:
        return None
    source = str(getattr(store, "inventory_source", lambda: None)() or "inventory.yaml")
    return inventory_mod.parse_inventory(kept, source=source)


def load_paths(paths: Sequence[Path], store: Store, *, progress: Progress | None = None) -> IngestReport:
    """Load files into ``store`` and return the summed report (each file's is also ``add_report``-ed)."""
    plan = plan_paths(paths)
    inventory = _inventory(plan, store)
    lookups: ResolverLike | None = InventoryLookups(inventory) if inventory is not None else None
    resolver = inventory.resolver if inventory is not None else None
    total = IngestReport()
    files = plan.files()
    for i, (kind, path) in enumerate(files):
        if progress is not None:
            progress(f"{kind} {path.name}", i, len(files))
        report = IngestReport()
        if kind == "metrics":
            _load_metrics(path, store, lookups, report)
        elif kind == "traces":
            store.add_spans(_counted(_read_traces(path, resolver, report), report, "spans"))
        else:
            store.add_events(_counted(_read_logs(path, resolver, report), report, "events"))
        store.add_report(str(path), report)
        total.merge(report)
    store.flush()
    if progress is not None:
        progress("done", len(files), len(files))
    return total


def _load_metrics(path: Path, store: Store, lookups: ResolverLike | None, report: IngestReport) -> None:
    bulk = getattr(store, "load_openmetrics", None)
    if callable(bulk):
        bulk(path, lookups, report)
        return
    seen: set[Any] = set()
    for key, ts, values in read_openmetrics(path, lookups, report):
        store.add_samples(key, ts, values)
        if key not in seen:
            seen.add(key)
            report.add("series")
            if key.entity_id is None:
                report.add_unresolved("series")


def _counted(items: Iterable[Any], report: IngestReport, kind: str) -> Iterator[Any]:
    """Pass records through; count them only if the parser did not (the parsers count their own)."""
    n = 0
    for item in items:
        n += 1
        yield item
    if n and not report.loaded.get(kind):
        report.add(kind, n)


def _read_traces(path: Path, resolver: Any, report: IngestReport) -> Iterator[Any]:
    try:
        mod = importlib.import_module("suanli.ingest.otlp")
    except ImportError as err:
        report.reject(f"{path.name}: OTLP reader unavailable ({err})")
        return iter(())
    return mod.read_otlp(path, resolver, report)  # type: ignore[no-any-return]


def _read_logs(path: Path, resolver: Any, report: IngestReport) -> Iterator[Any]:
    try:
        mod = importlib.import_module("suanli.ingest.logs")
    except ImportError as err:
        report.reject(f"{path.name}: log reader unavailable ({err})")
        return iter(())
    return mod.read_log(path, resolver, report)  # type: ignore[no-any-return]


def missing_inputs(store: Store) -> list[str]:
    """Which of ``metrics``, ``traces``, ``logs`` the store holds nothing of (for ``missing``)."""
    stats = getattr(store, "stats", None)
    if callable(stats):                                    # DuckStore: row counts, no data read
        counts = stats()
        have = {"metrics": counts.get("samples", 0), "traces": counts.get("spans", 0),
                "logs": counts.get("events", 0)}
    else:
        have = {"metrics": len(store.metrics()), "traces": len(store.spans()), "logs": len(store.events())}
    return [kind for kind in ("metrics", "traces", "logs") if not have[kind]]
