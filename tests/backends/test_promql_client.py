"""PromStore's limits, credentials and errors against real servers: queries split to max_samples and
points per series (and halved when the server itself refuses), basic auth on VictoriaMetrics,
bearer tokens through vmauth, and one-line InputErrors naming the URL and the query."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

from suanli.errors import InputError
from suanli.store.duck import DuckStore
from suanli.store.promql import PromClient, PromConfig, PromStore
from tests.backends.fault_proxy import CUT, fault_proxy
from tests.backends.servers import (
    Server,
    backfill_prometheus,
    free_port,
    start_prometheus,
    start_victoria_metrics,
    start_vmauth,
    vm_import,
)
from tests.conftest import ran_external, shared_path

pytestmark = pytest.mark.integration
SCENARIO = "switch_port_errors"
METRICS = ("DCGM_FI_DEV_GPU_TEMP", "suanli_switch_port_crc_errors_total")


class Recording(httpx.HTTPTransport):
    """The real transport, keeping each answer's JSON to check what one query returned."""

    def __init__(self) -> None:
        super().__init__()
        self.answers: list[tuple[str, dict[str, str], dict[str, object]]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        resp = super().handle_request(request)
        body = resp.read()
        form = dict(httpx.QueryParams(request.content.decode())) if request.content else {}
        self.answers.append((request.url.path, form, json.loads(body)))
        headers = {k: v for k, v in resp.headers.items() if k.lower() not in ("content-encoding", "content-length")}
        return httpx.Response(resp.status_code, headers=headers, content=body, request=request)


def _window(duck: DuckStore) -> tuple[float, float]:
    lo, hi = duck.time_range() or (0.0, 0.0)
    return lo - 60, hi + 60


def _same(a: PromStore, b: PromStore) -> None:
    for metric in METRICS:
        got, want = a.series(metric), b.series(metric)
        assert [s.key for s in got] == [s.key for s in want] and got
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g.ts, w.ts)
            np.testing.assert_array_equal(g.values, w.values)
        assert a.increase(metric) == b.increase(metric)


