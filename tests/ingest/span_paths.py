"""The two ways a trace file reaches the store, side by side: the Python parser and what
``load_traces`` takes (a bulk reader or its fallback), and the spans table as comparable rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from suanli.ingest.load import load_traces
from suanli.ingest.otlp import OtlpConfig, read_otlp
from suanli.ingest.records import IngestReport
from suanli.inventory import parse_inventory
from suanli.store.duck import DuckStore

COLS = "trace_id, span_id, parent_id, name, start_s, end_s, job_id, rank, step, gpu_id, node_id, attrs, seq"


def resolver_of(folder: Path) -> Any:
    inv = folder / "inventory.yaml"
    return parse_inventory(inv.read_text(encoding="utf-8"), source=str(inv)).resolver


def span_rows(store: DuckStore) -> list[tuple[Any, ...]]:
    """Spans in write order, attrs parsed (key order is not part of the contract); seq relative."""
    rows = store.con.execute(f"SELECT {COLS} FROM spans ORDER BY seq").fetchall()
    base = rows[0][-1] if rows else 0
    return [(*r[:11], json.loads(r[11]), r[12] - base) for r in rows]


def both_paths(path: Path, resolver: Any, config: OtlpConfig | None = None
               ) -> tuple[bool, list[Any], list[Any], IngestReport, IngestReport]:
    """(whether a bulk reader took it, the Python path's rows, load_traces' rows, their reports)."""
    slow, fast = DuckStore(None), DuckStore(None)
    r_slow, r_fast = IngestReport(), IngestReport()
    slow.add_spans(read_otlp(path, resolver, r_slow, config))
    slow.flush()
    used = load_traces(path, fast, resolver, r_fast, config=config)
    return used, span_rows(slow), span_rows(fast), r_slow, r_fast
