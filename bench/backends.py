"""The PromQL backend against DuckDB on the same data, in one run: a 128-node, 20-minute
switch_port_errors scenario (``suanli simulate --scenario switch_port_errors --nodes 128 --minutes 20``)
diagnosed from DuckDB, from a real Prometheus 2.42 (promtool backfill) and from a real
VictoriaMetrics 1.79 (import API) through ``PromStore``: diagnose time, queries, bytes moved, raw
samples pulled, and whether the incidents and the ledger agree.

    python bench/backends.py [--nodes 128] [--minutes 20]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.backends.servers import (  # noqa: E402
    backfill_prometheus,
    start_prometheus,
    start_victoria_metrics,
    vm_import,
)

from suanli.ingest.load import load_paths  # noqa: E402
from suanli.inventory import load_inventory  # noqa: E402
from suanli.pipeline import diagnose  # noqa: E402
from suanli.report import diagnosis_json  # noqa: E402
from suanli.sim import simulate  # noqa: E402
from suanli.store.duck import DuckStore  # noqa: E402
from suanli.store.promql import PromConfig, PromStore  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "backends.md"


def _secondary(folder: Path) -> DuckStore:
    store = DuckStore(None)
    load_paths([folder / n for n in ("inventory.yaml", "traces.otlp.jsonl", "kernel.log", "trainer.log")
                if (folder / n).exists()], store)
    return store


def _summary(diag: Any) -> tuple[list[tuple[str, str]], dict[str, float]]:
    jobs = {j["id"]: j for j in diagnosis_json(diag)["efficiency"]["jobs"]}
    ledger = {f"{jid} {k}": float(j[k]) for jid, j in jobs.items() for k in ("mfu", "goodput")}
    return [(i.category, i.root_id) for i in diag.incidents], ledger


def _prom_run(name: str, url: str, folder: Path, inv: Any, window: tuple[float, float],
              load_s: float) -> dict[str, Any]:
    store = PromStore(PromConfig(url), inv, window=(window[0] - 60, window[1] + 60), secondary=_secondary(folder))
    t0 = time.perf_counter()
    diag = diagnose(store, inv, window=store.time_range())
    elapsed = time.perf_counter() - t0
    st = store.query_stats
    row = {"backend": name, "load_s": load_s, "diagnose_s": elapsed, "queries": st.queries,
           "by_endpoint": dict(st.by_endpoint), "bytes_wire": st.bytes_received + st.bytes_sent,
           "bytes_json": st.bytes_decoded, "samples": st.samples, "server_s": st.seconds, "diag": diag,
           "timings": dict(diag.timings_s)}
    store.close()
    return row


def run(nodes: int, minutes: float, tmp: Path) -> list[dict[str, Any]]:
    t0 = time.perf_counter()
    folder = simulate("switch_port_errors", tmp / "scenario", seed=7, nodes=nodes, minutes=minutes)
    print(f"simulated {nodes} nodes x {minutes} min in {time.perf_counter() - t0:.1f} s")
    inv = load_inventory(folder / "inventory.yaml")
    t0 = time.perf_counter()
    duck = DuckStore(None)
    load_paths([folder], duck)
    duck_load = time.perf_counter() - t0
    window = duck.time_range() or (0.0, 0.0)
    t0 = time.perf_counter()
    base = diagnose(duck, inv, window=window)
    rows = [{"backend": "DuckDB (in process)", "load_s": duck_load, "diagnose_s": time.perf_counter() - t0,
             "queries": 0, "bytes_wire": 0, "bytes_json": 0, "samples": duck.stats()["samples"], "note": " (held)",
             "diag": base,
             "server_s": 0.0, "by_endpoint": {}, "timings": dict(base.timings_s)}]
    duck.close()
    t0 = time.perf_counter()
    backfill_prometheus(folder / "metrics.om", tmp / "prom" / "data")
    prom = start_prometheus(tmp / "prom", tmp / "prom" / "data")
    try:
        rows.append(_prom_run("Prometheus 2.42", prom.url, folder, inv, window, time.perf_counter() - t0))
    finally:
        prom.stop()
    t0 = time.perf_counter()
    vm = start_victoria_metrics(tmp / "vm")
    try:
        vm_import(vm, folder / "metrics.om")
        rows.append(_prom_run("VictoriaMetrics 1.79", vm.url, folder, inv, window, time.perf_counter() - t0))
    finally:
        vm.stop()
    return rows


def _mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


def report(rows: list[dict[str, Any]], nodes: int, minutes: float) -> str:
    incidents, ledger = _summary(rows[0]["diag"])
    lines = ["## backends", "",
             f"Machine: 2 cores, servers on loopback. Data: `suanli simulate --scenario switch_port_errors "
             f"--nodes {nodes} --minutes {minutes:g}` (seed 7), {rows[0]['samples']:,} samples in DuckDB. "
             "Load = DuckDB's loader / promtool backfill + start / VictoriaMetrics import; diagnose = "
             "`pipeline.diagnose` on the whole window (traces and logs from an in-memory DuckDB for the "
             "TSDB runs). Bytes: request + response on the wire (the TSDBs gzip), and the JSON decoded. Raw samples: "
             "pulled by PromStore (each metric once, cached; metrics no analysis reads are not pulled).", "",
             "| backend | load | diagnose | queries | bytes on the wire | JSON decoded | raw samples pulled | same incidents | ledger max diff |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        inc, led = _summary(r["diag"])
        missing = sorted(set(ledger) - set(led))
        diff = max((abs(led[k] - ledger[k]) for k in ledger if k in led), default=0.0) * 100
        lines.append(f"| {r['backend']} | {r['load_s']:.1f} s | {r['diagnose_s']:.1f} s | {r['queries']} | "
                     f"{_mb(r['bytes_wire'])} | {_mb(r['bytes_json'])} | {r['samples']:,}{r.get('note', '')} | "
                     f"{'yes' if inc == incidents else 'NO: ' + str(inc)} | {diff:.2f} pt"
                     f"{' (missing: ' + ', '.join(missing) + ')' if missing else ''} |")
    lines += ["", f"Incidents (DuckDB): {', '.join(f'{c} at {i}' for c, i in incidents) or 'none'}.", ""]
    for r in rows:
        if r["diag"].analysis_errors:
            lines.append(f"- {r['backend']}: analysis errors: {'; '.join(r['diag'].analysis_errors)}")
    for r in rows[1:]:
        eps = ", ".join(f"{k} {v}" for k, v in sorted(r["by_endpoint"].items()))
        lines.append(f"- {r['backend']}: {eps}; time waiting on the server {r['server_s']:.1f} s; per analysis "
                     + ", ".join(f"{k} {v:.1f} s" for k, v in r["timings"].items()))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=128)
    ap.add_argument("--minutes", type=float, default=20.0)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="suanli-bench-backends-") as tmp:
        rows = run(args.nodes, args.minutes, Path(tmp))
    text = report(rows, args.nodes, args.minutes)
    print(text)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(text, encoding="utf-8")
    from importlib import util
    spec = util.spec_from_file_location("bench_run", ROOT / "bench" / "run.py")
    assert spec is not None and spec.loader is not None
    runner = util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    print(f"wrote {RESULTS} and {runner.gather()}")


if __name__ == "__main__":
    main(sys.argv[1:])
