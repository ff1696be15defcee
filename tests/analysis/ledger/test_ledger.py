"""The ledger through the real store: hand-worked MFU and cost, and the public scenarios."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from suanli.analysis.ledger import LedgerConfig, LedgerResult, analyze
from suanli.analysis.ledger.economics import EconomicsConfig, forecast_finish
from suanli.analysis.ledger.goodput import GoodputConfig, split_job
from suanli.analysis.ledger.job import JobInputs, JobLedger, build_job_ledger, hfu_ratio
from suanli.analysis.window import Window
from suanli.ingest.load import load_paths
from suanli.ingest.records import Span
from suanli.inventory import parse_inventory
from suanli.store.duck import DuckStore
from suanli.timefmt import to_rfc3339
from tests.analysis.ledger.test_ledger_frames import Row, make_frame, split_rows
from tests.conftest import shared_path

T0 = 1_773_100_000.0
INVENTORY = """
cluster: tiny
gpu_models:
  H100-SXM: {bf16_tflops: 989, gpu_hour_price: 2.0}
racks:
  - id: rack-01
    nodes:
      - id: node-001
        gpus:
          - {index: 0, uuid: GPU-a, model: H100-SXM}
          - {index: 1, uuid: GPU-b, model: H100-SXM}
jobs:
  - id: job-a
    model: {params: 1.0e9}
    precision: bf16
    parallelism: {dp: 2}
    ranks:
      - {rank: 0, gpu: node-001/gpu0}
      - {rank: 1, gpu: node-001/gpu1}
    tokens_per_step: 1000
    target_tokens: 1.0e6
