"""Probe overhead: the same training steps with the probe off, on, and on with a dead collector.

One process, one CPU thread, a real model (an MLP, ~20-50 ms per step of forward, backward and
SGD). The modes take turns in rounds, so drift on a shared machine falls on all of them alike.
Each step opens the span layout of a real loop: ``train_step`` with data_load, forward, backward,
optimizer. Then, separately: the cost of one annotation in µs against a bare OpenTelemetry span
and an NVTX range, and the memory of the probe over 10,000 steps.

``python bench/probe.py [--steps N] [--rounds R]``; writes ``bench/results/probe.md`` and
regathers ``bench/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import platform
import socket
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "probe.md"
PHASES = ("data_load", "forward", "backward", "optimizer")


class _Sink(BaseHTTPRequestHandler):
    """A live OTLP/HTTP endpoint that accepts and discards."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return None


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _workload(width: int, batch: int) -> Callable[[Any], None]:
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(*(m for _ in range(3) for m in (nn.Linear(width, width), nn.ReLU())))
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x, y = torch.randn(batch, width), torch.randn(batch, width)

    def step(probe: Any) -> None:
        with probe.phase("data_load"):
            xb, yb = x.clone(), y.clone()
        with probe.phase("forward"):
            loss = nn.functional.mse_loss(model(xb), yb)
        with probe.phase("backward"):
            loss.backward()
        with probe.phase("optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)
    return step


def overhead(steps: int, rounds: int, width: int, batch: int, tmp: Path) -> dict[str, Any]:
    import torch

    from suanli.probe import Probe

    torch.set_num_threads(1)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    probes = {
        "off": Probe(job_id="bench", rank=0, enabled=False),
        "on (OTLP/HTTP, live collector)": Probe(job_id="bench", rank=0,
                                                endpoint=f"http://127.0.0.1:{server.server_port}/v1/traces"),
        "on (OTLP/JSON file)": Probe(job_id="bench", rank=0, file=str(tmp / "t.jsonl")),
        "on (dead collector)": Probe(job_id="bench", rank=0, export_timeout_s=1.0,
                                     endpoint=f"http://127.0.0.1:{_closed_port()}/v1/traces"),
    }
    work = _workload(width, batch)
    times: dict[str, list[float]] = {k: [] for k in probes}
    cpu: dict[str, list[float]] = {k: [] for k in probes}
    for r in range(rounds + 1):                                  # round 0 warms up
        for name, probe in probes.items():
            c0 = time.process_time()                             # CPU of every thread of the process
            for i in range(steps):
                t0 = time.perf_counter()
                with probe.step(r * steps + i, tokens=batch):
                    work(probe)
                if r:
                    times[name].append(time.perf_counter() - t0)
            if "dead" not in name:
                probe.flush()                                    # its export work is charged to its block
            if r:
                cpu[name].append((time.process_time() - c0) / steps)
    stats = {name: probe.stats() for name, probe in probes.items()}
    for probe in probes.values():
        probe.close(timeout_s=2.0)
    server.shutdown()
    return {"times": times, "cpu": cpu, "stats": stats}


class _Discard:
    """A SpanExporter that accepts and forgets (the bare span's cost is then the calling thread's)."""

    def export(self, spans: Any) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _per_call_us(fn: Callable[[], None], n: int) -> float:
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
    return best


def annotation_costs(n: int) -> dict[str, float | str]:
    """µs per annotation (enter + exit) on the training thread, best of 5 runs of ``n``."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from suanli.probe import Probe

    out: dict[str, float | str] = {}
    off = Probe(job_id="bench", rank=0, enabled=False)
    on = Probe(job_id="bench", rank=0, file=os.devnull, queue_size=10**6)

    def phases(p: Any) -> Callable[[], None]:
        def f() -> None:
            with p.step(0):
                for _ in range(9):
                    with p.phase("forward"):
                        pass
        return f

    out["probe off: step or phase"] = _per_call_us(phases(off), n // 10) / 10
    out["probe on: step or phase"] = _per_call_us(phases(on), n // 10) / 10
    on.close()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(BatchSpanProcessor(_Discard(), max_queue_size=10**6))
    tracer = provider.get_tracer("bench")

    def bare() -> None:
        with tracer.start_as_current_span("forward"):
            pass
    out["bare OpenTelemetry SDK span (start_as_current_span)"] = _per_call_us(bare, n)
    provider.shutdown()
    out["NVTX range (torch.cuda.nvtx push/pop)"] = _nvtx_cost(n)
    return out


def _nvtx_cost(n: int) -> float | str:
    import torch

    if not torch.cuda.is_available():
        return "n/a: torch.cuda.nvtx needs CUDA (this torch is a CPU build / no GPU)"
    nvtx = torch.cuda.nvtx

    def rng() -> None:
        nvtx.range_push("forward")
        nvtx.range_pop()
    return _per_call_us(rng, n)


def memory(steps: int) -> dict[str, Any]:
    """Traced Python memory of a probe while it records ``steps`` steps of 5 spans (no model)."""
    from suanli.probe import Probe

    probe = Probe(job_id="bench", rank=0, file=os.devnull)
    gc.collect()
    tracemalloc.start()
    marks: list[tuple[int, float]] = []
    for i in range(steps):
        with probe.step(i, tokens=1):
            for name in PHASES:
                with probe.phase(name):
                    pass
        if (i + 1) % (steps // 5) == 0:
            time.sleep(0.3)                       # let the export thread catch up, as real steps would
            gc.collect()
            marks.append((i + 1, tracemalloc.get_traced_memory()[0] / 2**20))
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    st = probe.stats()
    probe.close()
    return {"marks": marks, "peak_mib": peak, "stats": st}


def _q(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def report(ov: dict[str, Any], costs: dict[str, float | str], mem: dict[str, Any], args: Any) -> str:
    base = statistics.median(ov["times"]["off"])
    lines = ["## probe", "",
             f"What: one process, 1 CPU thread, an MLP ({3} x Linear({args.width}, {args.width}), batch "
             f"{args.batch}) trained with SGD; each step is `train_step` + 4 phases. {args.rounds} rounds x "
             f"{args.steps} steps per mode, the modes taking turns; step time from `perf_counter` around "
             "the whole step.",
             f"Machine: {os.cpu_count()} cores (x86_64, shared with other jobs), Python "
             f"{platform.python_version()}.", "",
             "| mode | steps | median ms | p10 - p90 ms | wall overhead (median) | CPU ms per step, all threads "
             "(mean over blocks, min - max) | CPU overhead |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    cpu_base = statistics.mean(ov["cpu"]["off"])
    for name, xs in ov["times"].items():
        med = statistics.median(xs)
        cs = ov["cpu"][name]
        cmean = statistics.mean(cs)
        lines.append(f"| {name} | {len(xs)} | {med * 1e3:.2f} | {_q(xs, .1) * 1e3:.2f} - {_q(xs, .9) * 1e3:.2f} "
                     f"| {'-' if name == 'off' else f'{(med / base - 1) * 100:+.2f} %'} "
                     f"| {cmean * 1e3:.2f} ({min(cs) * 1e3:.2f} - {max(cs) * 1e3:.2f}) "
                     f"| {'-' if name == 'off' else f'{(cmean / cpu_base - 1) * 100:+.2f} %'} |")
    on_us = costs["probe on: step or phase"]
    direct = 5 * float(on_us) / (base * 1e6) * 100
    dead = ov["stats"]["on (dead collector)"]
    lines += ["", "Wall-clock medians on a machine shared with other jobs move by several % between identical "
              "blocks, so their differences are noise at this size. The CPU columns count every thread of the "
              "process (the export threads included, each block's export flushed inside it). The cost on the "
              f"training thread itself is 5 annotations x {float(on_us):.1f} µs = {5 * float(on_us):.0f} µs per "
              f"step = **{direct:.3f} %** of a {base * 1e3:.0f} ms step (target < 1 %).",
              f"Dead collector: {dead['spans_dropped']:,} spans dropped and counted, "
              f"{dead['spans_export_failed']:,} spans whose export failed counted, 0 exceptions in the loop.", "",
              "| annotation (enter + exit, training thread) | µs |", "| --- | ---: |"]
    for name, v in costs.items():
        lines.append(f"| {name} | {v if isinstance(v, str) else f'{v:.2f}'} |")
    lines += ["", f"Memory (tracemalloc, Python heap) over {args.memory_steps:,} steps of 5 spans with a "
              f"file exporter: " + ", ".join(f"{n:,} steps: {m:.2f} MiB" for n, m in mem["marks"]) +
              f"; peak {mem['peak_mib']:.2f} MiB; {mem['stats']['spans_exported']:,} spans exported, "
              f"{mem['stats']['spans_dropped']:,} dropped (steps of no work outrun the exporter; "
              "the queue is bounded).", ""]
    return "\n".join(lines)


def _gather() -> None:
    spec = importlib.util.spec_from_file_location("bench_run", HERE / "run.py")
    if spec is not None and spec.loader is not None:
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        mod.gather()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--steps", type=int, default=40, help="steps per mode per round")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=96)
    ap.add_argument("--memory-steps", type=int, default=10_000)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(HERE.parent / "src"))
    with tempfile.TemporaryDirectory() as tmp:
        ov = overhead(args.steps, args.rounds, args.width, args.batch, Path(tmp))
    costs = annotation_costs(20_000)
    mem = memory(args.memory_steps)
    text = report(ov, costs, mem, args)
    print(text)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text, encoding="utf-8")
    _gather()


if __name__ == "__main__":
    main()
