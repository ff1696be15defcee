"""Hardware findings on synthetic fleets built in a real DuckStore: each category at the right GPU,
the disambiguations the incident layer relies on, and a noisy healthy fleet with no finding."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from suanli.analysis.health import HealthConfig, analyze
from suanli.analysis.health import events as hw
from suanli.analysis.health.overrides import load_overrides, record_override
from suanli.ingest.records import Event, SeriesKey
from suanli.inventory.model import Gpu
from suanli.store.duck import DuckStore
from tests.conftest import examples

T0 = 1_773_000_000.0
STEP_S = 15.0
N_STEPS = 80                       # 20 minutes
FAULT_S = T0 + 600.0               # faults start at minute 10
PCI = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]

Mutate = Callable[[str, str, np.ndarray, np.ndarray], np.ndarray]


def _baseline(metric: str, rng: np.random.Generator, n: int) -> np.ndarray:
    if metric == hw.GPU_TEMP:
        return 60 + rng.normal(0, 1, n).round()
    if metric == hw.MEMORY_TEMP:
        return 66 + rng.normal(0, 1, n).round()
    if metric == hw.SM_CLOCK:
        return 1980.0 - 15 * rng.integers(0, 4, n)
    if metric == hw.THROTTLE:
        return 4.0 * (rng.uniform(0, 1, n) < 0.2)          # SW power cap now and then: normal
    if metric == hw.NVLINK_BW:
        return 4.5e10 * (1 + rng.normal(0, 0.05, n))
    if metric == hw.GPU_UTIL:
        return 95 + rng.normal(0, 2, n)
    if metric == hw.POWER:
        return 600 + rng.normal(0, 10, n)
    if metric in (hw.SBE, hw.PCIE_REPLAY):
        return np.full(n, float(rng.integers(0, 60)))      # old errors: a level, not a rate
    return np.zeros(n)                                      # DBE, remaps, Xid code


def build(tmp_path: Path, mutate: Mutate | None = None, events: list[Event] = (), nodes: int = 4,
          seed: int = 5) -> tuple[DuckStore, SimpleNamespace]:
    rng = np.random.default_rng(seed)
    store = DuckStore(None)     # the real store: raw values (sentinels included) reach analyze
    ts = T0 + STEP_S * np.arange(N_STEPS)
    gpus = {}
    for n in range(1, nodes + 1):
        node = f"node-{n:03d}"
        for i in range(8):
            gid = f"{node}/gpu{i}"
            pci = f"00000000:{PCI[i]}:00.0"
            gpus[gid] = Gpu(gid, node, i, f"GPU-{n}-{i}", pci, "H100-SXM")
            labels = (("Hostname", node), ("gpu", str(i)), ("pci_bus_id", pci))
            for metric in (hw.GPU_TEMP, hw.MEMORY_TEMP, hw.SM_CLOCK, hw.THROTTLE, hw.NVLINK_BW, hw.GPU_UTIL,
                           hw.POWER, hw.SBE, hw.DBE, hw.PCIE_REPLAY, hw.REMAP_CORR, hw.REMAP_UNCORR,
                           hw.REMAP_FAIL, hw.XID_ERRORS):
                v = _baseline(metric, rng, N_STEPS).astype(float)
                t = ts + rng.uniform(-0.5, 0.5, N_STEPS)
                if mutate is not None:
                    v = mutate(gid, metric, t, v)
                keep = ~np.isnan(t)
                store.add_samples(SeriesKey(metric, labels, "gpu", gid), t[keep], v[keep])
            for sev in ("corrected", "uncorrected"):
                key = SeriesKey(hw.PCIE_AER, (("node", node), ("pci_bus_id", pci[4:]), ("severity", sev)),
                                "gpu", gid)
                v = np.zeros(N_STEPS)
                if mutate is not None:
                    v = mutate(gid, f"{hw.PCIE_AER}:{sev}", ts, v)
                store.add_samples(key, ts, v)
    store.add_events(list(events))
    store.flush()
    return store, SimpleNamespace(gpus=gpus, jobs={})


def _only(findings: list, category: str, gpu: str) -> None:   # type: ignore[type-arg]
    got = [(f.category, f.entity_id) for f in findings]
    assert got == [(category, gpu)], got


def test_noisy_healthy_fleet_has_no_finding(tmp_path: Path) -> None:
    def noise(gid: str, metric: str, t: np.ndarray, v: np.ndarray) -> np.ndarray:
        v = v.copy()
        if gid == "node-001/gpu2" and metric == hw.SBE:
            v[40:] += 1                                     # one SBE: noise
        if gid == "node-002/gpu4" and metric == hw.PCIE_REPLAY:
            v[30:] += 2                                     # two replays: noise
        if gid == "node-003/gpu1" and metric == hw.SBE:
            v[50:] = 0                                      # exporter restart: counter reset
        if gid == "node-001/gpu5" and metric == hw.GPU_TEMP:
            v[10:14] = np.nan                               # missing readings
            v[20:32] = 2147483632.0                         # DCGM blank for 3 min: no reading, not heat
        if gid.startswith("node-004/") and metric in (hw.GPU_TEMP, hw.POWER, hw.SM_CLOCK, hw.GPU_UTIL):
            v[70:] = np.nan                                 # a whole node's exporter goes quiet: not a GPU fault
        if gid == "node-002/gpu0" and metric == hw.GPU_TEMP:
            v[60] = 95.0                                    # one hot sample is not sustained heat
        return v

    store, inv = build(tmp_path, noise)
    res = analyze(store, inv)  # type: ignore[arg-type]
    assert res.findings == []
    assert all(p["recommendation"] == "ok" for p in res.predictions_json())


def test_pcie_riser_wins_over_heat_at_the_right_gpu(tmp_path: Path) -> None:
    target = "node-002/gpu5"

    def riser(gid: str, metric: str, t: np.ndarray, v: np.ndarray) -> np.ndarray:
        if gid != target:
            return v
        after = t >= FAULT_S
        if metric == f"{hw.PCIE_AER}:corrected":
            return v + np.cumsum(after * 150.0)             # 150 per scrape = 600/min
        if metric == hw.PCIE_REPLAY:
            return v + np.cumsum(after * 120.0)
        if metric == hw.GPU_TEMP:
            return np.where(after, 89.0, v)                 # hot too
        return v

    res = analyze(*build(tmp_path, riser))
    _only(res.findings, "pcie_riser", target)
    f = res.findings[0]
    assert FAULT_S - 1 <= f.start <= FAULT_S + STEP_S + 1
    # AER: 150 per 15 s scrape = 600/min; 10 min x 600 = ~6,000 errors
    assert any("PCIe AER 600 errors/min" in e for e in f.evidence), f.evidence
    assert any("replay counter +" in e and e.endswith(" replays)") for e in f.evidence), f.evidence
    assert any("temperature 89" in e for e in f.evidence), f.evidence


def test_thermal_with_throttle_reason(tmp_path: Path) -> None:
    target = "node-003/gpu6"

    def hot(gid: str, metric: str, t: np.ndarray, v: np.ndarray) -> np.ndarray:
        if gid != target:
            return v
        after = t >= FAULT_S
        if metric == hw.GPU_TEMP:
            return np.where(after, 91.0, v)
        if metric == hw.THROTTLE:
            return np.where(after, 0x40, v)                 # HW thermal slowdown
        if metric == hw.SM_CLOCK:
            return np.where(after, 1410.0, v)
        return v

    res = analyze(*build(tmp_path, hot))
    _only(res.findings, "gpu_thermal", target)
    f = res.findings[0]
    assert abs(f.start - FAULT_S) <= STEP_S + 1
    assert any("hw_thermal_slowdown" in e for e in f.evidence)
    assert any("SM clock 1410 MHz" in e for e in f.evidence)


def test_clock_equal_to_peers_is_not_evidence(tmp_path: Path) -> None:
    # hot and throttled, but its SM clock stays where its node peers' is: the clock line says
    # nothing, so it is left out; the heat line carries its unit and its departure
    target = "node-002/gpu3"

    def hot(gid: str, metric: str, t: np.ndarray, v: np.ndarray) -> np.ndarray:
        if gid == target and metric == hw.GPU_TEMP:
            return np.where(t >= FAULT_S, 91.0, v)
        if gid == target and metric == hw.THROTTLE:
            return np.where(t >= FAULT_S, 0x40, v)
        return v

    res = analyze(*build(tmp_path, hot))
    _only(res.findings, "gpu_thermal", target)
    ev = res.findings[0].evidence
    assert not any("SM clock" in e for e in ev), ev
    assert any(f"{target} temperature 91 °C for " in e and "node peers" in e for e in ev), ev


def test_low_clock_without_reason_is_not_a_hardware_finding(tmp_path: Path) -> None:
    def straggler(gid: str, metric: str, t: np.ndarray, v: np.ndarray) -> np.ndarray:
        if gid == "node-001/gpu1" and metric == hw.SM_CLOCK:
            return np.where(t >= FAULT_S, 1200.0, v)
        return v

    assert analyze(*build(tmp_path, straggler)).findings == []


def test_memory_failure_from_dbe_and_xid(tmp_path: Path) -> None:
    target = "node-004/gpu0"

    def dbe(gid: str, metric: str, t: np.ndarray, v: np.ndarray) -> np.ndarray:
        if gid == target and metric == hw.DBE:
            return v + (t >= FAULT_S)
        if gid == target and metric == hw.SBE:
            return v + np.cumsum(t >= FAULT_S - 300)
        return v

    xid = Event(FAULT_S + 2, "node-004", "gpu", target, "xid", "NVRM: Xid (PCI:0000:18:00): 48, DBE",
                code=48, severity="fatal", source="kernel.log:7")
    res = analyze(*build(tmp_path, dbe, [xid]))
    _only(res.findings, "gpu_memory_failure", target)
    assert any("double-bit ECC errors +1" in e for e in res.findings[0].evidence)
    assert any("Xid 48" in e for e in res.findings[0].evidence)
    assert res.values()[target]["health_score"] < res.values()["node-001/gpu0"]["health_score"]


def test_memory_degradation_from_sbe_burst_and_retire(tmp_path: Path) -> None:
    target = "node-001/gpu7"

    def sbe(gid: str, metric: str, t: np.ndarray, v: np.ndarray) -> np.ndarray:
        if gid == target and metric == hw.SBE:
            return v + np.cumsum(np.where(t >= FAULT_S, 3.0, 0.0))       # 12/min for 10 min: 120
        return v

    res = analyze(*build(tmp_path, sbe))
    _only(res.findings, "gpu_memory_degradation", target)
    pred = {p["id"]: p for p in res.predictions_json()}
    # 120 SBEs in 10 minutes is thousands per day: far over 10/day, and P(DBE 30 d) > 15 %
    assert pred[target]["recommendation"] == "retire"
    assert pred[target]["probability_interval"][0] <= pred[target]["probability"] <= \
        pred[target]["probability_interval"][1]
    assert pred["node-001/gpu0"]["recommendation"] == "ok"
    assert res.predictions_json()[0]["id"] == target          # riskiest first


def test_gpu_lost_when_series_stop_and_from_dcgm_xid(tmp_path: Path) -> None:
    lost = "node-002/gpu3"
    xid_gpu = "node-003/gpu2"

    def stop(gid: str, metric: str, t: np.ndarray, v: np.ndarray) -> np.ndarray:
        if gid == lost:
            return np.where(t >= FAULT_S, np.nan, v)
        if gid == xid_gpu and metric == hw.XID_ERRORS:
            return np.where(t >= FAULT_S, 79.0, v)          # no kernel log: DCGM's last-Xid field
        return v

    res = analyze(*build(tmp_path, stop))
    got = sorted((f.category, f.entity_id) for f in res.findings)
    assert got == [("gpu_lost", lost), ("gpu_lost", xid_gpu)]
    onset = {f.entity_id: f.start for f in res.findings}
    assert abs(onset[lost] - FAULT_S) <= STEP_S + 1
    assert abs(onset[xid_gpu] - FAULT_S) <= STEP_S + 1


def test_nvlink_drop_vs_own_baseline_and_peers(tmp_path: Path) -> None:
    target = "node-001/gpu4"

    def nvl(gid: str, metric: str, t: np.ndarray, v: np.ndarray) -> np.ndarray:
        if gid == target and metric == hw.NVLINK_BW:
            return np.where(t >= FAULT_S, v * 0.2, v)
        return v

    res = analyze(*build(tmp_path, nvl))
    _only(res.findings, "nvlink_degradation", target)
    assert abs(res.findings[0].start - FAULT_S) <= STEP_S + 1


def test_whole_job_stall_is_not_nvlink(tmp_path: Path) -> None:
    def stall(gid: str, metric: str, t: np.ndarray, v: np.ndarray) -> np.ndarray:
        if metric == hw.NVLINK_BW:
            return np.where(t >= FAULT_S, v * 0.01, v)
        return v

    assert analyze(*build(tmp_path, stall)).findings == []


def test_two_faults_at_once(tmp_path: Path) -> None:
    def two(gid: str, metric: str, t: np.ndarray, v: np.ndarray) -> np.ndarray:
        after = t >= FAULT_S
        if gid == "node-001/gpu0" and metric == f"{hw.PCIE_AER}:uncorrected":
            return v + np.cumsum(after * 10.0)
        if gid == "node-004/gpu7" and metric == hw.GPU_TEMP:
            return np.where(after, 93.0, v)
        return v

    res = analyze(*build(tmp_path, two))
    assert sorted((f.category, f.entity_id) for f in res.findings) == [
        ("gpu_thermal", "node-004/gpu7"), ("pcie_riser", "node-001/gpu0")]


def test_override_healthy_holds_until_new_evidence(tmp_path: Path) -> None:
    target = "node-001/gpu7"
    path = tmp_path / "overrides.jsonl"

    def sbe(gid: str, metric: str, t: np.ndarray, v: np.ndarray) -> np.ndarray:
        if gid == target and metric == hw.SBE:
            return v + np.cumsum(np.where((t >= FAULT_S) & (t < FAULT_S + 300), 5.0, 0.0))
        return v

    store, inv = build(tmp_path, sbe)
    record_override(path, target, "healthy", "HBM reseated, diag passed", "oncall", now=FAULT_S + 400)
    res = analyze(store, inv, config=HealthConfig(overrides=tuple(load_overrides(path))))
    pred = {p["id"]: p for p in res.predictions_json()}
    assert pred[target]["recommendation"] == "ok"
    assert pred[target]["override"]["who"] == "oncall"
    # an override older than the errors does not hold
    early = tmp_path / "early.jsonl"
    record_override(early, target, "healthy", "earlier note", "oncall", now=FAULT_S - 100)
    res = analyze(store, inv, config=HealthConfig(overrides=tuple(load_overrides(early))))
    assert {p["id"]: p for p in res.predictions_json()}[target]["recommendation"] == "retire"


def test_predictions_shape_matches_spec(tmp_path: Path) -> None:
    res = analyze(*build(tmp_path, nodes=1))
    p = res.predictions_json()[0]
    assert {"kind", "id", "event", "horizon_days", "probability", "health_score", "recommendation"} <= set(p)
    assert p["kind"] == "gpu" and p["event"] == "dbe" and p["horizon_days"] == 30
    assert 0.0 <= p["probability"] <= 1.0 and 0.0 <= p["health_score"] <= 1.0
    assert set(res.values()[p["id"]]) == {"health_score", "p_dbe_30d", "sbe_per_day"}


@pytest.mark.parametrize("nodes", [0])
def test_empty_store(tmp_path: Path, nodes: int) -> None:
    store, inv = build(tmp_path, nodes=nodes)
    res = analyze(store, inv)
    assert res.findings == [] and res.predictions_json() == []


@settings(max_examples=examples(150), deadline=None, derandomize=True)
@given(st.lists(st.lists(st.tuples(st.sampled_from([0.0, 15.0, 30.0, 45.0, float("nan")]),
                                   st.sampled_from([1.0, 2.0, float("nan"), 4294967295.0])),
                         min_size=1, max_size=6), min_size=1, max_size=3))
def test_a_gpus_pieces_of_one_metric_merge_in_time_order(pieces: list[list[tuple[float, float]]]) -> None:
    # one piece in time order takes the short way; several, or one out of order, are sorted: the
    # same numbers either way (stable by time, DCGM's blank sentinel and non-finite values as NaN)
    from suanli.analysis.health.inputs import _merge

    pairs = [(np.array([t for t, _ in p]), np.array([v for _, v in p])) for p in pieces]
    ts = np.concatenate([p[0] for p in pairs])
    v = np.concatenate([p[1] for p in pairs])
    order = np.argsort(ts, kind="stable")
    got_ts, got_v = _merge(pairs)
    assert np.array_equal(got_ts, ts[order], equal_nan=True)
    assert np.array_equal(got_v, hw.clean(v[order]), equal_nan=True)
