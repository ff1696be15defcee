"""Invariants of the profile's interval algebra, against brute force on a grid of unit cells."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from suanli.analysis.profile import ProfileConfig, intersection_length, merge, rank_profile, union_length
from suanli.ingest.kineto import KinetoTrace

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NAMES = {"compute": "ampere_sgemm_128x64_nn", "communication": "ncclKernel_AllReduce_RING_LL_Sum_float",
         "memory": "Memcpy DtoH (Device -> Pinned)", "other": "cudaStreamSync_helper", "wait": "event_wait"}

intervals = st.lists(st.tuples(st.integers(0, 50), st.integers(0, 12)), max_size=25)
events = st.lists(st.tuples(st.sampled_from(sorted(NAMES)), st.integers(0, 50), st.integers(0, 12),
                            st.integers(0, 3)), min_size=1, max_size=25)


def _cells(pairs: list[tuple[int, int]]) -> set[int]:
    """The unit cells [t, t+1) that the intervals [start, start + length) cover."""
    return {t for start, length in pairs for t in range(start, start + length)}


def _arrays(pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    s = np.array([p[0] for p in pairs], dtype=float)
    return s, s + np.array([p[1] for p in pairs], dtype=float)


@SETTINGS
@given(intervals)
def test_union_is_the_covered_cells(pairs: list[tuple[int, int]]) -> None:
    assert union_length(*_arrays(pairs)) == len(_cells(pairs))
    s, e = merge(*_arrays(pairs))
    assert (e > s).all() and (s[1:] > e[:-1]).all()          # disjoint, sorted, not touching
    assert {t for a, b in zip(s, e, strict=True) for t in range(int(a), int(b))} == _cells(pairs)


@SETTINGS
@given(intervals, intervals)
def test_intersection_is_the_cells_both_cover(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> None:
    assert intersection_length(_arrays(a), _arrays(b)) == len(_cells(a) & _cells(b))


def _trace(evs: list[tuple[str, int, int, int]]) -> KinetoTrace:
    names = tuple(sorted(NAMES.values()))
    n = len(evs)
    i64 = np.int64
    return KinetoTrace(
        path="prop.json", rank=0, rank_source="distributedInfo", world_size=1, names=names, cats=("kernel",),
        ts_us=np.array([e[1] for e in evs], dtype=float), dur_us=np.array([e[2] for e in evs], dtype=float),
        name_id=np.array([names.index(NAMES[e[0]]) for e in evs], dtype=np.int32),
        cat_id=np.zeros(n, dtype=np.int32), stream=np.array([e[3] for e in evs], dtype=i64),
        device=np.zeros(n, dtype=i64), correlation=np.full(n, -1, dtype=i64), event_no=np.arange(n, dtype=i64),
        launch_corr=np.zeros(0, dtype=i64), launch_ts_us=np.zeros(0), step_ts_us=np.zeros(0),
        step_dur_us=np.zeros(0), step_no=np.zeros(0, dtype=i64), fractional_ts=False, events=n)


@SETTINGS
@given(events)
def test_split_matches_brute_force_and_sums_to_one(evs: list[tuple[str, int, int, int]]) -> None:
    r = rank_profile(_trace(evs), ProfileConfig())
    work = [e for e in evs if e[0] != "wait"]
    cells = {k: _cells([(s, d) for kind, s, d, _ in work if kind == k]) for k in NAMES}
    busy = _cells([(s, d) for _, s, d, _ in work])
    span = (max(s + d for _, s, d, _ in work) - min(s for _, s, d, _ in work)) if work else 0
    got = {k: getattr(r, k) * 1e6 for k in ("span_s", "busy_s", "compute_s", "communication_s",
                                             "exposed_comm_s", "other_s", "idle_s")}
    assert got == pytest.approx({
        "span_s": span, "busy_s": len(busy), "compute_s": len(cells["compute"]),
        "communication_s": len(cells["communication"]),
        "exposed_comm_s": len(cells["communication"] - cells["compute"]),
        "other_s": len(busy - cells["compute"] - cells["communication"]), "idle_s": span - len(busy)},
        rel=1e-12, abs=1e-9)
    if r.fractions is None:
        assert span == 0
        return
    f = r.fractions
    assert all(0.0 <= v <= 1.0 for v in f.values())
    assert abs(f["compute"] + f["exposed_communication"] + f["other"] + f["idle"] - 1.0) < 1e-12
    assert abs(f["non_compute"] - f["exposed_communication"] - f["other"]) < 1e-12
    assert f["exposed_communication"] <= f["communication"]
