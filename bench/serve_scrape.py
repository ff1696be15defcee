"""``suanli serve`` scraping a fleet every 15 s: CPU share, steady memory, samples stored, step time.

``python bench/serve_scrape.py [--seconds 90] [--nodes 128 1280]``; writes
``bench/results/serve_scrape.md`` and regathers ``bench/RESULTS.md``.

A child process serves dcgm-exporter-like pages (8 GPUs x 46 fields, dcgm-exporter's label set)
and node-exporter-like pages (infiniband counters of 4 NICs) for N nodes, as bench/live.py does;
a real ``suanli serve`` process scrapes every one of those 2N targets every 15 s (one scrape job
per target, ``instance`` labelled as the node's exporter), resolves the series against a synthetic
inventory of that size, stores them in its DuckDB file, and runs the analysis step every 15 s
over a 30-minute window. Measured over ``--seconds`` after a first round of warm-up: serve's CPU
seconds per wall second (from /proc), its resident memory (VmRSS) sampled every 5 s, the samples
it stored per second (its own ingest counter) against the samples the targets expose per 15 s,
the spans it stored per second while OTLP requests arrive at 0.5 spans per GPU-second, and the
analysis step's duration. At 1,280 nodes (10,240 GPUs) the targets expose about 33,000
samples per second.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

HERE = Path(__file__).resolve().parent
RESULT = HERE / "results" / "serve_scrape.md"
INTERVAL_S = 15.0
SPANS_PER_GPU_S = 0.5
"""A train_step and its four phase spans per rank every 10 s: the OTLP load beside the scrapes."""


def _live() -> Any:
    spec = importlib.util.spec_from_file_location("bench_live", HERE / "live.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def _config(work: Path, nodes: int, port: int) -> Path:
    jobs = []
    for n in range(1, nodes + 1):
        for kind, exp_port in (("dcgm", 9400), ("node", 9100)):
            jobs.append({"job": f"{kind}-{n:04d}", "targets": [f"127.0.0.1:{port}"], "path": f"/{kind}/{n}",
                         "interval": f"{INTERVAL_S:g}s", "timeout": "10s",
                         "labels": {"instance": f"node-{n:04d}:{exp_port}"}})
    doc = {"inventory": "inventory.yaml", "evaluation": {"interval": f"{INTERVAL_S:g}s", "window": "30m", "clock": "wall"},
           "scrape": jobs}
    path = work / "serve.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _status(url: str, token: str) -> dict[str, Any]:
    r = httpx.get(url + "/api/v1/service", headers={"Authorization": f"Bearer {token}"}, timeout=60)
    r.raise_for_status()
    return dict(r.json())


def bench(nodes: int, seconds: float, live: Any) -> dict[str, float]:
    import multiprocessing as mp

    from suanli.inventory.synth import synthetic_inventory_yaml

    gpus = nodes * 8
    dp = max(1, gpus // 64)
    with tempfile.TemporaryDirectory(prefix="suanli-bench-scrape-") as tmp:
        work = Path(tmp)
        (work / "inventory.yaml").write_text(synthetic_inventory_yaml(nodes=nodes, parallelism=(dp, 8, 8)))
        port = live._free_port()
        pages = mp.get_context("fork").Process(target=live._scrape_server, args=(port, nodes), daemon=True)
        pages.start()
        cfg, sport = _config(work, nodes, port), live._free_port()
        proc = subprocess.Popen([sys.executable, "-c", "from suanli.cli import main; main()", "serve", "--db",
                                 str(work / "serve.duckdb"), "--config", str(cfg), "--listen", f"127.0.0.1:{sport}"],
                                cwd=work, env={**os.environ, "SUANLI_TOKEN": live.TOKEN},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{sport}"
        stop = threading.Event()
        sender = threading.Thread(target=_send_spans, args=(url, live, gpus * SPANS_PER_GPU_S, stop), daemon=True)
        try:
            sender.start()
            return _measure(proc, url, live.TOKEN, seconds, nodes)
        finally:
            stop.set()
            sender.join(30)
            proc.terminate()
            proc.wait(300)                    # serve finishes its step first (a minute at 10,240 GPUs)
            pages.terminate()
            pages.join(10)


def _send_spans(url: str, live: Any, per_s: float, stop: threading.Event) -> None:
    """OTLP/HTTP protobuf requests of 512 spans at ``per_s`` spans a second, until ``stop``."""
    bodies = live._requests(16)
    headers = {"Authorization": f"Bearer {live.TOKEN}", "Content-Type": "application/x-protobuf"}
    gap = live.SPANS_PER_REQUEST / per_s
    with httpx.Client(timeout=60) as client:
        i, t_next = 0, time.monotonic()
        while not stop.is_set():
            with contextlib.suppress(httpx.HTTPError):    # serve not up yet, or busy: the next one
                client.post(f"{url}/v1/traces", content=bodies[i % len(bodies)], headers=headers)
            i, t_next = i + 1, t_next + gap
            stop.wait(max(0.0, t_next - time.monotonic()))


def _measure(proc: subprocess.Popen[bytes], url: str, token: str, seconds: float, nodes: int) -> dict[str, float]:
    deadline = time.monotonic() + 300
    while True:                      # up, and one full round of every target stored (the cold round)
        try:
            st = _status(url, token)
            if st["ingested"].get("samples", 0) > 0 and st["analysis"]["steps"] >= 1:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline or proc.poll() is not None:
            raise SystemExit(f"serve did not start scraping {nodes} nodes")
        time.sleep(1.0)
    time.sleep(INTERVAL_S)
    st0, c0, w0 = _status(url, token), live_cpu(proc.pid), time.perf_counter()
    rss = []
    while time.perf_counter() - w0 < seconds:
        rss.append(_rss_mib(proc.pid))
        time.sleep(5.0)
    st1, c1, w1 = _status(url, token), live_cpu(proc.pid), time.perf_counter()
    wall = w1 - w0
    stored = st1["ingested"].get("samples", 0) - st0["ingested"].get("samples", 0)
    spans = st1["ingested"].get("spans", 0) - st0["ingested"].get("spans", 0)
    per_round = sum(h.get("samples", 0) for h in st1["scrape"].values())
    down = sum(1 for h in st1["scrape"].values() if not h.get("up", False))
    half = rss[len(rss) // 2:]
    return {"nodes": nodes, "targets": len(st1["scrape"]), "down": down, "exposed_per_s": per_round / INTERVAL_S,
            "stored_per_s": stored / wall, "spans_per_s": spans / wall, "cpu_share": (c1 - c0) / wall, "rss_first": rss[0], "rss_last": rss[-1],
            "rss_max_late": max(half), "step_s": st1["analysis"]["last_step_s"], "steps": st1["analysis"]["steps"],
            "step_errors": st1["analysis"]["errors"], "wall_s": wall}


def live_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _report(rows: list[dict[str, float]]) -> str:
    lines = [
        "## serve_scrape", "",
        "What: bench/serve_scrape.py. A real `suanli serve` scraping every dcgm-exporter-like and node-exporter-like "
        "target of N nodes every 15 s (pages from a second process), storing into its DuckDB file, analysis step "
        "every 15 s over a 30-minute window, while OTLP/HTTP protobuf training spans arrive at 0.5 per GPU "
        "per second (a train_step and its four phases per rank every 10 s); measured after one warm-up round.",
        f"Machine: {os.cpu_count()} cores ({platform.machine()}, shared with other jobs), Python "
        f"{platform.python_version()}.", "",
        "| GPUs | targets (down) | samples exposed /s | samples stored /s | spans sent / stored /s | serve CPU | RSS first → last (late max) | analysis step |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(f"| {r['nodes'] * 8:,.0f} | {r['targets']:,.0f} ({r['down']:.0f}) | {r['exposed_per_s']:,.0f} | "
                     f"{r['stored_per_s']:,.0f} | {r['nodes'] * 8 * SPANS_PER_GPU_S:,.0f} / {r['spans_per_s']:,.0f} | "
                     f"{r['cpu_share'] * 100:.0f} % of a core | "
                     f"{r['rss_first']:,.0f} → {r['rss_last']:,.0f} MiB ({r['rss_max_late']:,.0f}) | "
                     f"{r['step_s']:.2f} s (of {r['steps']:.0f}, {r['step_errors']:.0f} failed) |")
    lines += ["", "Samples stored below samples exposed means serve did not keep up with that fleet on this "
              "machine (a scrape round took longer than the interval): the figure to improve (issue 18)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> str:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--seconds", type=float, default=90.0)
    ap.add_argument("--nodes", type=int, nargs="+", default=[128, 1280])
    args = ap.parse_args(argv if argv is not None else [])
    live = _live()
    rows = [bench(n, args.seconds, live) for n in args.nodes]
    text = _report(rows)
    print(text)
    RESULT.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("bench_run", HERE / "run.py")
    if spec is not None and spec.loader is not None:
        run = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(run)
        print(f"wrote {run.gather()}")
    return text


if __name__ == "__main__":
    main(sys.argv[1:])
