"""Cases that tell right from almost-right in the ledger (issue 20): nested intervals, a fully
hidden all-reduce, uneven steps for the MFU aggregate, and tokens that come from spans with tp > 1.

Every expected value is worked out in the comments from the spans written here.
"""

from __future__ import annotations

import numpy as np
import pytest

from suanli.analysis.ledger import LedgerConfig, analyze
from suanli.analysis.ledger.goodput import GoodputConfig, JobSplit, split_job
from suanli.analysis.ledger.intervals import group_union_s, merge_groups
from suanli.analysis.profile.intervals import merge, union_length
from suanli.ingest.records import Span
from suanli.inventory import parse_inventory
from suanli.store.duck import DuckStore
from tests.analysis.ledger.test_ledger_frames import Row, make_frame, split_rows

T0 = 1.7e9
PEAK = 989e12                      # H100-SXM bf16 dense peak, FLOP/s (the inventory below)


def _split(rows: list[Row]) -> JobSplit:
    steps, others = split_rows(rows)
    return split_job(make_frame(steps, t0=T0), make_frame(others, t0=T0), GoodputConfig())


# --- interval union --------------------------------------------------------------------------

def test_a_nested_interval_does_not_cut_the_merged_run_short() -> None:
    # [0, 10) holds [2, 4) entirely; [12, 13) is apart. Sorted by start the run is [0,10), [2,4):
    # its end is max(10, 4) = 10, not the last interval's 4. Union = 10 + 1 = 11.
    s, e = np.array([0.0, 2.0, 12.0]), np.array([10.0, 4.0, 13.0])
    ms, me = merge(s, e)
    assert ms.tolist() == [0.0, 12.0] and me.tolist() == [10.0, 13.0]
    assert union_length(s, e) == 11.0
    g = np.zeros(3, dtype=np.int64)
    _gg, gs, ge = merge_groups(g, s, e)
    assert gs.tolist() == [0.0, 12.0] and ge.tolist() == [10.0, 13.0]
    # two groups, the nested one in group 1: group 0 = [0,1) -> 1; group 1 = [5,20) ∪ [6,7) -> 15
    two = group_union_s(np.array([0, 1, 1]), np.array([0.0, 5.0, 6.0]), np.array([1.0, 20.0, 7.0]), 2)
    assert two.tolist() == [1.0, 15.0]


def test_a_short_group_after_a_long_one_is_merged_on_its_own() -> None:
    # Group 0 = [0, 10) holding [2, 4); group 1 = [0, 0.5) and [0.7, 1.0), which do not touch.
    # The per-group running max must not carry group 0's end (10) into group 1: group 1 stays two
    # intervals, union 0.5 + 0.3 = 0.8 (carried over, [0.7, 1.0) would join [0, 0.5): 1.0), and
    # group 0 is one interval of 10. The same with every time 10 s before 0 (starts < 0).
    for t0 in (0.0, -10.0):
        g = np.array([0, 0, 1, 1])
        s, e = np.array([0.0, 2.0, 0.0, 0.7]) + t0, np.array([10.0, 4.0, 0.5, 1.0]) + t0
        mg, ms, me = merge_groups(g, s, e)
        assert mg.tolist() == [0, 1, 1]
        assert ms.tolist() == s[[0, 2, 3]].tolist() and me.tolist() == e[[0, 2, 3]].tolist()
        assert group_union_s(g, s, e, 2).tolist() == pytest.approx([10.0, 0.8])


def test_touching_intervals_are_joined() -> None:
    # [0, 1) and [1, 2) touch (half-open): one merged interval [0, 2), as profile's merge does.
    _g, s, e = merge_groups(np.zeros(2, dtype=np.int64), np.array([0.0, 1.0]), np.array([1.0, 2.0]))
    assert s.tolist() == [0.0] and e.tolist() == [2.0]
    assert merge(np.array([0.0, 1.0]), np.array([1.0, 2.0]))[1].tolist() == [2.0]


def test_an_allreduce_hidden_inside_backward_exposes_nothing() -> None:
    # A 12 s step: data_load 0..1, forward 1..4, backward 4..9, optimizer 11..12; the all-reduce
    # runs 5..7, inside backward and ending before it. Compute union = 3 + 5 + 1 = 9 s;
    # compute ∪ comm = [1, 9) ∪ [11, 12) = 9 s as well, so exposed communication = 9 - 9 = 0
    # (the bug "run end = last interval's end" makes [1, 7) of compute ∪ comm: 7 s, exposed -2 s).
    # data 1 s (0..1); other = 12 - 10 = 2 s (9..11).
    rows: list[Row] = [(0, 1, "train_step", 0, 12), (0, -1, "data_load", 0, 1),
                       (0, -1, "forward", 1, 4), (0, -1, "backward", 4, 9),
                       (0, -1, "allreduce", 5, 7), (0, -1, "optimizer", 11, 12)]
    got = _split(rows)
    assert got.gpu_s["compute"] == pytest.approx(9.0)
    assert got.gpu_s["exposed_communication"] == pytest.approx(0.0)
    assert got.gpu_s["straggler_wait"] == pytest.approx(0.0)
    assert got.gpu_s["data_loading"] == pytest.approx(1.0)
    assert got.gpu_s["step_other"] == pytest.approx(2.0)
    assert all(0.0 <= v <= 1.0 for v in got.shares().values())


