"""median / nanmedian give NumPy's numbers bit for bit, signed zeros, infinities and NaN included."""

from __future__ import annotations

import struct
import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from suanli.analysis.median import median, nanmedian
from tests.conftest import examples

FAST = settings(max_examples=examples(400), deadline=None, derandomize=True)

# few distinct values, so ties, signed zeros and the middle pair landing on infinities are common
_EDGY = st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.5, 1e308, -1e308, float("inf"), float("-inf"), 5e-324])
_VALUE = st.one_of(_EDGY, st.floats(allow_nan=False), st.just(float("nan")))


def _bits(x: float) -> bytes:
    return struct.pack("<d", x) if x == x else b"nan"        # any NaN is NaN: NumPy keeps the payload


def _numpy(fn: str, values: np.ndarray) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)    # all-NaN / empty: NumPy warns, then says NaN
        return float(getattr(np, fn)(values))


def test_median_by_hand() -> None:
    assert median(np.array([3.0, 1.0, 2.0])) == 2.0
    assert median(np.array([4.0, 1.0, 3.0, 2.0])) == 2.5
    assert median(np.array([1.0, np.nan, 3.0])) != median(np.array([1.0, np.nan, 3.0]))   # NaN
    assert nanmedian(np.array([1.0, np.nan, 3.0])) == 2.0
    assert median(np.array([], dtype=np.float64)) != median(np.array([], dtype=np.float64))
    assert nanmedian(np.array([np.nan, np.nan])) != nanmedian(np.array([np.nan]))
    assert _bits(median(np.array([-0.0]))) == _bits(0.0)          # np.mean sums from 0.0
    assert _bits(median(np.array([-0.0, -0.0]))) == _bits(0.0)
    assert median(np.array([1, 2, 3, 10], dtype=np.int64)) == 2.5
    assert median(np.array([np.inf, -np.inf])) != median(np.array([np.inf, -np.inf]))     # inf - inf


@FAST
@given(st.lists(_VALUE, max_size=30))
def test_median_is_numpys(values: list[float]) -> None:
    a = np.array(values, dtype=np.float64)
    before = a.copy()
    assert _bits(median(a)) == _bits(_numpy("median", a))
    assert _bits(nanmedian(a)) == _bits(_numpy("nanmedian", a))
    assert np.array_equal(a, before, equal_nan=True)                 # the input is not partitioned in place


@FAST
@given(st.lists(st.integers(-2**62, 2**62), max_size=30))
def test_integers_are_numpys(values: list[int]) -> None:
    a = np.array(values, dtype=np.int64)
    assert _bits(median(a)) == _bits(_numpy("median", a))
    assert _bits(nanmedian(a)) == _bits(_numpy("nanmedian", a))


def test_other_shapes_go_to_numpy() -> None:
    f32 = np.array([1.5, 2.25, 7.0, 0.1], dtype=np.float32)
    assert _bits(median(f32)) == _bits(float(np.median(f32)))
    assert _bits(nanmedian(f32)) == _bits(float(np.nanmedian(f32)))
    assert median([3.0, 1.0, 2.0]) == 2.0                         # a list
    assert median(np.array([[1.0, 5.0], [3.0, 4.0]])) == 3.5      # the whole 2-D array, as np.median
