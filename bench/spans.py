"""Span ingest benchmark: OTLP JSON lines and protobuf, the Python parser vs the fast paths.

Writes a simulator scenario (``seed_optical_ber``, 8 nodes, its default 20 minutes: ~1.3 M spans,
~370 MiB of OTLP JSON lines) and the same requests as a varint-delimited protobuf stream
(``tests/otlp_proto.jsonl_to_pb``: one ``ExportTraceServiceRequest`` per line). Then, each in a
child process of its own (so peak RSS is its own), loads each file into an in-memory DuckStore:
the Python path ``store.add_spans(read_otlp(...))`` + ``flush()`` and the fast path
``load_traces`` (``bulk_otlp`` for JSON lines, ``bulk_otlp_proto`` for protobuf). All four
include resolving ids against the scenario's inventory and writing the ``spans`` table, and give a
digest of that table (rows in write order, attributes compared as parsed JSON): the four must agree.
Then ``suanli ingest FILE --db X`` as a user runs it (a child process, wall including start-up, the
database on disk), and a look at where the time goes (cProfile of the Python path on the first
2,000 requests, CPU per phase of the fast paths).

``python bench/spans.py [--nodes N] [--folder DIR]`` (``--folder`` reuses a written scenario);
writes ``bench/results/spans.md``.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from ingest import run_child  # noqa: E402  (bench/ is not a package)

RESULTS = HERE / "results" / "spans.md"
COLS = "trace_id, span_id, parent_id, name, start_s, end_s, job_id, rank, step, gpu_id, node_id"
TARGET = 300_000
NOTES = """
What is left, by the phases above: SQL shared by both formats (own idents, the parent walk, building
the rows and inserting them into the store) and, per format, the JSON parse in DuckDB (`_stage`:
`json_transform` of every request line) or the two upb parses plus the numpy wire walk (`_read`).
The CLI adds its start-up, the inventory and writing the database file.
"""


def _status(r: dict[str, Any], n: int) -> list[str]:
    """Each path's rate against the target, from this run's figures."""
    parts = []
    for fmt, label in (("jsonl", "JSON lines"), ("pb", "protobuf")):
        rates = [(kind, n / r[key]["wall"]) for kind, key in (("fast path", f"{fmt}_fast"), ("CLI", f"{fmt}_cli"))]
        parts.append(f"{label}: " + ", ".join(
            f"{kind} {rate:,.0f} ({'reached' if rate >= TARGET else f'{rate / TARGET:.0%} of it'})" for kind, rate in rates))
    up = r["startup"]
    return [f"Status against the target ({TARGET:,} spans/s, wall): " + "; ".join(parts) + ". "
            f"The CLI's start-up alone (`suanli --help`, best of 3 in this run): {up['wall']:.2f} s wall, "
            f"{up['cpu']:.2f} s CPU."]


def _digest(store: Any) -> str:
    """Order-sensitive digest of the spans table, attributes as parsed JSON (key order aside)."""
    import pyarrow as pa
    con = store.con
    distinct = [r[0] for r in con.execute("SELECT DISTINCT attrs FROM spans").fetchall()]
    canon = pa.table({"attrs": distinct, "canon": [json.dumps(json.loads(a), sort_keys=True) for a in distinct]})
    con.register("_canon", canon)
    got = con.execute(f"""SELECT count(*), bit_xor(hash(rn, {COLS}, canon)) FROM (
        SELECT row_number() OVER (ORDER BY seq) AS rn, {COLS}, c.canon FROM spans s JOIN _canon c USING (attrs))
        """).fetchall()[0]
    return f"{got[0]}:{got[1]:016x}"


_PHASES = {"suanli.ingest.bulk_otlp": ("_stage", "_check_spans", "_own", "_walk", "_cross"),
           "suanli.ingest.bulk_otlp_proto": ("_read", "_walk_fields", "_stage")}


def _phase_timer() -> dict[str, float]:
    """Wrap the fast paths' phases to sum their CPU seconds (threads included)."""
    import importlib
    spent: dict[str, float] = {}

    def wrap(name: str, f: Any) -> Any:
        def timed(*a: Any, **k: Any) -> Any:
            c0 = time.process_time()
            try:
                return f(*a, **k)
            finally:
                spent[name] = spent.get(name, 0.0) + time.process_time() - c0
        return timed

    for mod_name, names in _PHASES.items():
        mod = importlib.import_module(mod_name)
        short = mod_name.rsplit(".", 1)[1]
        for n in names:
            setattr(mod, n, wrap(f"{short}.{n}", getattr(mod, n)))
    import suanli.ingest.bulk_otlp as b
    import suanli.store.duck.txn as tx
    b._Maps.span_attrs = wrap("bulk_otlp: distinct span attribute lists (Python)", b._Maps.span_attrs)
    tx.DuckTransaction._append_numbered = wrap("rows query + insert into spans", tx.DuckTransaction._append_numbered)
    tx.DuckTransaction._dedupe = wrap("dedupe at commit", tx.DuckTransaction._dedupe)
    return spent