def test_queries_split_to_the_configured_limits(prometheus_for: Callable[[str], Server],
                                                duck_for: Callable[[str], tuple[DuckStore, object]]) -> None:
    duck, inv = duck_for(SCENARIO)
    url = prometheus_for(SCENARIO).url
    rec = Recording()
    cfg = PromConfig(url, max_samples=400, max_points_per_series=7, max_series_per_query=5)
    small = PromStore(cfg, inv, window=_window(duck), client=PromClient(cfg, transport=rec))
    plain = PromStore(PromConfig(url), inv, window=_window(duck))
    _same(small, plain)
    raw = [(form, ans) for path, form, ans in rec.answers
           if path.endswith("/query") and ans.get("status") == "success"
           and ans["data"]["resultType"] == "matrix"]   # type: ignore[index]
    assert raw
    for _, ans in raw:
        result = ans["data"]["result"]                                   # type: ignore[index]
        assert len(result) <= 5
        assert all(len(s["values"]) <= 7 for s in result)
        assert sum(len(s["values"]) for s in result) <= 400
    # 64 GPU series of ~60 samples: at least 64/5 batches x 60/7 time chunks of raw queries
    assert len(raw) >= (64 // 5) * (59 // 7)
    assert plain.query_stats.queries < small.query_stats.queries / 10
    small.close()
    plain.close()


@pytest.fixture(scope="module")
def stingy_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A Prometheus whose own --query.max-samples (500) is far below what PromStore plans for."""
    work = tmp_path_factory.mktemp("prom-stingy")
    backfill_prometheus(shared_path("scenarios", SCENARIO, "metrics.om"), work / "data")
    server = start_prometheus(work, work / "data", extra_args=("--query.max-samples=500",))
    yield server
    server.stop()


def test_a_query_the_server_refuses_is_halved(stingy_prometheus: Server, prometheus_for: Callable[[str], Server],
                                              duck_for: Callable[[str], tuple[DuckStore, object]]) -> None:
    duck, inv = duck_for(SCENARIO)
    stingy = PromStore(PromConfig(stingy_prometheus.url), inv, window=_window(duck))
    plain = PromStore(PromConfig(prometheus_for(SCENARIO).url), inv, window=_window(duck))
    _same(stingy, plain)
    assert stingy.time_range() == plain.time_range() is not None
    assert stingy.query_stats.queries > 3 * plain.query_stats.queries
    stingy.close()
    plain.close()


@pytest.fixture(scope="module")
def locked_vm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Server]]:
    """VictoriaMetrics with basic auth, and vmauth checking a bearer token in front of another one."""
    work = tmp_path_factory.mktemp("vm-locked")
    vm = start_victoria_metrics(work / "vm", extra_args=("-httpAuth.username=suanli", "-httpAuth.password=s3cret"))
    behind = start_victoria_metrics(work / "behind")
    token = start_vmauth(work / "auth", "t0ken", behind.url)
    yield vm, token
    for server in (token, behind, vm):
        server.stop()


def test_basic_auth_and_bearer_token(locked_vm: tuple[Server, Server]) -> None:
    vm, proxy = locked_vm
    lines = b'suanli_auth_test{job="a"} 1 1773106425000\nsuanli_auth_test{job="a"} 3 1773106440000\n'
    for url, kw in ((vm.url, {"auth": ("suanli", "s3cret")}), (proxy.url, {"headers": {"Authorization": "Bearer t0ken"}})):
        httpx.post(url + "/api/v1/import/prometheus", content=lines, **kw).raise_for_status()  # type: ignore[arg-type]
        httpx.get(url + "/internal/force_flush", **kw).raise_for_status()  # type: ignore[arg-type]
    window = (1773106000.0, 1773107000.0)
    for cfg in (PromConfig(vm.url, username="suanli", password="s3cret"), PromConfig(proxy.url, bearer_token="t0ken")):
        store = PromStore(cfg, None, window=window)
        (s,) = store.series("suanli_auth_test")
        assert s.ts.tolist() == [1773106425.0, 1773106440.0] and s.values.tolist() == [1.0, 3.0]
        assert list(store.increase("suanli_auth_test").values()) == [2.0]
        store.close()
    for cfg in (PromConfig(vm.url, username="suanli", password="wrong"), PromConfig(proxy.url, bearer_token="nope")):
        store = PromStore(cfg, None, window=window)
        with pytest.raises(InputError) as err:
            store.metrics()
        assert cfg.url in str(err.value) and "query:" in str(err.value) and "\n" not in str(err.value)
        store.close()


def test_unreachable_server_and_bad_query_name_the_url_and_query(empty_vm: Server) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    store = PromStore(PromConfig(url, retries=0), None, window=(0.0, 10.0))
    with pytest.raises(InputError, match=r"ConnectError") as err:
        store.series("DCGM_FI_DEV_GPU_TEMP")
    assert str(err.value).startswith(url + "/api/v1/") and "query:" in str(err.value)
    bad = PromStore(PromConfig(empty_vm.url, metric_regex="(unclosed"), None, window=(0.0, 10.0))
    with pytest.raises(InputError) as err:
        bad.metrics()
    assert str(err.value).startswith(empty_vm.url + "/api/v1/label/__name__/values: ") and "(unclosed" in str(err.value)


def test_a_server_that_never_answers_times_out(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)                     # accepts connections into the backlog, never replies
        ran_external("a loopback listener that never answers")
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        store = PromStore(PromConfig(url, timeout_s=0.5, retries=0, flavor="prometheus"), None, window=(0.0, 10.0))
        with pytest.raises(InputError, match="ReadTimeout") as err:
            store.metrics()
        assert url in str(err.value)
        store.close()


def test_vm_import_fixture_roundtrip(tmp_path: Path) -> None:
    """The VictoriaMetrics fixture's loader keeps every non-NaN line of a metrics file."""
    om = tmp_path / "m.om"
    om.write_text('# TYPE x gauge\nx{a="1"} 1.5 1773106425.082\nx{a="1"} NaN 1773106440.082\nx{a="2"} 2 1773106425.5\n# EOF\n')
    vm = start_victoria_metrics(tmp_path / "vm")
    try:
        vm_import(vm, om)
        store = PromStore(PromConfig(vm.url), None, window=(1773106000.0, 1773107000.0))
        got = {s.key.labels: (s.ts.tolist(), s.values.tolist()) for s in store.series("x")}
        assert got == {(("a", "1"),): ([1773106425.082], [1.5]), (("a", "2"),): ([1773106425.5], [2.0])}
        store.close()
    finally:
        vm.stop()


def test_long_selectors_are_split_to_the_query_length_limit(tmp_path: Path,
                                                            duck_for: Callable[[str], tuple[DuckStore, object]]
                                                            ) -> None:
    """VictoriaMetrics refuses a query longer than -search.maxQueryLen: 40 GPUs' UUIDs make a
    1,640-character alternation, so a server allowing 1,000 needs the selector cut in batches."""
    duck, inv = duck_for(SCENARIO)
    vm = start_victoria_metrics(tmp_path / "vm", extra_args=("-search.maxQueryLen=1000",))
    try:
        vm_import(vm, shared_path("scenarios", SCENARIO, "metrics.om"))
        gpus = sorted({k.entity_id for k in duck.series_keys("DCGM_FI_DEV_POWER_USAGE") if k.entity_id})[:40]
        want = {s.key: s.values.tolist() for s in duck.series("DCGM_FI_DEV_POWER_USAGE", gpus)}
        loose = PromStore(PromConfig(vm.url, max_query_chars=100_000), inv, window=_window(duck))
        with pytest.raises(InputError, match="maxQueryLen"):
            loose.series("DCGM_FI_DEV_POWER_USAGE", gpus)
        tight = PromStore(PromConfig(vm.url, max_query_chars=600), inv, window=_window(duck))
        got = {s.key: s.values.tolist() for s in tight.series("DCGM_FI_DEV_POWER_USAGE", gpus)}
        assert len(got) == 40
        for key, values in want.items():       # NaN samples are not in VictoriaMetrics (om_expect.py)
            assert got[key] == [v for v in values if v == v]
        inc = tight.increase("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", gpus)
        assert inc == duck.increase("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", gpus) and len(inc) == 40
        loose.close()
        tight.close()
    finally:
        vm.stop()


def test_an_answer_a_proxy_cut_short_is_retried(prometheus_for: Callable[[str], Server]) -> None:
    """A 200 whose JSON ends early (a proxy cut it) is asked again, as a dropped connection is;
    without retries it is one line naming the URL."""
    server = prometheus_for("switch_port_errors")
    match, lo, hi = '{__name__="suanli_switch_port_crc_errors_total"}', 1773106425000, 1773107312000
    want = PromClient(PromConfig(server.url, flavor="prometheus")).series(match, lo, hi)
    assert len(want) == 64          # inventory.yaml: 2 leaves of 16 NIC ports and 8 uplinks, 2 spines of 8
    with fault_proxy(server.url, [CUT]) as (url, state):
        assert PromClient(PromConfig(url, flavor="prometheus")).series(match, lo, hi) == want
        assert [status for _, _, status in state.seen] == [200, 200]
    with fault_proxy(server.url, [CUT]) as (url, _), pytest.raises(InputError) as err:
        PromClient(PromConfig(url, flavor="prometheus", retries=0)).series(match, lo, hi)
    assert str(err.value).startswith(f"{url}/api/v1/series: HTTP 200: ") and "\n" not in str(err.value)