"""


def _span(rank: int, name: str, a: float, b: float, step: int | None = None,
          attrs: dict[str, object] | None = None) -> Span:
    return Span(trace_id=f"t{step}", span_id=f"{rank}-{name}-{a}", parent_id=None, name=name,
                start_s=T0 + a, end_s=T0 + b, job_id="job-a", rank=rank, step=step,
                gpu_id=f"node-001/gpu{rank}", node_id="node-001", attrs=attrs or {})


def _store() -> DuckStore:
    store = DuckStore(None)
    store.put_inventory(INVENTORY, "inventory.yaml")
    return store


def _tiny_store() -> DuckStore:
    # 2 ranks, 10 steps of 10 s back to back (wall 100 s): forward 0..3, backward 3..8,
    # allreduce 6..9 (2 s hidden, 1 s exposed), optimizer 9..10. Each rank's step declares
    # train.model_flops = 0.5 x 989e12 x 10 s = 4.945e15 -> MFU exactly 0.5.
    spans = []
    for rank in (0, 1):
        for k in range(10):
            t = 10.0 * k
            spans += [_span(rank, "train_step", t, t + 10, k, {"train.model_flops": 4.945e15}),
                      _span(rank, "forward", t, t + 3), _span(rank, "backward", t + 3, t + 8),
                      _span(rank, "allreduce", t + 6, t + 9), _span(rank, "optimizer", t + 9, t + 10)]
    store = _store()
    store.add_spans(spans)
    store.flush()
    return store


def _tiny_ledger() -> LedgerResult:
    return analyze(_tiny_store(), parse_inventory(INVENTORY), config=LedgerConfig())


def test_the_ledger_reads_only_its_window() -> None:
    store, inv = _tiny_store(), parse_inventory(INVENTORY)
    # the data's extent is the same as no window: 10 steps, 100 s of 2 GPUs at $2/h
    (whole,) = analyze(store, inv, Window(T0, T0 + 100)).jobs
    assert len(whole.split.steps.step) == 10 and whole.cost == pytest.approx(2 * 100 / 3600 * 2.0)
    # [0, 45] s: steps 0..4 overlap it (step 4 runs 40..50), so the wall is 0..50 s; of step 4's
    # phases only forward (40..43) and backward (43..48) start in it: 8 s of compute, so the compute
    # share is (4 x 9 s + 8 s) / 50 s = 0.88; every second is in a productive step, so goodput is 1;
    # each step still declares half the peak: MFU 0.5
    (part,) = analyze(store, inv, Window(T0, T0 + 45)).jobs
    assert len(part.split.steps.step) == 5
    assert part.cost == pytest.approx(2 * 50 / 3600 * 2.0)
    assert part.mfu == pytest.approx(0.5) and part.time_split()["compute"] == pytest.approx(0.88)
    assert part.goodput == pytest.approx(1.0)
    assert analyze(store, inv, Window(T0 + 200, T0 + 300)).jobs == []     # no span in it


def test_tiny_job_mfu_split_cost() -> None:
    res = _tiny_ledger()
    (job,) = res.jobs
    assert job.mfu == pytest.approx(0.5)
    # compute 9 of 10 s, exposed comm 1 of 10 s.
    split = job.time_split()
    assert split["compute"] == pytest.approx(0.9)
    assert split["communication"] == pytest.approx(0.1)
    assert sum(split.values()) == pytest.approx(1.0)
    # goodput counts the whole productive step (exposed communication included): 10 of 10 s
    assert job.goodput == pytest.approx(1.0)
    # cost: 2 GPUs x 100 s / 3600 x $2 = $0.1111; effective PFLOP = 20 x 4.945 = 98.9
    # -> $0.0011234 per PFLOP; lost to exposed comm = 10 % of the cost.
    assert job.cost == pytest.approx(2 * 100 / 3600 * 2.0)
    assert job.cost_per_effective_pflop() == pytest.approx(4 / 36 / 98.9)
    assert job.lost_cost["exposed_communication"] == pytest.approx(0.1 * 4 / 36)
    out = res.efficiency_json()["jobs"][0]
    assert {"id", "mfu", "goodput", "time_split", "cost_per_effective_pflop", "forecast"} <= set(out)
    assert set(out["time_split"]) == {"compute", "communication", "data_loading", "checkpoint",
                                      "failures", "other"}
    # forecast: done (9+1) x 1000 tokens; 1000 tokens per 10 s -> 100 tok/s; 990,000 tokens
    # left -> 9,900 s at the median (the interruption prior adds ~0.4 expected events x 1800 s
    # at the 90th percentile only).
    fc = out["forecast"]
    assert fc["remaining_tokens"] == pytest.approx(990_000)
    assert fc["tokens_per_s"] == pytest.approx(100.0)
    assert job.forecast is not None
    assert job.forecast.finish_s[1] - (T0 + 100) == pytest.approx(9900.0, rel=1e-6)
    assert len(res.table_rows()[0]) == 15


def test_goodput_is_productive_time_and_differs_from_the_compute_share() -> None:
    # Both ranks alike. A 10 s step at t: data_load t..t+1, forward t+1..t+4, backward t+4..t+8,
    # allreduce t+8..t+10 (2 s exposed). Steps 0 [0,10], 1 [10,20], checkpoint_save [20,22],
    # 2 [22,32], 3 [32,42]; crash; init [80,90], checkpoint_load [90,95]; rollback to step 2:
    # 2 [95,105], 3 [105,115]. Wall 115 s. Productive steps 0, 1, 2', 3' = 40 s, of which data
    # stalls 4 s, compute 28 s, exposed comm 8 s; lost first runs of 2 and 3 = 20 s; downtime
    # 42..95 = 53 s; checkpoint 2 s (40 + 20 + 53 + 2 = 115).
    # ml-goodput-measurement: goodput = (40 - 4) / 115 = 0.313043; compute share = 28 / 115.
    spans = []
    for rank in (0, 1):
        for k, t in ((0, 0.0), (1, 10.0), (2, 22.0), (3, 32.0), (2, 95.0), (3, 105.0)):
            spans += [_span(rank, "train_step", t, t + 10, k), _span(rank, "data_load", t, t + 1),
                      _span(rank, "forward", t + 1, t + 4), _span(rank, "backward", t + 4, t + 8),
                      _span(rank, "allreduce", t + 8, t + 10)]
        spans += [_span(rank, "checkpoint_save", 20, 22), _span(rank, "init", 80, 90),
                  _span(rank, "checkpoint_load", 90, 95)]
    store = _store()
    store.add_spans(spans)
    store.flush()
    (job,) = analyze(store, parse_inventory(INVENTORY)).jobs
    split = job.time_split()
    assert job.goodput == pytest.approx(36 / 115)
    assert split["compute"] == pytest.approx(28 / 115)
    assert split["failures"] == pytest.approx(73 / 115)
    assert split["data_loading"] == pytest.approx(4 / 115)
    assert split["checkpoint"] == pytest.approx(2 / 115)


def test_megatron_formula_and_no_flops_attribute() -> None:
    # Without train.model_flops the inventory shape gives 6N = 6e9 FLOPs/token x 1000 tokens per
    # step = 6e12 per step; over 2 GPUs x 10 s x 989e12 -> MFU 3.033e-4.
    spans = [_span(r, "train_step", 10.0 * k, 10.0 * k + 10, k) for r in (0, 1) for k in range(3)]
    store = _store()
    store.add_spans(spans)
    store.flush()
    (job,) = analyze(store, parse_inventory(INVENTORY)).jobs
    assert job.flops_source == "inventory"
    assert job.mfu == pytest.approx(6e12 / (2 * 10 * 989e12))
    assert job.goodput == pytest.approx(1.0)    # steps without phases count as compute


def _scenario(name: str) -> LedgerResult:
    store = DuckStore(None)
    load_paths([shared_path("scenarios", name)], store)
    text = store.inventory_text()
    assert text is not None
    return analyze(store, parse_inventory(text))


def _compute_share_by_step(res: LedgerResult, job_id: str) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[type-arg]
    job = next(j for j in res.jobs if j.job_id == job_id)
    s = job.split.steps
    return s.start_s, s.compute_s / (s.wall_s * s.n_ranks)


def test_switch_port_fault_drops_compute_share_and_mfu() -> None:
    from suanli.timefmt import parse_time

    res = _scenario("switch_port_errors")
    job = next(j for j in res.jobs if j.job_id == "llama-34b-continual")
    onset = parse_time("2026-03-10T01:39:53Z")
    start, share = _compute_share_by_step(res, job.job_id)
    before, during = share[start < onset - 20], share[start > onset + 60]
    # truth.json: compute share ~0.83 before, ~0.37 during (shares should move that way, and a lot).
    assert np.median(before) > 0.75
    assert np.median(during) < 0.5
    mfu_before = np.median(job.step_mfu[start < onset - 20])
    mfu_during = np.median(job.step_mfu[start > onset + 60])
    assert mfu_during < 0.6 * mfu_before
    assert sum(job.time_split().values()) == pytest.approx(1.0)


def test_healthy_scenario_has_high_compute_share_and_no_failures() -> None:
    res = _scenario("healthy")
    (job,) = [j for j in res.jobs if j.job_id == "llama-34b-rlhf-rm"]
    assert job.time_split()["failures"] == 0.0
    # truth.json: compute share 0.859 before any fault (there is none), median step 23.892 s.
    assert job.time_split()["compute"] == pytest.approx(0.859, abs=0.01)
    # goodput (productive step time, data stalls out) is the compute share plus exposed
    # communication and in-step other: above it, and 1 minus data loading, checkpoint, init, idle
    split = job.time_split()
    assert job.goodput == pytest.approx(1 - split["data_loading"] - split["checkpoint"] - split["failures"]
                                        - (split["other"] - job.split.shares()["step_other"]), abs=1e-9)
    assert job.goodput > job.time_split()["compute"]
    # MFU from truth and the inventory: PaLM FLOPs/token = 6 x 33.7e9 + 12 x 48 x 8192 x 4096
    # = 2.2153e11; x 2,293,760 tokens per step = 5.0813e17 FLOPs; over 64 GPUs x 989e12 x 23.892 s
    # = 1.5123e18 -> 0.336 at the median step. The job's MFU divides by the mean step time (a
    # ratio of sums), a little above the median: within 5 % of 0.336.
    fpt = 6 * 33.7e9 + 12 * 48 * 8192 * 4096
    at_median = 2_293_760 * fpt / (64 * 989e12 * 23.892)
    assert at_median == pytest.approx(0.336, abs=0.001)
    assert job.mfu == pytest.approx(at_median, rel=0.05)


def test_pcie_riser_slows_only_the_job_on_that_gpu() -> None:
    from suanli.timefmt import parse_time

    res = _scenario("pcie_riser")
    onset = parse_time("2026-03-17T17:45:01Z")
    start, share = _compute_share_by_step(res, "llama-13b-rlhf-rm")
    before, during = share[start < onset - 10], share[start > onset + 60]
    assert np.median(before) - np.median(during) > 0.1
    other_start, other = _compute_share_by_step(res, "mpt-30b-rlhf-rm")
    assert abs(np.median(other[other_start < onset]) - np.median(other[other_start > onset + 60])) < 0.05


def test_hfu_with_full_recompute_and_timeline() -> None:
    # Same tiny job, recompute full, shape-derived FLOPs: model 6N + 12·L·h·T, hardware
    # 8N + 16·L·h·T with N = 1e9, L = 2, h = 100, T = 10: (8e9 + 32e3) / (6e9 + 24e3).
    inv = parse_inventory(INVENTORY.replace("model: {params: 1.0e9}",
                                            "model: {params: 1.0e9, layers: 2, hidden: 100, seq_len: 10}\n"
                                            "    recompute: full"))
    job = inv.jobs["job-a"]
    assert job.recompute == "full"
    spans = [_span(r, "train_step", 10.0 * k, 10.0 * k + 10, k) for r in (0, 1) for k in range(3)]
    store = _store()
    store.add_spans(spans)
    store.flush()
    (led,) = analyze(store, inv).jobs
    assert led.mfu is not None and led.hfu is not None
    assert led.hfu / led.mfu == pytest.approx((8e9 + 32e3) / (6e9 + 24e3))
    timeline = led.mfu_timeline(points=2)
    assert len(timeline) == 2 and timeline[0][1] == pytest.approx(led.mfu, rel=1e-3)


def test_megatron_formula_is_selectable() -> None:
    # l=2, h=64, s=128, V=1000: model FLOPs/token (no recompute) = 72*2*64^2*(1+128/384) + 6*64*1000
    # = 786,432 + 384,000 = 1,170,432; x 1000 tokens per step / (2 GPUs x 10 s x 989e12).
    inv = parse_inventory(INVENTORY.replace(
        "model: {params: 1.0e9}", "model: {params: 1.0e9, layers: 2, hidden: 64, seq_len: 128, vocab: 1000}"))
    spans = [_span(r, "train_step", 10.0 * k, 10.0 * k + 10, k) for r in (0, 1) for k in range(3)]
    store = _store()
    store.add_spans(spans)
    store.flush()
    (led,) = analyze(store, inv, config=LedgerConfig(formula="megatron")).jobs
    assert led.mfu == pytest.approx(1_170_432 * 1000 / (2 * 10 * 989e12))


def _pure_ledger(rows: list[Row], step_flops: float, inputs: JobInputs, inventory: str = INVENTORY) -> JobLedger:
    """build_job_ledger over split_job of hand rows (no store): every rank's step declares ``step_flops``."""
    steps, others = split_rows(rows)
    split = split_job(make_frame(steps, t0=T0), make_frame(others, t0=T0), GoodputConfig(),
                      np.full(len(steps), step_flops))
    return build_job_ledger(parse_inventory(inventory).jobs["job-a"], split, inputs, "palm", EconomicsConfig())