def child(kind: str, path: Path, inventory: Path, limit: int | None = None) -> dict[str, Any]:
    """One load in this process: ``python`` or ``fast`` (or ``profile`` / ``phases``)."""
    from suanli.ingest.load import load_traces
    from suanli.ingest.otlp import read_otlp
    from suanli.ingest.records import IngestReport
    from suanli.inventory import parse_inventory
    from suanli.store.duck import DuckStore

    resolver = parse_inventory(inventory.read_text(encoding="utf-8"), source=str(inventory)).resolver
    store = DuckStore(None)
    spent = _phase_timer() if kind == "phases" else {}
    prof = cProfile.Profile() if kind == "profile" else None
    c0, w0 = time.process_time(), time.perf_counter()
    bulk = False
    if kind in ("python", "profile"):
        if prof is not None:
            prof.enable()
        spans = read_otlp(path, resolver, IngestReport())
        if limit is not None:
            import itertools
            spans = itertools.islice(spans, limit)
        store.add_spans(spans)
        store.flush()
        if prof is not None:
            prof.disable()
    else:
        bulk = load_traces(path, store, resolver, IngestReport())
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    out: dict[str, Any] = {"cpu": cpu, "wall": wall, "bulk": bulk,
                           "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                           "spans": int(store.con.execute("SELECT count(*) FROM spans").fetchall()[0][0])}
    if kind in ("python", "fast"):
        out["digest"] = _digest(store)
    if prof is not None:
        stats = pstats.Stats(prof)
        rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:10]   # type: ignore[attr-defined]
        out["top"] = [(f"{Path(f).name}:{fn}", tt) for (f, _, fn), (_, _, tt, _, _) in rows]
    if spent:
        out["phases"] = spent
    return out


