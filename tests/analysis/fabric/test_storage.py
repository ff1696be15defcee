"""storage_slow: every job reading one storage slows in data_load and its latency rises."""

from __future__ import annotations

import numpy as np

from suanli.analysis.fabric.storage import data_load_per_step, judge_storage
from suanli.store.api import SpanFrame
from tests.analysis.fabric.test_stragglers import job_frame

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
