"""Live ingest: accepted OTLP spans/s through the receiver on one core, and scrape+parse at 10,240 GPUs.

``python bench/live.py [--seconds S] [--nodes N]``; writes ``bench/results/live.md`` and regathers
``bench/RESULTS.md``.

OTLP: the app (``suanli.web.create_app``) under uvicorn in a child process pinned to one core,
its consumer only counting; this process, pinned to the other core, sends pre-encoded protobuf
``ExportTraceServiceRequest`` s of 512 training spans (the SDK's default batch) from 4
keep-alive connections. Spans/s counts spans in 200 answers; the server's CPU seconds come from
the child itself, so "spans per CPU-second" is the one-core figure even on a shared machine.
Reference: the OpenTelemetry Collector documents about 12,000 spans/s per CPU for its OTLP
receiver; the target is 4x that.

End to end: the same requests sent to a real ``suanli serve`` (receivers, DuckDB store, analysis
loop) until every accepted span is stored; its CPU from /proc, the step's duration from its status.

Scrape: a child process serves dcgm-exporter-like pages (8 GPUs x 46 fields) and
node-exporter-like pages (infiniband, 4 NICs) for N nodes (1,280 nodes = 10,240 GPUs) on
loopback; this process scrapes every target with :class:`suanli.ingest.scrape.TargetScraper`
(4 threads, ids resolved against a synthetic 1,280-node inventory), one warm-up round then one
measured round. At 15 s intervals that series count is about 35,000 samples/s.
"""

from __future__ import annotations

import argparse
import http.server
import importlib.util
import multiprocessing as mp
import os
import platform
import socket
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "live.md"
TOKEN = "bench-token-0123456789abcdef"
SPANS_PER_REQUEST = 512
DCGM_FIELDS = 46
NICS = 4
IB_METRICS = ("port_data_transmitted_bytes_total", "port_errors_received_total", "symbol_error_total",
              "link_downed_total", "port_transmit_wait_total")
TARGET_SPANS_PER_CPU = 4 * 12_000


def _pin(cpu: int) -> None:
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > cpu:
        os.sched_setaffinity(0, {cpu})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- OTLP --------------------------------------------------------------------------------------