def _spawn(*args: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    got = subprocess.run([sys.executable, __file__, "--child", *args], env=env, check=True,
                         capture_output=True, text=True)
    return dict(json.loads(got.stdout.strip().splitlines()[-1]))


def _suanli(*args: str) -> dict[str, Any]:
    """``suanli ARGS`` through ``ingest.run_child``: its wall (start-up included), CPU and peak RSS,
    that one child's (not the largest of this run's)."""
    exe = Path(sys.executable).with_name("suanli")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-c", "import sys; from suanli.cli import main; sys.exit(main())"]
    got = run_child([*cmd, *args])
    return {"wall": float(got["wall_s"]), "cpu": float(got["cpu_s"]), "rss_mib": int(got["peak_rss_kib"]) / 1024}


def _cli(path: Path, tmp: Path) -> dict[str, Any]:
    """``suanli ingest FILE --db X`` (on disk)."""
    return _suanli("ingest", str(path), "--db", str(tmp / f"cli-{path.suffix.strip('.')}.duckdb"))


def run(folder: Path, tmp: Path) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from tests.otlp_proto import jsonl_to_pb

    inv, jsonl = folder / "inventory.yaml", folder / "traces.otlp.jsonl"
    pb = tmp / "traces.otlp.pb"
    t0 = time.perf_counter()
    messages = jsonl_to_pb(jsonl, pb)
    r: dict[str, Any] = {"convert_s": time.perf_counter() - t0, "messages": messages,
                         "mib": {"jsonl": jsonl.stat().st_size / 2**20, "pb": pb.stat().st_size / 2**20}}
    for fmt, path in (("jsonl", jsonl), ("pb", pb)):
        for kind in ("python", "fast"):
            r[f"{fmt}_{kind}"] = _spawn(kind, str(path), str(inv))
            print(fmt, kind, r[f"{fmt}_{kind}"], flush=True)
        r[f"{fmt}_phases"] = _spawn("phases", str(path), str(inv))
        r[f"{fmt}_profile"] = _spawn("profile", str(path), str(inv), "200000")
        r[f"{fmt}_cli"] = _cli(path, tmp)
        print(fmt, "cli", r[f"{fmt}_cli"], flush=True)
    r["startup"] = min((_suanli("--help") for _ in range(3)), key=lambda x: float(x["wall"]))
    return r


def _rate(n: int, s: float) -> str:
    return f"{n / s:,.0f}" if s else "-"


def report(r: dict[str, Any], folder: Path) -> str:
    n = r["jsonl_fast"]["spans"]
    digests = {r[k]["digest"] for k in ("jsonl_python", "jsonl_fast", "pb_python", "pb_fast")}
    lines = [
        "## spans", "",
        f"What: the OTLP traces of `suanli simulate --scenario seed_optical_ber` ({folder.name}: {n:,} spans in "
        f"{r['messages']:,} requests), as JSON lines ({r['mib']['jsonl']:,.0f} MiB) and as a delimited protobuf "
        f"stream of the same requests ({r['mib']['pb']:,.0f} MiB), loaded into an in-memory DuckStore by each "
        "path, each in a child process of its own (ids resolved against the scenario's inventory, `spans` "
        "table written). Python = `add_spans(read_otlp(...))` + `flush()`; fast = `load_traces` "
        "(`bulk_otlp` / `bulk_otlp_proto`). CPU is the process's (DuckDB's threads included).",
        f"Machine: {os.cpu_count()} cores (x86_64, shared with other jobs: wall times are inflated and "
        f"noisy; CPU seconds are the steadier figure), Python {platform.python_version()}.", "",
        "| format | path | CPU s | wall s | spans/s (wall) | spans per CPU-s | peak RSS MiB |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for fmt, label in (("jsonl", "JSON lines"), ("pb", "protobuf")):
        for kind in ("python", "fast"):
            x = r[f"{fmt}_{kind}"]
            lines.append(f"| {label} | {kind}{' (bulk)' if x['bulk'] else ''} | {x['cpu']:.2f} | {x['wall']:.2f} | "
                         f"{_rate(n, x['wall'])} | {_rate(n, x['cpu'])} | {x['rss_mib']:,.0f} |")
        c = r[f"{fmt}_cli"]
        lines.append(f"| {label} | `suanli ingest --db` (CLI, on disk) | {c['cpu']:.2f} | {c['wall']:.2f} | "
                     f"{_rate(n, c['wall'])} | {_rate(n, c['cpu'])} | {c['rss_mib']:,.0f} |")
    lines += ["", f"Same spans table from all four (digest of rows in write order): {len(digests) == 1} "
              f"({', '.join(sorted(digests))}). Target: {TARGET:,} spans/s.", "",
              "Where the time goes, Python path (cProfile, own time, first 200,000 spans of each file):", ""]
    for fmt in ("jsonl", "pb"):
        top = r[f"{fmt}_profile"]["top"][:6]
        lines.append(f"- {fmt}: " + ", ".join(f"`{name}` {t:.2f} s" for name, t in top))
    lines += ["", "Where the time goes, fast paths (CPU s per phase, whole file; `_walk_fields` is part "
              "of `_read`):", ""]
    for fmt in ("jsonl", "pb"):
        ph = r[f"{fmt}_phases"]
        lines.append(f"- {fmt} (total {ph['cpu']:.2f} s): " + ", ".join(
            f"{k} {v:.2f}" for k, v in sorted(ph["phases"].items(), key=lambda kv: -kv[1])))
    lines += ["", *_status(r, n), NOTES]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:
        kind, path, inv, *rest = argv[1:]
        print(json.dumps(child(kind, Path(path), Path(inv), int(rest[0]) if rest else None)))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--nodes", type=int, default=8)
    ap.add_argument("--folder", type=Path, default=None)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.folder
        if folder is None:
            from suanli.sim import simulate
            folder = simulate("seed_optical_ber", Path(tmp) / f"seed_optical_ber-{args.nodes}n",
                              seed=1, nodes=args.nodes)
        r = run(folder, Path(tmp))
        text = report(r, folder)
    print(text)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
