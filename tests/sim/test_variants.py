"""Scenario variants and GPU state telemetry: a stalled job's GPUs all lose NVLink traffic and
tensor activity at once, idle GPUs read idle, a job that finishes stops, faults ramp, recover or
run from before the window, a storage may have no latency series. Truth lists the real faults only,
with their start and end. Numbers are worked out from the documented parameters."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from suanli.sim import FaultRequest, JobRequest, NoiseConfig, Nuisances, Scenario, simulate_custom
from suanli.sim.faults import CATEGORIES
from suanli.sim.scenarios import SHAPES
from suanli.sim.sweep import sweep_runs
from suanli.timefmt import parse_time
from tests.sim._read import metrics, series_by_entity, spans, truth

QUIET = NoiseConfig(missed_scrape=0.0, nan=0.0, duplicate=0.0, out_of_order=0.0, sentinel=0.0, exporter_restart=False)
STATE = Nuisances(noise=QUIET, job_state_telemetry=True)
H100_TDP_W, H100_IDLE_MHZ, A100_IDLE_MHZ = 700.0, 345.0, 210.0


def _grid(d: Path, family: str) -> dict[str, dict[float, float]]:
    """entity -> scrape time (15 s grid) -> value."""
    return {e: {t - t % 15: v for t, v in s} for e, s in series_by_entity(metrics(d, family)).items()}


def _inv(d: Path) -> dict:  # type: ignore[type-arg]
    import yaml

    return yaml.safe_load((d / "inventory.yaml").read_text())  # type: ignore[no-any-return]


def _job_gpus(d: Path, job: str) -> list[str]:
    return [r["gpu"] for j in _inv(d)["jobs"] if j["id"] == job for r in j["ranks"]]


def _watchdog_s(d: Path) -> float:
    line = next(x for x in (d / "trainer.log").read_text().splitlines() if "Watchdog caught" in x)
    return parse_time(line.split(" ", 1)[0])


def test_a_stalled_jobs_gpus_lose_nvlink_and_tensor_activity_together(tmp_path: Path) -> None:
    sc = Scenario("hang_one", "", (FaultRequest("collective_hang"),), (JobRequest(),), nodes=4)
    d = simulate_custom(sc, tmp_path / "h", seed=2, minutes=15, nuisances=STATE)
    tr = truth(d)
    assert [(f["category"], f["root_cause"]["id"]) for f in tr["faults"]] == [("collective_hang", tr["jobs"][0]["id"])]
    fault = tr["faults"][0]
    start, watchdog = fault["start_s"], _watchdog_s(d)
    assert fault["end"] is not None and parse_time(fault["end"]) > watchdog     # over when the job steps again
    gpus = _job_gpus(d, fault["root_cause"]["id"])
    nvl, tensor = _grid(d, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"), _grid(d, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")
    util, power = _grid(d, "DCGM_FI_DEV_GPU_UTIL"), _grid(d, "DCGM_FI_DEV_POWER_USAGE")
    stalled = [t for t in nvl[gpus[0]] if start + 30 <= t <= watchdog - 15]
    before = [t for t in nvl[gpus[0]] if t < start - 30]
    assert len(stalled) >= 4 and before
    for g in gpus:
        assert statistics.median(nvl[g][t] for t in before) > 1e10   # ~7 % of 450 GB/s while stepping
        assert max(nvl[g][t] for t in stalled) < 5e6                 # link management traffic only
        assert {tensor[g][t] for t in stalled} == {0.0}
        assert all(85 <= util[g][t] <= 90 for t in stalled)          # NCCL kernels spin: 90 % less 0-2 points
        assert statistics.median(power[g][t] for t in stalled) == pytest.approx(0.3 * H100_TDP_W, abs=15)
    # the hung step's finished phases are spans without their train_step (it never ended)
    sp = [s for s in spans(d) if s["job"] == fault["root_cause"]["id"]]
    n_step = sum(s["name"] == "train_step" for s in sp)
    assert sum(s["name"] == "data_load" for s in sp) == n_step + len(gpus)


def test_gpus_with_no_process_read_idle(tmp_path: Path) -> None:
    for model, idle_mhz, tdp in (("H100-SXM", H100_IDLE_MHZ, H100_TDP_W), ("A100-SXM", A100_IDLE_MHZ, 400.0)):
        sc = Scenario("spare", "", jobs=(JobRequest(),), nodes=4, spare_nodes=1, gpu_model=model)
        d = simulate_custom(sc, tmp_path / model, seed=3, minutes=4, nuisances=STATE)
        tr = truth(d)
        assert tr["faults"] == [] and len(tr["cluster"]["spare_nodes"]) == 1
        spare = tr["cluster"]["spare_nodes"][0]
        idle = [f"{spare}/gpu{g}" for g in range(8)]
        grids = {f: _grid(d, f) for f in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_FB_USED",
                                          "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
                                          "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP")}
        for g in idle:
            assert set(grids["DCGM_FI_DEV_GPU_UTIL"][g].values()) == {0.0}
            assert set(grids["DCGM_FI_DEV_SM_CLOCK"][g].values()) == {idle_mhz}
            assert set(grids["DCGM_FI_DEV_FB_USED"][g].values()) == {0.0}
            assert set(grids["DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"][g].values()) == {1.0}    # GPU_IDLE
            assert set(grids["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"][g].values()) == {0.0}
            assert statistics.median(grids["DCGM_FI_DEV_POWER_USAGE"][g].values()) == pytest.approx(0.103 * tdp, abs=8)
            # ambient 26-30 C plus 37 C x 0.103 of TDP, half a degree of noise
            assert all(26 + 3.8 - 2 <= v <= 30 + 3.8 + 2 for v in grids["DCGM_FI_DEV_GPU_TEMP"][g].values())


def test_a_job_that_finishes_stops_and_its_gpus_go_idle(tmp_path: Path) -> None:
    sc = Scenario("finish", "", jobs=(JobRequest(), JobRequest()), nodes=8, finish_job=True)
    d = simulate_custom(sc, tmp_path / "f", seed=5, minutes=12, nuisances=STATE)
    tr = truth(d)
    assert tr["faults"] == []
    (done,) = tr["variants"]["finished_jobs"]
    at, t0, t1 = parse_time(done["at"]), parse_time(tr["window"]["start"]), parse_time(tr["window"]["end"])
    assert t0 + 0.4 * (t1 - t0) - 60 <= at <= t0 + 0.85 * (t1 - t0) + 60
    sp = [s for s in spans(d) if s["job"] == done["id"]]
    last_step = max(s["end"] for s in sp if s["name"] == "train_step")
    assert last_step <= at + 1 and max(s["end"] for s in sp) == pytest.approx(at, abs=1)   # the final checkpoint
    assert any(s["name"] == "checkpoint_save" and s["end"] == pytest.approx(at, abs=1) for s in sp)
    assert "exiting program" in (d / "trainer.log").read_text()
    util, fb = _grid(d, "DCGM_FI_DEV_GPU_UTIL"), _grid(d, "DCGM_FI_DEV_FB_USED")
    for g in _job_gpus(d, done["id"]):
        assert all(v == 0.0 for t, v in util[g].items() if t > at + 15)
        assert all(v == 0.0 for t, v in fb[g].items() if t > at + 15)
        assert any(v > 50 for t, v in util[g].items() if t < at - 60)


def _storage_latency(d: Path, sid: str) -> dict[float, float]:
    return {t - t % 15: v for lab, s in metrics(d, "suanli_storage_read_latency_seconds").items()
            if dict(lab)["storage"] == sid for t, v in s}


def test_a_transient_storage_fault_rises_and_recovers_inside_the_window(tmp_path: Path) -> None:
    sc = Scenario("st", "", (FaultRequest("storage_slow", shape="transient"),), (JobRequest(),), nodes=4)
    d = simulate_custom(sc, tmp_path / "t", seed=6, minutes=20, nuisances=Nuisances(noise=QUIET))
    (f,) = truth(d)["faults"]
    a, b = f["start_s"], parse_time(f["end"])
    t1 = parse_time(truth(d)["window"]["end"])
    assert f["params"]["shape"] == "transient" and 300 - 1 <= b - a <= 480 + 1 and b <= t1 - 120 + 1
    lat = _storage_latency(d, f["root_cause"]["id"])
    during = statistics.median(v for t, v in lat.items() if a + 30 <= t < b - 15)
    after = statistics.median(v for t, v in lat.items() if t >= b + 15)
    assert during == pytest.approx(25 * 1.1e-3, rel=0.1) and after == pytest.approx(1.1e-3, rel=0.1)
    dl = [s for s in spans(d) if s["name"] == "data_load" and s["rank"] == 0]
    inside = statistics.median(s["end"] - s["start"] for s in dl if a + 30 <= s["start"] < b)
    later = statistics.median(s["end"] - s["start"] for s in dl if s["start"] >= b + 15)
    assert inside / later == pytest.approx(25, rel=0.15)


def test_a_ramp_rises_slowly_to_its_full_level(tmp_path: Path) -> None:
    sc = Scenario("ramp", "", (FaultRequest("gpu_thermal", shape="ramp"),), (JobRequest(),), nodes=4)
    d = simulate_custom(sc, tmp_path / "r", seed=7, minutes=20, nuisances=Nuisances(noise=QUIET))
    tr = truth(d)
    (f,) = tr["faults"]
    ramp, a = f["params"]["ramp_s"], f["start_s"]
    assert 0.25 * 1200 - 1 <= ramp <= 0.4 * 1200 + 1 and a + ramp <= parse_time(tr["window"]["end"]) - 180 + 1
    temp = _grid(d, "DCGM_FI_DEV_GPU_TEMP")[f["root_cause"]["id"]]
    base = statistics.median(v for t, v in temp.items() if t < a)
    half = statistics.median(v for t, v in temp.items() if abs(t - (a + ramp / 2)) <= 30)
    full = statistics.median(v for t, v in temp.items() if t > a + ramp + 30)
    assert half == pytest.approx(base + 0.5 * (90 - base), abs=2.5)    # linear to 90 C over ramp_s
    assert full == pytest.approx(90, abs=2)


def test_a_fault_already_running_when_the_window_opens(tmp_path: Path) -> None:
    sc = Scenario("run", "", (FaultRequest("gpu_thermal", shape="running"),), (JobRequest(),), nodes=4)
    d = simulate_custom(sc, tmp_path / "u", seed=8, minutes=10, nuisances=Nuisances(noise=QUIET))
    tr = truth(d)
    (f,) = tr["faults"]
    t0 = parse_time(tr["window"]["start"])
    assert t0 - 1800 <= f["start_s"] <= t0 - 120 and f["end"] is None
    temp = _grid(d, "DCGM_FI_DEV_GPU_TEMP")[f["root_cause"]["id"]]
    reasons = _grid(d, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")[f["root_cause"]["id"]]
    assert min(temp.values()) >= 88 and set(reasons.values()) == {0x60}   # hot and throttled from the first scrape
    stamps = [parse_time(x.split(" ", 1)[0]) for x in (d / "kernel.log").read_text().splitlines()]
    assert min(stamps) >= t0                                               # nothing written before the window


def test_a_quiet_running_nvlink_fault_shows_only_in_its_bandwidth(tmp_path: Path) -> None:
    sc = Scenario("q", "", (FaultRequest("nvlink_degradation", shape="running", quiet_logs=True),), (JobRequest(),),
                  nodes=4)
    d = simulate_custom(sc, tmp_path / "q", seed=8, minutes=10, nuisances=Nuisances(noise=QUIET))
    tr = truth(d)
    (f,) = tr["faults"]
    t0 = parse_time(tr["window"]["start"])
    assert f["start_s"] < t0 and f["params"]["quiet_logs"] is True
    assert "Xid" not in (d / "kernel.log").read_text()                   # its Xid 74 came before the window
    root = f["root_cause"]["id"]
    node = root.split("/")[0]
    bw = _grid(d, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL")
    mates = [g for g in _job_gpus(d, f["jobs"][0]) if g.startswith(node + "/") and g != root]
    for t in sorted(bw[root])[:4]:                                       # the first minute: already at 0.6
        peer = statistics.median(bw[g][t] for g in mates)
        assert bw[root][t] / peer == pytest.approx(0.6, abs=0.06)        # magnitude 0.6, 3 % noise each


def test_a_storage_without_latency_series_still_shows_in_its_readers_data_load(tmp_path: Path) -> None:
    sc = Scenario("np", "", (FaultRequest("storage_slow"),), (JobRequest(),), nodes=4, storage_probe=False)
    d = simulate_custom(sc, tmp_path / "n", seed=9, minutes=10, nuisances=Nuisances(noise=QUIET))
    tr = truth(d)
    assert "suanli_storage_read_latency_seconds" not in (d / "metrics.om").read_text()
    assert tr["variants"]["storage_probe"] is False
    (f,) = tr["faults"]
    dl = [s for s in spans(d) if s["name"] == "data_load" and s["rank"] == 0]
    before = statistics.median(s["end"] - s["start"] for s in dl if s["start"] < f["start_s"])
    after = statistics.median(s["end"] - s["start"] for s in dl if s["start"] > f["start_s"] + 30)
    assert after / before == pytest.approx(25, rel=0.15)                   # read latency x25


def test_a_slow_checkpoint_pauses_every_rank_and_its_nvlink(tmp_path: Path) -> None:
    nz = Nuisances(noise=QUIET, job_state_telemetry=True, long_checkpoint_s=(120.0, 120.0))
    d = simulate_custom(Scenario("ck", "", jobs=(JobRequest(),), nodes=4), tmp_path / "c", seed=10, minutes=15,
                        nuisances=nz)
    tr = truth(d)
    assert tr["faults"] == [] and tr["nuisances"]["long_checkpoint"]["seconds"] == 120.0
    job = tr["nuisances"]["long_checkpoint"]["job"]
    saves = [s for s in spans(d) if s["name"] == "checkpoint_save" and s["job"] == job
             and s["end"] - s["start"] == pytest.approx(120, abs=0.01)]
    gpus = _job_gpus(d, job)
    assert len(saves) == len(gpus)
    a, b = saves[0]["start"], saves[0]["end"]
    steps = [s for s in spans(d) if s["name"] == "train_step" and s["job"] == job]
    assert not [s for s in steps if s["start"] < b and s["end"] > a]
    nvl = _grid(d, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL")
    assert all(v < 5e6 for g in gpus for t, v in nvl[g].items() if a + 15 <= t <= b - 15)


def test_the_sweep_meets_every_category_in_every_shape_and_size() -> None:
    runs = sweep_runs()
    assert len(runs) == 3 * 4 * (1 + len(CATEGORIES) + 2)
    seen = {(f.category, f.shape) for r in runs for f in r.scenario.faults}
    want = {(c, s) for c in CATEGORIES for s in SHAPES.get(c, ("step",))}
    assert want <= seen
    assert {(r.seed, r.nodes) for r in runs} == {(s, n) for s in (1, 2, 3) for n in (8, 16, 32, 128)}
    assert {c for r in runs if r.kind == "pair" for f in r.scenario.faults for c in [f.category]} == set(CATEGORIES)
    assert any(not r.scenario.storage_probe for r in runs) and any(r.scenario.finish_job for r in runs)
    assert all(r.nuisances.job_state_telemetry and r.nuisances.background_errors for r in runs)


@pytest.mark.slow
def test_sweep_runs_are_byte_identical_across_hash_seeds(tmp_path: Path) -> None:
    code = ("import sys; from pathlib import Path; from suanli.sim.sweep import sweep_runs; "
            "from suanli.sim import simulate_custom; "
            "r = [x for x in sweep_runs((2,), (8,), 10.0) if x.kind == 'pair'][0]; "
            "simulate_custom(r.scenario, Path(sys.argv[1]), seed=r.seed, nodes=r.nodes, minutes=r.minutes, "
            "nuisances=r.nuisances)")
    for h in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": h}
        subprocess.run([sys.executable, "-c", code, str(tmp_path / h)], check=True, env=env, timeout=300)
    for name in ("metrics.om", "traces.otlp.jsonl", "kernel.log", "trainer.log", "inventory.yaml", "truth.json"):
        assert (tmp_path / "1" / name).read_bytes() == (tmp_path / "2" / name).read_bytes(), name
    assert len(json.loads((tmp_path / "1" / "truth.json").read_text())["faults"]) == 2