def _otlp_server(port: int, inventory_yaml: str) -> None:
    _pin(0)
    import uvicorn

    from suanli.inventory.loader import parse_inventory
    from suanli.web import Auth, Consumers, create_app
    from suanli.web.settings import ReceiverSettings

    inv = parse_inventory(inventory_yaml, "synth.yaml")
    count = {"spans": 0}

    def spans(batch: list[Any]) -> None:
        count["spans"] += len(batch)

    app = create_app(ReceiverSettings(), Consumers(spans, lambda b: None, lambda b: None), Auth(TOKEN),
                     resolver=inv.resolver,
                     status=lambda: {"cpu_s": time.process_time(), "consumed": count["spans"]})
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def _requests(n: int) -> list[bytes]:
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

    out = []
    for r in range(n):
        req = trace_service_pb2.ExportTraceServiceRequest()
        rs = req.resource_spans.add()
        node = r % 1280 + 1
        for key, value in (("job.id", "big"), ("host.name", f"node-{node:04d}"),
                           ("resource.gpu.id", f"node-{node:04d}/gpu{r % 8}")):
            rs.resource.attributes.add(key=key).value.string_value = value
        rs.resource.attributes.add(key="framework.pytorch.rank").value.int_value = (node - 1) * 8 + r % 8
        ss = rs.scope_spans.add()
        t0 = 1_773_000_000_000_000_000 + r * 10**9
        for k in range(SPANS_PER_REQUEST // 5):
            step_id = (r * 1000 + k).to_bytes(8, "big")
            step = ss.spans.add(trace_id=(r * 1000 + k).to_bytes(16, "big"), span_id=step_id, name="train_step",
                                start_time_unix_nano=t0 + k * 10**7, end_time_unix_nano=t0 + k * 10**7 + 9 * 10**6)
            step.attributes.add(key="train.step").value.int_value = r * 1000 + k
            for j, phase in enumerate(("forward", "backward", "allreduce", "optimizer")):
                sp = ss.spans.add(trace_id=step.trace_id, span_id=(r * 1000 + k).to_bytes(7, "big") + bytes([j + 1]),
                                  parent_span_id=step_id, name=phase, start_time_unix_nano=step.start_time_unix_nano + j,
                                  end_time_unix_nano=step.end_time_unix_nano - j)
                if phase == "allreduce":
                    sp.attributes.add(key="nccl.bytes").value.int_value = 1 << 26
        while len(ss.spans) < SPANS_PER_REQUEST:
            ss.spans.add(span_id=(10**9 + r * 100 + len(ss.spans)).to_bytes(8, "big"), name="data_load",
                         start_time_unix_nano=t0, end_time_unix_nano=t0 + 1000)
        out.append(req.SerializeToString())
    return out


def _status(url: str) -> dict[str, Any]:
    got: dict[str, Any] = httpx.get(f"{url}/api/v1/ingest/status", headers={"Authorization": f"Bearer {TOKEN}"},
                                    timeout=10).json()
    return got


def bench_otlp(seconds: float, inventory_yaml: str) -> dict[str, float]:
    port = _free_port()
    proc = mp.get_context("spawn").Process(target=_otlp_server, args=(port, inventory_yaml), daemon=True)
    proc.start()
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            _status(url)
            break
        except httpx.HTTPError:
            time.sleep(0.1)
    _pin(1 if (os.cpu_count() or 1) > 1 else 0)
    bodies = _requests(64)
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/x-protobuf"}
    accepted = [0]
    refused = [0]
    lock = threading.Lock()
    stop = threading.Event()

    def send(offset: int) -> None:
        with httpx.Client(timeout=30) as client:
            i = offset
            while not stop.is_set():
                resp = client.post(f"{url}/v1/traces", content=bodies[i % len(bodies)], headers=headers)
                i += 1
                with lock:
                    if resp.status_code == 200:
                        accepted[0] += SPANS_PER_REQUEST
                    else:
                        refused[0] += 1

    threads = [threading.Thread(target=send, args=(k * 16,)) for k in range(4)]
    for t in threads:
        t.start()
    time.sleep(1.0)                                         # warm-up: connections, caches
    with lock:
        a0 = accepted[0]
    s0, w0 = _status(url), time.perf_counter()
    time.sleep(seconds)
    with lock:
        a1 = accepted[0]
    s1, w1 = _status(url), time.perf_counter()
    stop.set()
    for t in threads:
        t.join()
    proc.terminate()
    proc.join(10)
    cpu = s1["cpu_s"] - s0["cpu_s"]
    spans = a1 - a0
    return {"spans": spans, "wall_s": w1 - w0, "cpu_s": cpu, "per_s": spans / (w1 - w0), "per_cpu_s": spans / cpu,
            "refused": refused[0], "consumed": s1["consumed"]}


# -- end to end: through `suanli serve` into DuckDB -----------------------------------------------

def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_serve(seconds: float, inventory_yaml: str, work: Path) -> dict[str, float]:
    """OTLP spans sent to a real ``suanli serve`` (DuckDB store, analysis loop on) until they are
    all stored; its CPU from /proc; the analysis step's duration from its status."""
    import subprocess

    work.mkdir(parents=True, exist_ok=True)
    (work / "inventory.yaml").write_text(inventory_yaml)
    db = work / "serve.duckdb"
    db.unlink(missing_ok=True)
    (work / "serve.yaml").write_text("inventory: inventory.yaml\nevaluation: {interval: 5s, clock: data}\n")
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-c", "from suanli.cli import main; main()", "serve", "--db", str(db),
                             "--config", str(work / "serve.yaml"), "--listen", f"127.0.0.1:{port}"],
                            env={**os.environ, "SUANLI_TOKEN": TOKEN}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                _status(url)
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        bodies = _requests(64)
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/x-protobuf"}
        c0, w0, sent = _cpu_s(proc.pid), time.perf_counter(), 0
        with httpx.Client(timeout=60) as client:
            while time.perf_counter() - w0 < seconds:
                if client.post(f"{url}/v1/traces", content=bodies[sent % len(bodies)], headers=headers).status_code == 200:
                    sent += 1
        while _status(url)["receivers"]["spans"]["pending"]:
            time.sleep(0.1)
        wall, cpu = time.perf_counter() - w0, _cpu_s(proc.pid) - c0
        time.sleep(12)                                   # two evaluation intervals: steps over the stored spans
        st = _status(url)
    finally:
        proc.terminate()
        proc.wait(120)
    spans = sent * SPANS_PER_REQUEST
    return {"spans": spans, "wall_s": wall, "cpu_s": cpu, "per_s": spans / wall, "per_cpu_s": spans / cpu,
            "step_s": st["analysis"]["last_step_s"], "steps": st["analysis"]["steps"]}


