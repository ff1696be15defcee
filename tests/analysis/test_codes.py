"""int_codes is np.unique(return_inverse=True) without the sort, for any values."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import suanli.analysis.codes as codes
from suanli.analysis.codes import int_codes
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


@FAST
@given(st.lists(st.integers(-3, 40), max_size=20), st.lists(st.integers(0, 40), max_size=20), st.integers(1, 64))
def test_distinct_ints_are_np_unique_of_both(a: list[int], b: list[int], top: int) -> None:
    x, y = np.array(a, dtype=np.int64), np.array(b, dtype=np.int64)
    before = codes.DENSE_TOP
    codes.DENSE_TOP = top
    try:
        got = codes.distinct_ints(x, y)
    finally:
        codes.DENSE_TOP = before
    assert got.tolist() == np.unique(np.concatenate([x, y])).tolist() and got.dtype == np.int64
