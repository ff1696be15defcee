"""int_codes is np.unique(return_inverse=True) without the sort; _latest_rows is the sort-based
"each rank's latest span" it replaced, on any ranks and times (ties, -1 ranks, infinities, NaN)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import suanli.analysis.codes as codes
from suanli.analysis.codes import int_codes
from suanli.analysis.fabric.span_findings import _latest_rows
from tests.conftest import examples

FAST = settings(max_examples=examples(200), deadline=None, derandomize=True)


def test_codes_by_hand() -> None:
    uniq, inv = int_codes(np.array([7, 3, 7, 0, 3], dtype=np.int64))
    assert uniq.tolist() == [0, 3, 7] and inv.tolist() == [2, 1, 2, 0, 1]
    uniq, inv = int_codes(np.zeros(0, dtype=np.int64))
    assert uniq.tolist() == [] and inv.tolist() == []


@FAST
@given(st.lists(st.integers(-3, 40), max_size=40), st.integers(1, 64))
def test_codes_are_np_unique(values: list[int], top: int) -> None:
    # any table size: values at or above DENSE_TOP (or negative) take np.unique's own path
    v = np.array(values, dtype=np.int64)
    want_u, want_i = np.unique(v, return_inverse=True)
    before = codes.DENSE_TOP
    codes.DENSE_TOP = top
    try:
        got_u, got_i = int_codes(v)
    finally:
        codes.DENSE_TOP = before
    assert got_u.tolist() == want_u.tolist() and got_i.tolist() == want_i.reshape(-1).tolist()
    assert got_u.dtype == np.int64 and got_i.dtype == np.int64


def _latest_by_sorting(rank: np.ndarray, start: np.ndarray) -> tuple[list[int], list[int]]:
    order = np.argsort(start, kind="stable")[::-1]
    ranks, first = np.unique(rank[order], return_index=True)
    keep = ranks >= 0
    return ranks[keep].tolist(), order[first[keep]].tolist()


times = st.sampled_from([0.0, 1.0, 2.5, 2.5, 9.0, -np.inf, np.inf])


@FAST
@given(st.lists(st.tuples(st.integers(-1, 4), times), max_size=30), st.booleans())
def test_latest_rows_are_the_sorted_ones(rows: list[tuple[int, float]], with_nan: bool) -> None:
    rank = np.array([r for r, _ in rows], dtype=np.int64)
    start = np.array([t for _, t in rows], dtype=np.float64)
    if with_nan and len(rows):
        start[len(rows) // 2] = np.nan
    assert _latest_rows(rank, start) == _latest_by_sorting(rank, start)


def test_latest_rows_by_hand() -> None:
    # rank 0: latest start 5 twice (rows 1 and 3): the later row; rank 2: its only row; -1 ignored
    rank = np.array([0, 0, 2, 0, -1], dtype=np.int64)
    start = np.array([1.0, 5.0, 2.0, 5.0, 9.0])
    assert _latest_rows(rank, start) == ([0, 2], [3, 2])
