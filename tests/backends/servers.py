"""Real Prometheus and VictoriaMetrics on loopback ports with temporary data folders.

A missing binary skips the test on a developer's machine and fails it in CI (``CI`` set to anything
but "", "0" or "false"): CI must never pass on servers that did not run. ``make test`` installs the
Debian packages (``prometheus``, ``victoria-metrics``).
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.conftest import in_ci, need_tool, ran_external

__all__ = ["Server", "backfill_prometheus", "in_ci", "need", "om_to_prometheus_text", "start_prometheus",
           "start_victoria_metrics", "start_vmauth", "vm_import"]


def need(binary: str) -> str:
    """The path of ``binary``; fails in CI, skips elsewhere, when it is not installed."""
    return need_tool(binary)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    name: str
    url: str
    proc: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def _wait_ready(server: Server, path: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            break
        try:
            if httpx.get(server.url + path, timeout=2.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    server.stop()
    raise RuntimeError(f"{server.name} did not start: {server.log.read_text(errors='replace')[-2000:]}")


def _spawn(name: str, argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    ran_external(name)
    with log.open("wb") as fh:
        return subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def backfill_prometheus(om: Path, data_dir: Path) -> str:
    """``promtool tsdb create-blocks-from openmetrics``; returns promtool's output."""
    out = subprocess.run([need("promtool"), "tsdb", "create-blocks-from", "openmetrics", str(om), str(data_dir)],
                         capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"promtool backfill failed: {out.stdout[-1000:]}{out.stderr[-1000:]}")
    return out.stdout


def start_prometheus(workdir: Path, data_dir: Path, rule_files: list[Path] | None = None,
                     extra_args: tuple[str, ...] = (), alertmanager: str | None = None) -> Server:
    """Prometheus 2.x on a free loopback port over ``data_dir``, with the remote-write receiver on,
    sending its alerts to ``alertmanager`` (a URL) when given."""
    binary = need("prometheus")
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "prometheus.yml"
    lines = ["global:", "  evaluation_interval: 15s"]
    if rule_files:
        lines += ["rule_files:", *[f"  - {p}" for p in rule_files]]
    if alertmanager:
        lines += ["alerting:", "  alertmanagers:", "    - static_configs:",
                  f"        - targets: ['{alertmanager.split('://', 1)[-1]}']"]
    config.write_text("\n".join(lines) + "\n")
    port = free_port()
    argv = [binary, f"--config.file={config}", f"--storage.tsdb.path={data_dir}",
            "--storage.tsdb.retention.time=100y", f"--web.listen-address=127.0.0.1:{port}",
            "--web.enable-remote-write-receiver", "--log.level=warn", *extra_args]
    log = workdir / "prometheus.log"
    server = Server("prometheus", f"http://127.0.0.1:{port}", _spawn("prometheus", argv, log), log)
    _wait_ready(server, "/-/ready")
    return server


def start_victoria_metrics(workdir: Path, extra_args: tuple[str, ...] = ()) -> Server:
    """Single-node VictoriaMetrics on a free loopback port (no cache, no latency offset: tests read
    what they just wrote)."""
    binary = need("victoria-metrics")
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    argv = [binary, f"-storageDataPath={workdir / 'data'}", f"-httpListenAddr=127.0.0.1:{port}",
            "-retentionPeriod=100y", "-search.disableCache", "-search.latencyOffset=0s", "-loggerLevel=WARN",
            *extra_args]
    log = workdir / "victoria-metrics.log"
    server = Server("victoria-metrics", f"http://127.0.0.1:{port}", _spawn("victoria-metrics", argv, log), log)
    _wait_ready(server, "/health")
    return server


def start_vmauth(workdir: Path, bearer_token: str, upstream: str) -> Server:
    """vmauth on a free loopback port, proxying requests that carry ``bearer_token`` to ``upstream``."""
    binary = need("vmauth")
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "auth.yml"
    config.write_text(f'users:\n- bearer_token: "{bearer_token}"\n  url_prefix: "{upstream}"\n')
    port = free_port()
    log = workdir / "vmauth.log"
    argv = [binary, f"-auth.config={config}", f"-httpListenAddr=127.0.0.1:{port}", "-loggerLevel=WARN"]
    server = Server("vmauth", f"http://127.0.0.1:{port}", _spawn("vmauth", argv, log), log)
    _wait_ready(server, "/health")
    return server


def om_to_prometheus_text(om: Path, batch_bytes: int = 32 << 20) -> Iterator[bytes]:
    """OpenMetrics with second timestamps -> Prometheus text with millisecond timestamps (what
    ``/api/v1/import/prometheus`` reads), in batches of whole lines; comments and ``# EOF`` left out."""
    out: list[str] = []
    size = 0
    with om.open("r", encoding="utf-8") as fh:
        for line in fh:
            if not line.strip() or line.startswith("#"):
                continue
            body, _, ts = line.rstrip("\n").rpartition(" ")
            text = f"{body} {round(float(ts) * 1000)}\n"
            out.append(text)
            size += len(text)
            if size >= batch_bytes:
                yield "".join(out).encode()
                out, size = [], 0
    if out:
        yield "".join(out).encode()


def vm_import(server: Server, om: Path, timeout_s: float = 60.0) -> None:
    """Load a metrics file through VictoriaMetrics' import API and make it searchable now: flushed,
    and every series in its index (a search right after the flush may not find them all yet)."""
    series: set[str] = set()
    lo_ms, hi_ms = float("inf"), float("-inf")
    for body in om_to_prometheus_text(om):
        for line in body.decode().splitlines():
            head, _, ts = line.rpartition(" ")
            series.add(head.rpartition(" ")[0])
            lo_ms, hi_ms = min(lo_ms, float(ts)), max(hi_ms, float(ts))
        httpx.post(server.url + "/api/v1/import/prometheus", content=body, timeout=300).raise_for_status()
    httpx.get(server.url + "/internal/force_flush", timeout=60).raise_for_status()
    deadline = time.monotonic() + timeout_s
    span = {"match[]": '{__name__=~".+"}', "start": f"{lo_ms / 1000:.3f}", "end": f"{hi_ms / 1000:.3f}"}
    while series:
        got = httpx.post(server.url + "/api/v1/series", data=span, timeout=60)
        got.raise_for_status()
        if len(got.json()["data"]) >= len(series):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"VictoriaMetrics shows {len(got.json()['data'])} of {len(series)} series")
        time.sleep(0.2)