def test_ledger_figures_worked_by_hand() -> None:
    # 2 ranks x 3 back-to-back 10 s steps (0..30 s); each rank's step declares peak x 10 / 3 FLOPs:
    # MFU = 2 x (peak x 10 / 3) / (peak x 2 x 10) = 1/3 -> the timeline's 4 digits: 0.3333.
    peak = 989e12
    rows: list[Row] = [(r, k, "train_step", 10.0 * k, 10.0 * k + 10) for r in (0, 1) for k in range(3)]
    inputs = JobInputs(2, peak, 2.0, energy_j=7.2e6, low_util_s=30.0, util_observed_s=120.0)
    led = _pure_ledger(rows, peak * 10 / 3, inputs)
    assert led.mfu == pytest.approx(1 / 3)
    assert [v for _, v in led.mfu_timeline(points=1)] == [0.3333]
    # one bin is labelled by its first step's start, T0; three bins by each step's
    assert [t for t, _ in led.mfu_timeline(points=1)] == [to_rfc3339(T0)]
    assert [t for t, _ in led.mfu_timeline(points=3)] == [to_rfc3339(T0 + 10.0 * k) for k in range(3)]
    # cost = 2 GPUs x 30 s / 3600 x $2 = $1/30; every second is a productive step (goodput 1), so
    # a useful GPU-hour costs the price, $2; 7.2 MJ = 2 kWh; 30 of 120 s under the threshold: 0.25.
    assert led.cost == pytest.approx(1 / 30)
    assert led.cost_per_useful_gpu_h() == pytest.approx(2.0)
    out = led.to_json()
    assert out["energy_kwh"] == 2.0
    # 1 kWh = 3.6e6 J exactly, reported to 6 significant digits: 3,600,017.64 J = 1.0000049 kWh
    # -> 1.0 and 3,600,018.36 J = 1.0000051 kWh -> 1.00001 (a constant one joule off either way,
    # 3,599,999 or 3,600,001, moves one of them across the rounding edge)
    assert dataclasses.replace(led, energy_j=3_600_017.64).to_json()["energy_kwh"] == 1.0
    assert dataclasses.replace(led, energy_j=3_600_018.36).to_json()["energy_kwh"] == 1.00001
    assert led.waste_rate == 0.25
    # 3 steps x 2 ranks x peak x 10 / 3 = 1.978e16 FLOPs = 19.78 PFLOP: 7.2e6 / 19.78 J per PFLOP
    assert out["energy_j_per_effective_pflop"] == pytest.approx(7.2e6 / 19.78, rel=1e-6)
    # half a PFLOP: 14.4e6 J per PFLOP; none: no figure (not energy / 0)
    half = np.array([5e14, np.nan, np.nan])
    assert dataclasses.replace(led, step_flops=half).to_json()["energy_j_per_effective_pflop"] == 14.4e6
    assert dataclasses.replace(led, step_flops=half * np.nan).to_json()["energy_j_per_effective_pflop"] is None
    assert dataclasses.replace(led, step_flops=half).cost_per_effective_pflop() == pytest.approx((1 / 30) / 0.5)
    # the inputs and the ledger are values: they cannot change
    with pytest.raises(dataclasses.FrozenInstanceError):
        inputs.n_gpus = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        led.mfu = 0.0  # type: ignore[misc]
    # no productive time: no useful GPU-hour to price (not cost / 0)
    assert dataclasses.replace(led, goodput=0.0).cost_per_useful_gpu_h() is None
    # forecast: 3 steps x 1000 tokens done of 1e6; the Monte Carlo quantiles are ordered and,
    # with an uncertain rate and interruptions, distinct: p10 < p50 < p90 for time and cost.
    fc = out["forecast"]
    assert fc["remaining_tokens"] == pytest.approx(1e6 - 3000)
    assert fc["finish_p10"] < fc["finish"] < fc["finish_p90"]
    assert fc["cost_p10"] < fc["cost"] < fc["cost_p90"]
    # GPU-hours per category: all 2 x 30 GPU-seconds are compute = 60 / 3600 = 0.0166667 h
    assert out["badput_gpu_h"]["compute"] == 0.0166667
    assert sum(out["badput_gpu_h"].values()) == 0.0166667


