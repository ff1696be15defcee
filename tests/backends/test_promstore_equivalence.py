"""PromStore over a real Prometheus 2.42 (backfilled by promtool) and a real VictoriaMetrics 1.79
(loaded through its import API) against suanli's DuckDB store loaded from the same scenario folder.

Where a TSDB necessarily holds other samples than DuckDB (tests/backends/om_expect.py: Prometheus
drops out-of-order lines, VictoriaMetrics drops NaN values) the expected samples are worked out
from the file's lines, and those series are left out of the DuckDB comparison of increases/rates.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from suanli.ingest.records import SeriesKey
from suanli.inventory import load_inventory
from suanli.pipeline import diagnose
from suanli.report import diagnosis_json
from suanli.store.duck import DuckStore
from suanli.store.promql import PromConfig, PromStore
from tests.backends.conftest import scenario_path, secondary_for
from tests.backends.om_expect import dropped, expected_samples
from tests.backends.servers import Server

SCENARIOS = ("switch_port_errors", "pcie_riser")
BACKENDS = ("prometheus", "victoriametrics")
COUNTERS = ("node_infiniband_port_data_transmitted_bytes_total", "node_infiniband_port_errors_received_total",
            "suanli_switch_port_crc_errors_total", "suanli_switch_port_packets_total",
            "suanli_rdma_retransmits_total", "suanli_pcie_aer_errors_total", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
            "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL")

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _store(server: Server, duck: DuckStore, inv: object, scenario: str, **cfg: object) -> PromStore:
    lo, hi = duck.time_range() or (0.0, 0.0)
    return PromStore(PromConfig(server.url, **cfg), inv, window=(lo - 600, hi + 600),  # type: ignore[arg-type]
                     secondary=secondary_for(scenario))


def _sid(key: SeriesKey) -> tuple[str, tuple[tuple[str, str], ...]]:
    return key.metric, key.labels


@pytest.fixture(scope="module", params=[(b, s) for s in SCENARIOS for b in BACKENDS], ids=lambda p: f"{p[0]}-{p[1]}")
def pair(request: pytest.FixtureRequest, backend_for: Callable[[str, str], Server],
         duck_for: Callable[[str], tuple[DuckStore, object]]) -> Iterator[tuple[str, str, PromStore, DuckStore]]:
    kind, scenario = request.param
    duck, inv = duck_for(scenario)
    store = _store(backend_for(kind, scenario), duck, inv, scenario)
    yield kind, scenario, store, duck
    store.close()


def test_same_series_keys_metrics_and_time_range(pair: tuple[str, str, PromStore, DuckStore]) -> None:
    kind, _, prom, duck = pair
    assert prom.client.flavor() == kind
    assert prom.metrics() == duck.metrics()
    assert set(prom.series_keys()) == set(duck.series_keys())
    assert set(prom.unresolved_series()) == set(duck.unresolved_series())
    assert prom.time_range() == duck.time_range()          # to the ms, from 2 x ~4 query_range calls
    assert prom.query_stats.by_endpoint["query_range"] <= 10


def test_raw_samples_are_what_the_tsdb_holds(pair: tuple[str, str, PromStore, DuckStore]) -> None:
    kind, scenario, prom, duck = pair
    expect = expected_samples(scenario_path(scenario) / "metrics.om", kind)
    lost = dropped(scenario_path(scenario) / "metrics.om", kind)
    assert lost, "each public scenario has out-of-order lines and NaN values"
    checked = 0
    for metric in duck.metrics():
        got = {_sid(s.key): s for s in prom.series(metric)}
        for ds in duck.series(metric):
            sid = _sid(ds.key)
            ps = got.pop(sid)
            want = expect[sid]
            assert ps.ts.tolist() == sorted(want), sid
            np.testing.assert_array_equal(ps.values, [want[t] for t in sorted(want)])
            if sid not in lost:                       # everything else is DuckDB's series exactly
                assert ps.ts.tolist() == ds.ts.tolist()
                np.testing.assert_array_equal(ps.values, ds.values)
            checked += 1
        assert not got, f"{metric}: series DuckDB does not have: {list(got)[:3]}"
    assert checked == len(duck.series_keys())


def test_increase_and_rate_match_duck(pair: tuple[str, str, PromStore, DuckStore]) -> None:
    kind, scenario, prom, duck = pair
    lost = dropped(scenario_path(scenario) / "metrics.om", kind)
    lo, hi = duck.time_range() or (0.0, 0.0)
    windows = [(None, None), (lo + 300.0, hi - 200.0)]
    for metric in COUNTERS:
        for start, end in windows:
            before = prom.query_stats.samples
            want = duck.increase(metric, start=start, end=end)
            got = prom.increase(metric, start=start, end=end)
            assert set(got) == set(want), metric
            for key, value in want.items():
                if _sid(key) not in lost:
                    assert math.isclose(got[key], value, rel_tol=1e-12, abs_tol=1e-9), (metric, key)
            pulled = prom.query_stats.samples - before
            # pushed down: raw samples only for the series with a reset, NaN or DCGM blank in range
            assert pulled < 0.5 * sum(len(s.ts) for s in duck.series(metric, start=start, end=end)), metric
            want_r = {s.key: s for s in duck.rate(metric, start=start, end=end)}
            got_r = {s.key: s for s in prom.rate(metric, start=start, end=end)}
            assert set(got_r) == set(want_r)
            for key, s in want_r.items():
                if _sid(key) not in lost:
                    np.testing.assert_array_equal(got_r[key].ts, s.ts)
                    np.testing.assert_allclose(got_r[key].values, s.values, rtol=1e-12, equal_nan=True)


def test_entity_selection_pulls_only_that_entity(pair: tuple[str, str, PromStore, DuckStore]) -> None:
    _, _, prom, duck = pair
    metric = "DCGM_FI_DEV_GPU_TEMP"
    gpu = sorted({k.entity_id for k in duck.series_keys(metric) if k.entity_id})[3]
    before = prom.query_stats.samples
    got = prom.series(metric, [gpu])
    want = duck.series(metric, [gpu])
    assert [s.key for s in got] == [s.key for s in want] and len(got) == 1
    assert prom.query_stats.samples - before <= len(want[0].ts) + 1         # the selector picked one series
    assert prom.series(metric, ["no-such-gpu"]) == []
    assert prom.series(metric, start=1e9, end=1e9 + 1) == []


def test_diagnose_gives_the_same_incidents_and_ledger(pair: tuple[str, str, PromStore, DuckStore]) -> None:
    _, scenario, prom, duck = pair
    inv = load_inventory(scenario_path(scenario) / "inventory.yaml")
    want = diagnose(duck, inv)
    got = diagnose(prom, inv)
    assert got.analysis_errors == want.analysis_errors == []
    assert [(i.category, i.root_id) for i in got.incidents] == [(i.category, i.root_id) for i in want.incidents]
    assert want.incidents, "both public scenarios have a fault"
    got_jobs, want_jobs = diagnosis_json(got)["efficiency"]["jobs"], diagnosis_json(want)["efficiency"]["jobs"]
    for gj, wj in zip(got_jobs, want_jobs, strict=True):
        assert gj["id"] == wj["id"]
        for field in ("mfu", "goodput"):
            assert abs(gj[field] - wj[field]) <= 0.005, (field, gj[field], wj[field])
        for part, share in wj["time_split"].items():
            assert abs(gj["time_split"][part] - share) <= 0.005, part