def test_a_data_load_nested_in_forward_is_compute_not_data() -> None:
    # forward 0..10 holds data_load 2..3 and an all-reduce 4..6: compute ∪ comm ∪ data = [0, 10)
    # -> compute 10, exposed 0, data 0, other 0 of a 10 s step.
    rows: list[Row] = [(0, 1, "train_step", 0, 10), (0, -1, "forward", 0, 10),
                       (0, -1, "data_load", 2, 3), (0, -1, "allreduce", 4, 6)]
    got = _split(rows)
    assert got.gpu_s["compute"] == pytest.approx(10.0)
    assert got.gpu_s["exposed_communication"] == pytest.approx(0.0)
    assert got.gpu_s["data_loading"] == pytest.approx(0.0)
    assert got.gpu_s["step_other"] == pytest.approx(0.0)


# --- MFU aggregate and tokens from spans (through the real store) -----------------------------

def _inventory(parallelism: str, ranks: int, tokens_per_step: str = "") -> str:
    gpus = "\n".join(f"          - {{index: {i}, uuid: GPU-{i}, model: H100-SXM}}" for i in range(ranks))
    rank_lines = "\n".join(f"      - {{rank: {i}, gpu: node-001/gpu{i}}}" for i in range(ranks))
    return f"""
cluster: tiny
gpu_models:
  H100-SXM: {{bf16_tflops: 989, gpu_hour_price: 2.0}}
racks:
  - id: rack-01
    nodes:
      - id: node-001
        gpus:
{gpus}
jobs:
  - id: job-a
    model: {{params: 1.0e9}}
    precision: bf16
    parallelism: {parallelism}
    ranks:
{rank_lines}
{tokens_per_step}
"""


def _span(rank: int, a: float, b: float, step: int, attrs: dict[str, object]) -> Span:
    return Span(trace_id=f"t{step}", span_id=f"{rank}-{step}", parent_id=None, name="train_step",
                start_s=T0 + a, end_s=T0 + b, job_id="job-a", rank=rank, step=step,
                gpu_id=f"node-001/gpu{rank}", node_id="node-001", attrs=attrs)


def _store(text: str, spans: list[Span]) -> DuckStore:
    store = DuckStore(None)
    store.put_inventory(text, "inventory.yaml")
    store.add_spans(spans)
    store.flush()
    return store


def test_mfu_is_total_flops_over_total_gpu_time_on_uneven_steps() -> None:
    # 2 ranks (dp 2). Step 0 lasts 10 s, step 1 lasts 30 s; each rank declares 4.945e15 model
    # FLOPs per step (= 0.5 x 989e12 x 10 s).
    #   step MFU: step 0 = 2 x 4.945e15 / (2 x 10 x 989e12) = 0.5,
    #             step 1 = 2 x 4.945e15 / (2 x 30 x 989e12) = 1/6.
    #   job MFU = sum FLOPs / sum GPU-time = 4 x 4.945e15 / (2 x 40 x 989e12) = 0.25
    #   (the mean of per-step MFU would be (0.5 + 1/6) / 2 = 1/3).
    text = _inventory("{dp: 2}", 2, "    tokens_per_step: 1000")
    f = {"train.model_flops": 4.945e15}
    spans = [_span(r, 0, 10, 0, f) for r in (0, 1)] + [_span(r, 10, 40, 1, f) for r in (0, 1)]
    (job,) = analyze(_store(text, spans), parse_inventory(text), config=LedgerConfig()).jobs
    assert job.flops_source == "spans"
    assert job.step_mfu.tolist() == pytest.approx([0.5, 1 / 6])
    assert job.mfu == pytest.approx(0.25)
    # no idle time: effective MFU over the wall (40 s x 2 GPUs) is the same 0.25
    assert job.effective_mfu == pytest.approx(0.25)


def test_tokens_from_spans_are_divided_by_tp_times_pp() -> None:
    # dp 2, tp 2: 4 ranks, no tokens_per_step. Each rank's step span says train.tokens = 1000:
    # the two tensor-parallel ranks of one replica see the same 1000 tokens, so a step trains
    # dp x 1000 = 2000 tokens = (sum over 4 ranks = 4000) / (tp x pp = 2).
    # 3 steps of 10 s -> 6000 tokens. FLOPs from the shape: 6N = 6e9 per token (PaLM, no shape
    # beyond N) -> 2000 x 6e9 = 1.2e13 per step; MFU = 1.2e13 / (4 GPUs x 10 s x 989e12).
    text = _inventory("{dp: 2, tp: 2}", 4)
    spans = [_span(r, 10.0 * k, 10.0 * k + 10, k, {"train.tokens": 1000}) for r in range(4) for k in range(3)]
    (job,) = analyze(_store(text, spans), parse_inventory(text), config=LedgerConfig()).jobs
    assert job.flops_source == "inventory"
    assert job.tokens == pytest.approx(6000.0)
    assert job.step_flops.tolist() == pytest.approx([1.2e13] * 3)
    assert job.mfu == pytest.approx(1.2e13 / (4 * 10 * PEAK))


@pytest.mark.parametrize(("parallelism", "n_ranks"), [("{tp: 2}", 2), ("{dp: 1}", 1)])
def test_tokens_from_spans_without_data_parallelism(parallelism: str, n_ranks: int) -> None:
    # dp 1: one replica. With tp 2 its two ranks each say 1000 tokens: 2000 / (tp x pp = 2) = 1000
    # per step; alone, one rank's 1000 / 1 = 1000. 3 steps -> 3000 tokens either way.
    text = _inventory(parallelism, n_ranks)
    spans = [_span(r, 10.0 * k, 10.0 * k + 10, k, {"train.tokens": 1000}) for r in range(n_ranks) for k in range(3)]
    (job,) = analyze(_store(text, spans), parse_inventory(text), config=LedgerConfig()).jobs
    assert job.tokens == pytest.approx(3000.0)