# -- scrape ------------------------------------------------------------------------------------

def _dcgm_page(node: int) -> bytes:
    lines = []
    for f in range(DCGM_FIELDS):
        lines.append(f"# HELP DCGM_FI_BENCH_{f} field {f}.\n# TYPE DCGM_FI_BENCH_{f} gauge")
        for g in range(8):
            lines.append(f'DCGM_FI_BENCH_{f}{{gpu="{g}",UUID="GPU-{node:04d}-{g}",pci_bus_id="00000000:{g + 16:02X}:00.0",'
                         f'device="nvidia{g}",modelName="NVIDIA H100 80GB HBM3",Hostname="node-{node:04d}",'
                         f'DCGM_FI_DRIVER_VERSION="550.54.15"}} {(node * 31 + g * 7 + f) % 1000}')
    return ("\n".join(lines) + "\n").encode()


def _node_page(node: int) -> bytes:
    lines = ["# TYPE node_boot_time_seconds gauge", "node_boot_time_seconds 1.7729e+09",
             "# TYPE node_load1 gauge", f"node_load1 {node % 7}.5"]
    for m in IB_METRICS:
        lines.append(f"# TYPE node_infiniband_{m} counter")
        lines += [f'node_infiniband_{m}{{device="mlx5_{k}",port="1"}} {node * 1000 + k}' for k in range(NICS)]
    return ("\n".join(lines) + "\n").encode()


def _scrape_server(port: int, nodes: int) -> None:
    _pin(1 if (os.cpu_count() or 1) > 1 else 0)
    pages = {f"/dcgm/{n}": _dcgm_page(n) for n in range(1, nodes + 1)}
    pages.update({f"/node/{n}": _node_page(n) for n in range(1, nodes + 1)})

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            body = pages[self.path]
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def bench_scrape(nodes: int, inventory_yaml: str) -> dict[str, float]:
    from suanli.ingest.scrape import ScrapeTarget, TargetScraper
    from suanli.inventory.loader import parse_inventory

    port = _free_port()
    proc = mp.get_context("spawn").Process(target=_scrape_server, args=(port, nodes), daemon=True)
    proc.start()
    _pin(0)
    resolver = parse_inventory(inventory_yaml, "synth.yaml").resolver
    targets = []
    for n in range(1, nodes + 1):
        targets.append(ScrapeTarget("dcgm", f"node-{n:04d}:9400", f"http://127.0.0.1:{port}/dcgm/{n}",
                                    labels=(("instance", f"node-{n:04d}:9400"),)))
        targets.append(ScrapeTarget("node", f"node-{n:04d}:9100", f"http://127.0.0.1:{port}/node/{n}",
                                    labels=(("instance", f"node-{n:04d}:9100"),)))
    scrapers = [TargetScraper(t, resolver) for t in targets]
    for _ in range(300):
        try:
            httpx.get(targets[0].url, timeout=1)
            break
        except httpx.HTTPError:
            time.sleep(0.1)
    rounds = []
    with httpx.Client(limits=httpx.Limits(max_connections=8)) as client, ThreadPoolExecutor(4) as pool:
        for _ in range(2):
            w0, c0 = time.perf_counter(), time.process_time()
            results = list(pool.map(lambda s: s.scrape(client), scrapers))
            rounds.append((time.perf_counter() - w0, time.process_time() - c0, results))
    proc.terminate()
    proc.join(10)
    wall, cpu, results = rounds[1]
    samples = sum(r.health.samples for r in results)
    resolved = sum(len(ts) for r in results for k, ts, _ in r.batches if k.entity_id is not None)
    return {"targets": len(targets), "samples": samples, "wall_s": wall, "cpu_s": cpu, "per_s": samples / wall,
            "per_cpu_s": samples / cpu, "cold_cpu_s": rounds[0][1], "down": sum(not r.health.up for r in results),
            "resolved": resolved / max(1, samples + 3 * len(results))}


