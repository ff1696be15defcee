"""The live scraper against real HTTP servers: prometheus_client's own exposition, captured
dcgm-exporter text, and endpoints that fail in the ways real ones do."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Callable, Iterator
from typing import ClassVar

import httpx
import numpy as np
import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from suanli.ingest.records import IngestReport
from suanli.ingest.scrape import Scraper, ScrapeResult, ScrapeTarget, TargetScraper
from suanli.inventory import load_inventory
from tests.conftest import shared_path

NOW = 1_773_000_000.0            # 2026-03-08T20:00:00Z, the injected scrape clock


def _clock() -> float:
    return NOW


def _by_metric(result: ScrapeResult) -> dict[str, list[tuple[dict[str, str], float, float, str | None]]]:
    out: dict[str, list[tuple[dict[str, str], float, float, str | None]]] = {}
    for key, ts, values in result.batches:
        for t, v in zip(ts, values, strict=True):
            out.setdefault(key.metric, []).append((dict(key.labels), float(t), float(v), key.entity_id))
    return out


class _Handler(http.server.BaseHTTPRequestHandler):
    routes: ClassVar[dict[str, Callable[[], tuple[int, str, bytes]]]] = {}

    def do_GET(self) -> None:
        status, ctype, body = self.routes[self.path]()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, dict[str, Callable[[], tuple[int, str, bytes]]]]]:
    routes: ClassVar[dict[str, Callable[[], tuple[int, str, bytes]]]] = {}
    handler = type("H", (_Handler,), {"routes": routes})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{srv.server_address[1]}", routes
    srv.shutdown()
    srv.server_close()


def _target(instance: str, path: str = "/metrics", **kw: object) -> ScrapeTarget:
    return ScrapeTarget(job=str(kw.pop("job", "dcgm")), instance=instance, url=f"http://{instance}{path}",
                        **kw)  # type: ignore[arg-type]


def test_prometheus_client_exposition_is_scraped_and_resolved() -> None:
    inv = load_inventory(shared_path("scenarios", "switch_port_errors", "inventory.yaml"))
    reg = CollectorRegistry()
    temp = Gauge("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", ["gpu", "UUID", "Hostname"], registry=reg)
    temp.labels("2", "GPU-cb07f609-9efa-9431-b7fb-999a1aa4de08", "node-001").set(71.5)
    temp.labels("9", "GPU-unknown", "nowhere").set(40.0)
    errs = Counter("node_infiniband_port_errors_received", "errors", ["device", "port", "instance"], registry=reg)
    errs.labels("mlx5_0", "1", "exposed:1").inc(7)
    srv, _thread = start_http_server(0, addr="127.0.0.1", registry=reg)
    try:
        port = srv.server_port
        target = _target(f"127.0.0.1:{port}", job="mixed", labels=(("cluster", "demo-a"), ("instance", "node-001:9100")))
        result = TargetScraper(target, inv.resolver, clock=_clock).scrape(httpx.Client())
    finally:
        srv.shutdown()
        srv.server_close()
    got = _by_metric(result)
    assert result.health.up and result.health.last_error is None
    # prometheus_client answers the OpenMetrics Accept header with OpenMetrics: no timestamps,
    # so every sample carries the scrape's time.
    temps = sorted(got["DCGM_FI_DEV_GPU_TEMP"], key=lambda r: r[2])
    assert [(v, t, e) for _, t, v, e in temps] == [(40.0, NOW, None), (71.5, NOW, "node-001/gpu2")]
    assert temps[1][0]["job"] == "mixed" and temps[1][0]["cluster"] == "demo-a"
    assert temps[1][0]["instance"] == "node-001:9100"
    (labels, _ts, value, entity), = got["node_infiniband_port_errors_received_total"]
    assert value == 7.0 and entity == "node-001/mlx5_0"
    assert labels["exported_instance"] == "exposed:1"             # honor_labels: false
    assert "node_infiniband_port_errors_received_created" not in got   # a creation time, not a sample
    assert result.report.loaded["created"] == 1
    # up, scrape_samples_scraped: 3 samples were registered above (2 gauges, 1 counter)
    assert got["up"][0][2] == 1.0 and got["up"][0][3] == "node-001"
    assert got["scrape_samples_scraped"][0][2] == 3.0
    assert result.health.samples == 3
    assert 0 < got["scrape_duration_seconds"][0][2] < 5


def test_captured_dcgm_exporter_text(server: tuple[str, dict[str, Callable[[], tuple[int, str, bytes]]]]) -> None:
    path = shared_path("realdata", "dcgm", "issue250-v100x4-excerpt.prom")
    text = path.read_bytes()
    sample_lines = [ln for ln in text.decode().splitlines() if ln.strip() and not ln.startswith("#")]
    instance, routes = server
    routes["/metrics"] = lambda: (200, "text/plain; version=0.0.4; charset=utf-8", text)
    result = TargetScraper(_target(instance), clock=_clock).scrape(httpx.Client())
    got = _by_metric(result)
    assert result.health.samples == len(sample_lines) == 9
    assert result.report.rejected == 0
    clocks = {r[0]["gpu"]: r[2] for r in got["DCGM_FI_DEV_SM_CLOCK"]}
    assert clocks == {"0": 135.0, "1": 135.0}
    assert {r[1] for rows in got.values() for r in rows} == {NOW}
    assert got["DCGM_FI_DEV_SM_CLOCK"][0][0]["Hostname"] == "r6i3n0"


def test_timed_samples_keep_their_time_and_bad_lines_are_rejected(
        server: tuple[str, dict[str, Callable[[], tuple[int, str, bytes]]]]) -> None:
    instance, routes = server
    body = (b"# TYPE a gauge\na 1 1773000000500\na{x=\"1\" 2\nb 2\n"
            b"c{bad-label=\"1\"} 3\n")
    routes["/metrics"] = lambda: (200, "text/plain; version=0.0.4", body)
    result = TargetScraper(_target(instance), clock=_clock).scrape(httpx.Client())
    got = _by_metric(result)
    assert got["a"][0][1:3] == (1_773_000_000.5, 1.0)    # Prometheus text: milliseconds
    assert got["b"][0][1:3] == (NOW, 2.0)
    assert result.report.rejected == 2 and result.health.rejected == 2
    assert result.report.reasons[0].startswith(f"dcgm/{instance}:3: ")
    assert result.health.up                                # the target answered: up, with rejects


def test_failures_make_the_target_down(server: tuple[str, dict[str, Callable[[], tuple[int, str, bytes]]]]) -> None:
    instance, routes = server

    def slow() -> tuple[int, str, bytes]:
        time.sleep(1.5)
        return 200, "text/plain", b"a 1\n"

    routes["/500"] = lambda: (500, "text/plain", b"boom")
    routes["/slow"] = slow
    routes["/big"] = lambda: (200, "text/plain", b"a 1\n" * 5000)
    client = httpx.Client()
    cases = {
        "/500": ("HTTP 500", {}),
        "/slow": ("timeout after 0.3s", {"timeout_s": 0.3}),
        "/big": ("body over 1000 bytes", {"max_body_bytes": 1000}),
    }
    for path, (error, kw) in cases.items():
        res = TargetScraper(_target(instance, path, **kw), clock=_clock).scrape(client)
        assert not res.health.up and res.health.last_error is not None and error in res.health.last_error, path
        assert _by_metric(res)["up"][0][2] == 0.0
        assert res.samples == 3                    # only up, scrape_duration_seconds, scrape_samples_scraped
    refused = TargetScraper(_target("127.0.0.1:9"), clock=_clock).scrape(client)
    assert not refused.health.up and refused.health.failures == 1


def test_scraper_runs_targets_on_their_interval_and_survives_its_callback(
        server: tuple[str, dict[str, Callable[[], tuple[int, str, bytes]]]]) -> None:
    instance, routes = server
    count = {"n": 0}

    def page() -> tuple[int, str, bytes]:
        count["n"] += 1
        return 200, "text/plain", f"hits {count['n']}\n".encode()

    routes["/metrics"] = page
    seen: list[ScrapeResult] = []

    def deliver(res: ScrapeResult) -> None:
        seen.append(res)
        if len(seen) == 2:
            raise RuntimeError("a consumer bug")

    scraper = Scraper([_target(instance, interval_s=0.2, timeout_s=0.2),
                       _target("127.0.0.1:9", job="down", interval_s=0.2, timeout_s=0.2)], deliver)
    scraper.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and sum(r.target.job == "dcgm" for r in seen) < 4:
        time.sleep(0.05)
    scraper.stop()
    ups = [r for r in seen if r.target.job == "dcgm"]
    assert len(ups) >= 4 and all(r.health.up for r in ups)
    hits = [float(v[0]) for r in ups for k, _, v in r.batches if k.metric == "hits"]
    assert hits == sorted(hits) and len(set(hits)) == len(hits)       # each scrape fetched anew
    health = scraper.health()
    assert sum(h.deliver_errors for h in health.values()) == 1
    assert not health["down/127.0.0.1:9"].up and health["down/127.0.0.1:9"].failures >= 1


def test_series_cache_is_kept_across_scrapes() -> None:
    t = TargetScraper(_target("127.0.0.1:1"), clock=_clock)
    body = "".join(f'DCGM_FI_DEV_GPU_UTIL{{gpu="{i}",Hostname="n"}} {i}\n' for i in range(50))
    first = t.parse(body, "text/plain", NOW, IngestReport())
    second = t.parse(body, "text/plain", NOW + 15, IngestReport())
    assert [k for k, _, _ in first] == [k for k, _, _ in second]
    assert all(a is b for (a, _, _), (b, _, _) in zip(first, second, strict=True))   # merged once, reused
    assert np.concatenate([v for _, _, v in second]).tolist() == [float(i) for i in range(50)]
    assert {float(ts[0]) for _, ts, _ in second} == {NOW + 15}



def test_dcgm_blank_sentinels_become_nan_for_dcgm_only() -> None:
    # DCGM_FP64_BLANK = 2**47 = 140737488355328; DCGM_INT32_BLANK = 0x7ffffff0 = 2147483632
    body = ('DCGM_FI_DEV_GPU_TEMP{gpu="0"} 140737488355328\n'
            'DCGM_FI_DEV_XID_ERRORS{gpu="0"} 2147483632\n'
            'DCGM_FI_DEV_POWER_USAGE{gpu="0"} 312.5\n'
            'node_network_receive_bytes_total{device="eth0"} 140737488355328\n')
    out = TargetScraper(_target("127.0.0.1:1"), clock=_clock).parse(body, "text/plain", NOW, IngestReport())
    got = {k.metric: float(v[0]) for k, _, v in out}
    assert np.isnan(got["DCGM_FI_DEV_GPU_TEMP"]) and np.isnan(got["DCGM_FI_DEV_XID_ERRORS"])
    assert got["DCGM_FI_DEV_POWER_USAGE"] == 312.5
    assert got["node_network_receive_bytes_total"] == 140737488355328.0


def test_a_reloaded_inventory_applies_from_the_next_scrape() -> None:
    inv = load_inventory(shared_path("scenarios", "switch_port_errors", "inventory.yaml"))
    t = TargetScraper(_target("127.0.0.1:1", labels=(("instance", "node-002:9400"),)), clock=_clock)
    body = 'DCGM_FI_DEV_GPU_UTIL{gpu="5",Hostname="node-002"} 97\n'
    (before, _, _), = t.parse(body, "text/plain", NOW, IngestReport())
    t.set_resolver(inv.resolver)
    (after, _, _), = t.parse(body, "text/plain", NOW + 15, IngestReport())
    assert (before.entity_id, after.entity_id) == (None, "node-002/gpu5")
    assert t._synthetic["up"].entity_id == "node-002"