def test_no_flops_no_peak_no_time_give_none_not_a_division() -> None:
    peak = 989e12
    rows: list[Row] = [(r, k, "train_step", 10.0 * k, 10.0 * k + 10) for r in (0, 1) for k in range(3)]
    led = _pure_ledger(rows, peak, JobInputs(2, peak, 2.0))
    # 1 PFLOP = 1e15 FLOPs: 3 steps x 2 ranks x 989e12 = 5.934e15 FLOPs = 5.934 PFLOP (exactly)
    assert led.effective_pflop == 5.934
    # no FLOPs known: no effective PFLOP, so no cost per PFLOP (not cost / 0)
    assert dataclasses.replace(led, step_flops=np.full(3, np.nan)).cost_per_effective_pflop() is None
    # no peak: neither MFU nor effective MFU
    no_peak = _pure_ledger(rows, peak, JobInputs(2, None, 2.0))
    assert (no_peak.mfu, no_peak.effective_mfu) == (None, None)
    # steps of no duration (the whole job one instant): no GPU time to divide by
    flat: list[Row] = [(r, 0, "train_step", 5.0, 5.0) for r in (0, 1)]
    zero = _pure_ledger(flat, peak, JobInputs(2, peak, 2.0))
    assert (zero.mfu, zero.effective_mfu) == (None, None)


