"""Span ingest benchmark: the DuckDB bulk path (``suanli.ingest.bulk_otlp``) vs the Python parser.

Writes a simulator scenario (``seed_optical_ber``, 8 nodes, its default 20 minutes: ~1.3 M spans,
~390 MB of OTLP JSON lines), then loads its ``traces.otlp.jsonl`` into two in-memory DuckStores in
the same process, one path after the other: ``store.add_spans(read_otlp(...))`` + ``flush()``
(what the loader did before) and ``load_otlp_jsonl`` (what it does now). Both include resolving
ids against the scenario's inventory and writing the ``spans`` table; the two tables are checked
to hold the same rows (attributes compared as parsed JSON).

``python bench/spans.py [--nodes N] [--folder DIR]`` (``--folder`` reuses a written scenario);
writes ``bench/results/spans.md``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "spans.md"
COLS = "trace_id, span_id, parent_id, name, start_s, end_s, job_id, rank, step, gpu_id, node_id, attrs"


def _rows(store: Any) -> list[tuple[Any, ...]]:
    rows = store.con.execute(f"SELECT {COLS} FROM spans ORDER BY seq").fetchall()
    return [(*r[:11], json.loads(r[11])) for r in rows]


def run(folder: Path) -> dict[str, Any]:
    from suanli.ingest.load import load_traces
    from suanli.ingest.otlp import read_otlp
    from suanli.ingest.records import IngestReport
    from suanli.inventory import parse_inventory
    from suanli.store.duck import DuckStore

    inv = folder / "inventory.yaml"
    resolver = parse_inventory(inv.read_text(encoding="utf-8"), source=str(inv)).resolver
    traces = folder / "traces.otlp.jsonl"
    slow, fast = DuckStore(None), DuckStore(None)
    t0 = time.perf_counter()
    slow.add_spans(read_otlp(traces, resolver, IngestReport()))
    slow.flush()
    t1 = time.perf_counter()
    bulk = load_traces(traces, fast, resolver, IngestReport())
    t2 = time.perf_counter()
    same = _rows(slow) == _rows(fast)
    n = int(fast.con.execute("SELECT count(*) FROM spans").fetchall()[0][0])
    return {"spans": n, "mib": traces.stat().st_size / 2**20, "python_s": t1 - t0, "duck_s": t2 - t1,
            "bulk": bulk, "same": same}


def report(r: dict[str, Any], folder: Path) -> str:
    py_rate, duck_rate = r["spans"] / r["python_s"], r["spans"] / r["duck_s"]
    lines = [
        "## spans", "",
        f"What: one OTLP JSON-lines file written by `suanli simulate --scenario seed_optical_ber` "
        f"({folder.name}: {r['spans']:,} spans, {r['mib']:,.0f} MiB), loaded into an in-memory DuckStore "
        "by each path in the same process (ids resolved against the scenario's inventory, `spans` table "
        "written). Python = `add_spans(read_otlp(...))` + `flush()`; DuckDB = `load_otlp_jsonl`.",
        f"Machine: 2 cores (x86_64, shared with other jobs), Python {platform.python_version()}.", "",
        "| path | wall s | spans/s |", "| --- | ---: | ---: |",
        f"| Python parser (read_otlp) | {r['python_s']:.2f} | {py_rate:,.0f} |",
        f"| DuckDB bulk (load_otlp_jsonl) | {r['duck_s']:.2f} | {duck_rate:,.0f} |", "",
        f"Speed-up: {py_rate and duck_rate / py_rate:.2f}x. Bulk path taken: {r['bulk']}. "
        f"Same rows in both tables: {r['same']}.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--nodes", type=int, default=8)
    ap.add_argument("--folder", type=Path, default=None)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(HERE.parent / "src"))
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.folder
        if folder is None:
            from suanli.sim import simulate
            folder = simulate("seed_optical_ber", Path(tmp) / f"seed_optical_ber-{args.nodes}n",
                              seed=1, nodes=args.nodes)
        r = run(folder)
        text = report(r, folder)
    print(text)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
