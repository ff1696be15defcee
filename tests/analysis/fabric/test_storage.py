"""storage_slow: every job reading one storage slows in data_load and its latency rises."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import suanli.analysis.fabric.storage as storage
from suanli.analysis.fabric.storage import data_load_per_step, judge_storage
from suanli.store.api import SpanFrame
from tests.analysis.fabric.test_stragglers import job_frame
from tests.conftest import examples

T = np.arange(40) * 20.0


def _load(slow_from: int | None, base_s: float = 0.1, factor: float = 4.0, seed: int = 0):  # type: ignore[no-untyped-def]
    v = base_s * (1 + 0.02 * np.random.default_rng(seed).standard_normal(40))
    if slow_from is not None:
        v[slow_from:] *= factor
    return T, v


def test_every_job_slow_and_latency_up_is_storage_slow() -> None:
    lat = _load(20, base_s=0.001, factor=10.0, seed=3)
    v = judge_storage("lustre-01", {"a": _load(20, seed=1), "b": _load(22, seed=2)}, lat)
    assert v.slow and v.jobs_slowed == ("a", "b") and v.jobs_fine == ()
    assert v.onset_s == T[20]                      # the earliest onset: latency and job a at step 20
    assert v.latency_change is not None and abs(v.latency_change.after / 0.001 - 10.0) < 0.5


def test_one_job_slow_is_not_the_storage() -> None:
    lat = _load(None, base_s=0.001, seed=3)
    v = judge_storage("lustre-01", {"a": _load(20, seed=1), "b": _load(None, seed=2)}, lat)
    assert not v.slow and v.jobs_slowed == ("a",) and v.jobs_fine == ("b",)


def test_jobs_slow_without_latency_rise_is_not_storage_when_latency_is_measured() -> None:
    v = judge_storage("nfs", {"a": _load(20, seed=1), "b": _load(20, seed=2)}, _load(None, 0.001, seed=4))
    assert not v.slow


def test_without_latency_series_every_reader_must_agree() -> None:
    assert judge_storage("nfs", {"a": _load(20, seed=1), "b": _load(20, seed=2)}, None).slow
    assert not judge_storage("nfs", {"a": _load(20, seed=1), "b": _load(None, seed=2)}, None).slow
    # a single reader is the only witness: its 4x rise (>= min_increase_alone 2x) is enough
    assert judge_storage("nfs", {"a": _load(20, seed=1)}, None).slow


def test_data_load_per_step_median_over_ranks() -> None:
    f = job_frame(4, 3)
    # job_frame has no data_load spans: nothing
    assert len(data_load_per_step(f)[0]) == 0
    name = f.name.copy()
    name[name == "optimizer"] = "data_load"        # optimizer spans: 0.05 s x (1 +- 1 %) per rank
    g = SpanFrame(f.job_id, f.rank, f.step, name, f.start_s, f.end_s, f.gpu_id, f.node_id, f.trace_id,
                  f.span_id, f.parent_id)
    t, v = data_load_per_step(g)
    # the step's time is its first data_load start: after forward 0.4 + backward 0.6 + allreduce 0.2
    assert np.allclose(t, np.array([0.0, 2.0, 4.0]) + 1.2, atol=0.05)
    assert np.allclose(v, 0.05, rtol=0.03)


@settings(max_examples=examples(150), deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(-1, 6), st.sampled_from(["data_load", "forward"]),
                          st.sampled_from([0.0, 0.5, 1.0, 7.25, 1e9]), st.sampled_from([0.0, 0.1, 0.1, 0.3, 2.0, np.inf])),
                max_size=40),
       st.booleans())
def test_data_load_per_step_is_each_steps_first_start_and_median(
        rows: list[tuple[int, str, float, float]], radix: bool) -> None:
    # against the plain definition, by either grouping (16-bit radix, or one sort by step and duration)
    step = np.array([r[0] for r in rows], dtype=np.int64)
    name = np.array([r[1] for r in rows], dtype=object)
    start = np.array([r[2] for r in rows], dtype=np.float64)
    end = start + np.array([r[3] for r in rows], dtype=np.float64)
    n = len(rows)
    none = np.full(n, None, dtype=object)
    frame = SpanFrame(np.full(n, "j", dtype=object), np.zeros(n, dtype=np.int64), step, name, start, end,
                      none, none, none, none, none)
    ok = (name == "data_load") & (step >= 0) & np.isfinite(end)
    want_steps = sorted(set(step[ok].tolist()))
    before = storage._RADIX_STEPS
    storage._RADIX_STEPS = before if radix else 0
    try:
        t, v = data_load_per_step(frame)
    finally:
        storage._RADIX_STEPS = before
    assert t.tolist() == [float(start[ok & (step == k)].min()) for k in want_steps]
    assert v.tolist() == [float(np.median((end - start)[ok & (step == k)])) for k in want_steps]


def test_data_load_per_step_with_thousands_of_ranks_a_step() -> None:
    # groups big enough that a partition does not sort them whole: both middle values must be
    # put in place (an even count takes the mean of two)
    rng = np.random.default_rng(5)
    n = 3 * 2_000
    step = np.repeat(np.array([4, 9, 2]), [2_000, 1_999, 2_001])
    start = rng.uniform(0.0, 100.0, n)
    end = start + rng.exponential(0.2, n)
    none = np.full(n, None, dtype=object)
    frame = SpanFrame(none, np.zeros(n, dtype=np.int64), step, np.full(n, "data_load", dtype=object), start,
                      end, none, none, none, none, none)
    t, v = data_load_per_step(frame)
    assert t.tolist() == [float(start[step == k].min()) for k in (2, 4, 9)]
    assert v.tolist() == [float(np.median((end - start)[step == k])) for k in (2, 4, 9)]