def test_full_recompute_without_a_shape_is_four_thirds() -> None:
    # Declared FLOPs per token (no shape to count the recomputed forward from): full activation
    # recomputation runs the forward twice, 4 passes' worth instead of 3 (forward + 2 x backward).
    inv = parse_inventory(INVENTORY.replace("model: {params: 1.0e9}", "model: {params: 1.0e9, flops_per_token: 6.0e9}\n"
                                            "    recompute: full"))
    assert hfu_ratio(inv.jobs["job-a"], "palm") == pytest.approx(4 / 3)


def test_an_interruption_before_the_forecast_window_takes_no_time_from_it() -> None:
    # 2 ranks: steps 0..9 over 0..100 s, a restart (init 100..200 s), steps 10..89 over 200..1000 s.
    # The gap is a failure (100 s > 3 x 10 s, holding an init), before the 600 s forecast window
    # [400, 1000]: it excludes nothing. 60 steps end inside it, 1000 tokens each: 100 tokens/s.
    # Failure time per rank per interruption: the 100 s gap (with one rank or two alike).
    peak = 989e12
    for ranks in ((0, 1), (0,)):
        rows: list[Row] = [(r, k, "train_step", 10.0 * k, 10.0 * k + 10) for r in ranks for k in range(10)]
        rows += [(r, -1, "init", 100.0, 200.0) for r in ranks]
        rows += [(r, k, "train_step", 100.0 + 10.0 * k, 110.0 + 10.0 * k) for r in ranks for k in range(10, 90)]
        led = _pure_ledger(rows, peak, JobInputs(2, peak, 2.0))
        assert led.split.interruptions == [(T0 + 100.0, T0 + 200.0)]
        assert led.forecast is not None and led.forecast.tokens_per_s == pytest.approx(100.0)
        assert led.forecast.downtime_per_interruption_s == pytest.approx(100.0)
        # 90 steps: the MFU timeline has its default 60 bins
        assert len(led.mfu_timeline()) == 60
        # the forecast is forecast_finish of the inputs worked out here: now = the end, 1e6 - 90 x
        # 1000 tokens left at 100 tokens/s, sd 0 (12 steps end in each 120 s block: 100 tokens/s
        # each), 1 interruption of 100 s, 2 GPUs x 1000 s = 0.5556 GPU-hours observed, $2/GPU-h
        assert led.forecast == forecast_finish(T0 + 1000.0, 910_000.0, 100.0, 0.0, 1, 2 * 1000.0 / 3600.0, 2, 100.0,
                                               2.0, EconomicsConfig())