# -- report ------------------------------------------------------------------------------------

def _report(otlp: dict[str, float], scrape: dict[str, float], nodes: int, serve: dict[str, float]) -> str:
    need = scrape["samples"] / 15.0
    lines = [
        "## live", "",
        "What: bench/live.py. OTLP: protobuf requests of 512 training spans from 4 keep-alive connections to "
        "`POST /v1/traces` (uvicorn, one process pinned to one core, consumer only counting); spans counted in "
        "200 answers. Scrape: every dcgm-exporter-like and node-exporter-like target of "
        f"{nodes:,} nodes ({nodes * 8:,} GPUs) scraped once warm (4 threads), ids resolved against a synthetic "
        "inventory of that size. The pages come from Python's http.server in a second process on the other core: "
        "the wall rates are bounded by that server and the client sharing 2 cores with other jobs; the CPU "
        "figures are the receiver's and the scraper's own.",
        f"Machine: {os.cpu_count()} cores ({platform.machine()}, shared with other jobs), Python "
        f"{platform.python_version()}.", "",
        "| figure | value | target |", "| --- | ---: | ---: |",
        f"| OTLP spans accepted per CPU-second of the receiver | {otlp['per_cpu_s']:,.0f} | "
        f"{TARGET_SPANS_PER_CPU:,} (4 x the Collector's 12,000) |",
        f"| OTLP spans accepted per second, wall (receiver on one core) | {otlp['per_s']:,.0f} | |",
        f"| OTLP requests refused (429/503) during the run | {otlp['refused']:,.0f} | |",
        f"| scrape+parse samples per second at capacity, wall | {scrape['per_s']:,.0f} | {need:,.0f} (every 15 s) |",
        f"| scrape+parse samples per CPU-second (warm series cache) | {scrape['per_cpu_s']:,.0f} | |",
        f"| CPU share for {nodes * 8:,} GPUs every 15 s (warm) | {scrape['cpu_s'] / 15 * 100:.1f} % of a core | "
        "< 100 % |",
        f"| first (cold) round: CPU s, labels parsed and resolved | {scrape['cold_cpu_s']:.1f} s | |",
        f"| targets / samples per round / resolved to an entity | {scrape['targets']:,.0f} / "
        f"{scrape['samples']:,.0f} / {scrape['resolved'] * 100:.0f} % | |",
        "", "End to end through `suanli serve` (one process: receivers, DuckDB store with one committed "
        "transaction per batch, the analysis loop every 5 s), one sender connection, until every accepted "
        "span is stored:", "",
        "| figure | value | peer |", "| --- | ---: | ---: |",
        f"| spans stored per CPU-second of serve | {serve['per_cpu_s']:,.0f} | 12,000 (Collector's OTLP receiver, "
        f"per CPU): x {serve['per_cpu_s'] / 12_000:.1f} |",
        f"| spans stored per second, wall | {serve['per_s']:,.0f} | |",
        f"| spans sent and stored | {serve['spans']:,.0f} in {serve['wall_s']:.1f} s | |",
        f"| analysis step over them (1,280-node inventory), last of {serve['steps']:.0f} | {serve['step_s']:.2f} s | |",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text, encoding="utf-8")
    return text


def _gather() -> None:
    spec = importlib.util.spec_from_file_location("bench_run", HERE / "run.py")
    if spec is None or spec.loader is None:
        return
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    print(f"wrote {run.gather()}")


def main(argv: list[str] | None = None) -> str:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0, help="measured OTLP time")
    ap.add_argument("--nodes", type=int, default=1280, help="nodes scraped (8 GPUs each)")
    args = ap.parse_args(argv if argv is not None else [])
    from suanli.inventory.synth import synthetic_inventory_yaml

    inventory = synthetic_inventory_yaml(nodes=max(args.nodes, 1280))
    scrape = bench_scrape(args.nodes, inventory)
    otlp = bench_otlp(args.seconds, inventory)
    with tempfile.TemporaryDirectory(prefix="suanli-bench-") as work:
        serve = bench_serve(args.seconds, inventory, Path(work))
    return _report(otlp, scrape, args.nodes, serve)


if __name__ == "__main__":
    main(sys.argv[1:])
    _gather()
