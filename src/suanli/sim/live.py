"""The live twin: a simulated scenario folder played into a running ``suanli serve`` as it happens.

The simulator writes a scenario after the fact (metrics.om, traces.otlp.jsonl, truth.json); the
twin replays it on a simulated clock that starts at the wall clock and runs ``speed`` times as
fast. It serves exporter-like ``/metrics`` endpoints on loopback ports, one per exporter of the
scenario (``dcgm/node-001`` for the GPU series of a node, by their ``Hostname``; ``node/node-001:9100``
for node-exporter's, by their ``instance``; ``fabric`` for the rest: switches, latency probes,
storage), each exposing the latest sample of every series at the simulated time, timestamped
(OpenMetrics) on the shifted clock; and it sends the training spans over OTLP/HTTP once the
simulated clock has passed their end; with ``logs_dir`` it appends the kernel and trainer logs to
files there as their time passes (:mod:`suanli.sim.live_logs`), for ``serve``'s ``logs:`` to follow.
Faults come with the scenario (truth.json), shifted the same.

A scrape sees only the latest sample of a series, so ``speed`` x the scrape interval should stay
under the scenario's sample period (15 s): speed 10 with a 1 s scrape interval. ``serve`` runs on
the data's clock (``evaluation.clock: data``), which is the twin's simulated clock.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from suanli.sim.live_logs import LogReplay
from suanli.timefmt import parse_time

__all__ = ["Endpoint", "LiveTwin", "SimClock", "load_endpoints", "load_span_batches"]

_HOST = re.compile(r'Hostname="([^"]+)"')
_INSTANCE = re.compile(r'instance="([^"]+)"')
_SUFFIXES = ("_total", "_bucket", "_count", "_sum", "_created")
OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


@dataclass(frozen=True)
class SimClock:
    """Simulated time ``sim0`` at wall time ``wall0``, running ``speed`` times as fast."""

    sim0: float
    wall0: float
    speed: float

    @property
    def offset(self) -> float:
        """Added to every simulated timestamp: the scenario starts now."""
        return self.wall0 - self.sim0

    def sim_now(self, wall: float | None = None) -> float:
        return self.sim0 + ((time.time() if wall is None else wall) - self.wall0) * self.speed


@dataclass
class Endpoint:
    """One exporter's series: each sample line's series text, value and simulated time, by time."""

    name: str
    instance: str | None
    """The ``instance`` the samples stand for (node-exporter's ``node-001:9100``), if any."""
    families: dict[str, list[str]] = field(default_factory=dict)
    series: list[str] = field(default_factory=list)
    values: list[str] = field(default_factory=list)
    times: np.ndarray = field(default_factory=lambda: np.empty(0))
    family_of: list[str] = field(default_factory=list)
    _next: int = 0
    _latest: dict[str, tuple[str, float, str]] = field(default_factory=dict)

    def advance(self, sim_now: float) -> None:
        """Take in every sample up to ``sim_now``."""
        stop = int(np.searchsorted(self.times, sim_now, side="right"))
        for i in range(self._next, stop):
            self._latest[self.series[i]] = (self.values[i], float(self.times[i]), self.family_of[i])
        self._next = max(self._next, stop)

    def exposition(self, offset: float) -> str:
        """The latest sample of every series, timestamped on the shifted clock, family by family."""
        by_family: dict[str, list[str]] = {}
        for text, (value, ts, fam) in self._latest.items():
            by_family.setdefault(fam, []).append(f"{text} {value} {ts + offset:.3f}")
        lines = [line for fam in self.families if fam in by_family for line in (*self.families[fam], *by_family[fam])]
        return "\n".join([*lines, "# EOF", ""])


def _family(metric: str, families: dict[str, list[str]]) -> str:
    if metric in families:
        return metric
    for suffix in _SUFFIXES:
        if metric.endswith(suffix) and metric[: -len(suffix)] in families:
            return metric[: -len(suffix)]
    return metric


def _group(series: str) -> tuple[str, str | None]:
    host = _HOST.search(series)
    if host:
        return f"dcgm/{host.group(1)}", None
    inst = _INSTANCE.search(series)
    if inst:
        return f"node/{inst.group(1)}", inst.group(1)
    return "fabric", None


def load_endpoints(metrics: Path) -> list[Endpoint]:
    """The scenario's OpenMetrics file split into exporter endpoints."""
    families: dict[str, list[str]] = {}
    rows: dict[str, list[tuple[float, str, str, str]]] = {}
    instances: dict[str, str | None] = {}
    with metrics.open(encoding="utf-8") as fh:
        for line in fh:
            line = line.rstrip("\n")
            if line.startswith("#"):
                parts = line.split(" ", 3)
                if len(parts) >= 3 and parts[1] in ("TYPE", "HELP", "UNIT"):
                    families.setdefault(parts[2], []).append(line)
                continue
            text, value, ts = line.rsplit(" ", 2)
            name, inst = _group(text)
            instances[name] = inst
            metric = text.split("{", 1)[0]
            rows.setdefault(name, []).append((float(ts), text, value, _family(metric, families)))
    out = []
    for name, items in sorted(rows.items()):
        items.sort(key=lambda r: r[0])
        fams = {f: families.get(f, []) for f in dict.fromkeys(r[3] for r in items)}
        out.append(Endpoint(name, instances[name], fams, [r[1] for r in items], [r[2] for r in items],
                            np.array([r[0] for r in items]), [r[3] for r in items]))
    return out


def _split(req: dict[str, Any], offset_ns: int, bucket_s: float) -> dict[int, dict[str, Any]]:
    """One OTLP request's spans, shifted, as requests per ``bucket_s`` of their end time."""
    out: dict[int, dict[str, Any]] = {}
    for rs in req.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            parts: dict[int, list[dict[str, Any]]] = {}
            for sp in ss.get("spans", []):
                end = int(sp["endTimeUnixNano"])
                parts.setdefault(int(end / 1e9 // bucket_s), []).append(
                    {**sp, "startTimeUnixNano": str(int(sp["startTimeUnixNano"]) + offset_ns),
                     "endTimeUnixNano": str(end + offset_ns)})
            for b, spans in parts.items():
                scope = {k: v for k, v in ss.items() if k != "spans"}
                out.setdefault(b, {"resourceSpans": []})["resourceSpans"].append(
                    {"resource": rs.get("resource", {}), "scopeSpans": [{**scope, "spans": spans}]})
    return out


def load_span_batches(traces: Path, offset_s: float, bucket_s: float = 15.0) -> list[tuple[float, bytes]]:
    """The scenario's spans, shifted, as OTLP JSON requests per ``bucket_s`` of end time, each with
    the simulated time it may be sent at (its bucket's end), in that order."""
    merged: dict[int, dict[str, Any]] = {}
    with traces.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                for b, part in _split(json.loads(line), round(offset_s * 1e9), bucket_s).items():
                    merged.setdefault(b, {"resourceSpans": []})["resourceSpans"].extend(part["resourceSpans"])
    return [(_last_end(merged[b]) - offset_s, json.dumps(merged[b]).encode()) for b in sorted(merged)]


def _last_end(req: dict[str, Any]) -> float:
    return max(int(sp["endTimeUnixNano"]) for rs in req["resourceSpans"] for ss in rs["scopeSpans"]
               for sp in ss["spans"]) / 1e9


class _Handler(BaseHTTPRequestHandler):
    endpoint: Endpoint
    offset: float

    def do_GET(self) -> None:
        body = self.endpoint.exposition(self.offset).encode()
        self.send_response(200)
        self.send_header("Content-Type", OPENMETRICS)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


class LiveTwin:
    """Plays ``folder`` (a scenario) on ``clock``: its endpoints' servers and a ticking thread that
    takes in samples and sends spans to ``otlp_url`` with ``token``."""

    def __init__(self, folder: Path, speed: float = 10.0, *, otlp_url: str, token: str | None,
                 tick_s: float = 0.25, logs_dir: Path | None = None) -> None:
        truth = json.loads((folder / "truth.json").read_text())
        self.folder, self.truth = folder, truth
        self.clock = SimClock(parse_time(truth["window"]["start"]), time.time(), speed)
        self.end_sim = parse_time(truth["window"]["end"])
        self.endpoints = load_endpoints(folder / "metrics.om")
        self.spans = load_span_batches(folder / "traces.otlp.jsonl", self.clock.offset)
        self.otlp_url, self.tick_s = otlp_url, tick_s
        self.logs = LogReplay(folder, logs_dir, self.clock.offset) if logs_dir is not None else None
        """The kernel and trainer logs, appended to files in ``logs_dir`` as their time passes."""
        self.headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
        self.sent = self.refused = self.failed = 0
        self._servers: list[ThreadingHTTPServer] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def serve_endpoints(self) -> list[tuple[Endpoint, int]]:
        """Start one loopback HTTP server per endpoint; (endpoint, port) of each."""
        out = []
        for ep in self.endpoints:
            handler = type("Handler", (_Handler,), {"endpoint": ep, "offset": self.clock.offset})
            srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
            threading.Thread(target=srv.serve_forever, name=f"twin-{ep.name}", daemon=True).start()
            self._servers.append(srv)
            out.append((ep, int(srv.server_address[1])))
        return out

    def scrape_config(self, ports: list[tuple[Endpoint, int]], interval: str = "1s") -> list[dict[str, Any]]:
        """``scrape:`` entries of a serve config for the endpoints (one job per exporter kind)."""
        jobs = []
        for ep, port in ports:
            kind = ep.name.split("/", 1)[0]
            job: dict[str, Any] = {"job": kind, "targets": [f"127.0.0.1:{port}"], "interval": interval,
                                   "timeout": interval}
            if ep.instance is not None:
                job["labels"] = {"instance": ep.instance}
            jobs.append(job)
        return jobs

    def faults(self) -> Iterator[dict[str, Any]]:
        yield from self.truth.get("faults", [])

    @property
    def done(self) -> bool:
        """The simulated clock passed the scenario's end and every span was sent."""
        return self.clock.sim_now() >= self.end_sim and not self.spans and (self.logs is None or self.logs.done(self.end_sim))

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="twin-clock", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with httpx.Client(timeout=30) as client:
            while not self._stop.is_set():
                now = self.clock.sim_now()
                for ep in self.endpoints:
                    ep.advance(min(now, self.end_sim))
                if self.logs is not None:
                    self.logs.advance(now)
                while self.spans and self.spans[0][0] <= now and not self._stop.is_set():
                    if not self._send(client, self.spans[0][1]):
                        break
                    self.spans.pop(0)
                self._stop.wait(self.tick_s)

    def _send(self, client: httpx.Client, body: bytes) -> bool:
        try:
            r = client.post(self.otlp_url, content=body, headers=self.headers)
        except httpx.HTTPError:
            return False
        if r.status_code in (429, 503):          # the receiver is busy: the same batch again next tick
            self.refused += 1
            return False
        if r.status_code == 200:
            self.sent += 1
        else:
            self.failed += 1
        return True

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)
        for srv in self._servers:
            srv.shutdown()
            srv.server_close()