def test_selective_recompute_ratio_from_the_shape() -> None:
    # PaLM with N = 1e9, L = 2, hidden = 100, T = 10 (L x hidden x T = 2000): model FLOPs per token
    # 6N + 12 x 2000 = 6e9 + 24e3, selective recompute hardware 6N + 16 x 2000 = 6e9 + 32e3.
    inv = parse_inventory(INVENTORY.replace("model: {params: 1.0e9}",
                                            "model: {params: 1.0e9, layers: 2, hidden: 100, seq_len: 10}\n"
                                            "    recompute: selective"))
    assert hfu_ratio(inv.jobs["job-a"], "palm") == pytest.approx((6e9 + 32e3) / (6e9 + 24e3), rel=1e-12)


def test_sub_second_steps_still_have_an_mfu() -> None:
    # One 0.25 s step on 2 ranks (0.5 GPU-seconds), each declaring peak x 0.125 FLOPs:
    # MFU = 2 x peak x 0.125 / (peak x 0.5) = 0.5, and over the 0.25 s wall the same.
    peak = 989e12
    led = _pure_ledger([(r, 0, "train_step", 0.0, 0.25) for r in (0, 1)], peak * 0.125, JobInputs(2, peak, 2.0))
    assert led.mfu == pytest.approx(0.5) and led.effective_mfu == pytest.approx(0.5)
    # without a price: no cost and no forecast (its cost needs one)
    no_price = _pure_ledger([(r, 0, "train_step", 0.0, 0.25) for r in (0, 1)], peak * 0.125, JobInputs(2, peak, None))
    assert no_price.cost is None and no_price.forecast is None
    # utilisation never observed (0 s): no waste rate, not 30 / 0
    unseen = _pure_ledger([(r, 0, "train_step", 0.0, 0.25) for r in (0, 1)], peak * 0.125,
                          JobInputs(2, peak, 2.0, low_util_s=30.0, util_observed_s=0.0))
    assert unseen.waste_rate is None


def test_downtime_per_interruption_counts_lost_progress() -> None:
    # One rank: steps 0..4 over 0..50 s; a restart (init 50..100) and a rollback to step 3 (steps
    # 3..9 over 100..170); a second restart (init 170..220) and steps 10..69 over 220..820.
    # Failure downtime: the two 50 s gaps = 100 s; lost progress: the first runs of steps 3, 4
    # (30..50) = 20 s; per interruption: (100 + 20) / 1 rank / 2 = 60 s.
    peak = 989e12
    rows: list[Row] = [(0, k, "train_step", 10.0 * k, 10.0 * k + 10) for k in range(5)]
    rows += [(0, -1, "init", 50.0, 100.0), (0, -1, "init", 170.0, 220.0)]
    rows += [(0, k, "train_step", 70.0 + 10.0 * k, 80.0 + 10.0 * k) for k in range(3, 10)]
    rows += [(0, k, "train_step", 120.0 + 10.0 * k, 130.0 + 10.0 * k) for k in range(10, 70)]
    led = _pure_ledger(rows, peak, JobInputs(1, peak, 2.0))
    assert led.split.interruptions == [(T0 + 50.0, T0 + 100.0), (T0 + 170.0, T0 + 220.0)]
    assert led.split.gpu_s["failure_downtime"] == pytest.approx(100.0)
    assert led.split.gpu_s["failure_lost_progress"] == pytest.approx(20.0)
    assert led.forecast is not None and led.forecast.downtime_per_interruption_s == pytest.approx(60.0)
