"""The shared peer median: NumPy's nanmedian column by column, and peers interpolated at the unit's times."""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from suanli.analysis.peer_median import column_nanmedian, peer_median_at

VALUES = st.one_of(st.just(np.nan), st.floats(-1e6, 1e6), st.sampled_from([np.inf, -np.inf]))


@settings(max_examples=300, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, max_side=9), elements=VALUES))
def test_column_nanmedian_is_numpys_nanmedian(stack: np.ndarray) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.nanmedian(stack, axis=0)
    np.testing.assert_array_equal(column_nanmedian(stack), want)


def test_column_nanmedian_by_hand() -> None:
    stack = np.array([[1.0, np.nan, 5.0, np.nan], [3.0, 2.0, np.nan, np.nan], [10.0, np.nan, 7.0, np.nan]])
    # columns: {1, 3, 10} -> 3; {2} -> 2; {5, 7} -> 6; nothing -> NaN
    np.testing.assert_array_equal(column_nanmedian(stack), [3.0, 2.0, 6.0, np.nan])
    empty = column_nanmedian(np.empty((0, 3)))
    assert empty.shape == (3,) and np.isnan(empty).all()


def test_peers_are_interpolated_at_the_units_times_and_need_two_points() -> None:
    ts = np.array([0.0, 5.0, 10.0, 20.0])
    a = (np.array([0.0, 10.0]), np.array([0.0, 10.0]))              # 0, 5, 10, beyond its end: NaN
    b = (np.array([10.0, 0.0]), np.array([30.0, 10.0]))             # out of time order: 10, 20, 30, NaN
    c = (np.array([0.0, 20.0]), np.array([100.0, 100.0]))           # 100 everywhere
    lone = (np.array([0.0, 5.0]), np.array([1e9, np.nan]))          # one finite point: not a peer
    got = peer_median_at(ts, [a, b, c, lone])
    # medians: {0, 10, 100} -> 10; {5, 20, 100} -> 20; {10, 30, 100} -> 30; {100} -> 100
    np.testing.assert_array_equal(got, [10.0, 20.0, 30.0, 100.0])
    assert np.isnan(peer_median_at(ts, [lone])).all()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.5, 30.0), min_size=2, max_size=12), st.data())
def test_peers_at_the_units_own_instants_give_what_interpolation_gives(gaps: list[float], data: st.DataObject) -> None:
    # Peers scraped at the unit's instants (a copy of ts, some with a NaN or an inf), shifted by a
    # little, or sparser: the median must be np.nanmedian over np.interp of each peer's finite
    # points, whichever path a peer takes.
    ts = np.cumsum(gaps)
    peers = []
    for kind in data.draw(st.lists(st.sampled_from(["same", "same_gap", "shifted", "sparse"]), min_size=1, max_size=6)):
        pts = ts.copy() if kind.startswith("same") else (ts + 0.25 if kind == "shifted" else ts[::2])
        pv = np.array(data.draw(st.lists(st.floats(-1e3, 1e3), min_size=len(pts), max_size=len(pts))))
        if kind == "same_gap":
            pv[data.draw(st.integers(0, len(pv) - 1))] = data.draw(st.sampled_from([np.nan, np.inf]))
        peers.append((pts, pv))
    rows = []
    for pts, pv in peers:
        ok = np.isfinite(pv)
        if ok.sum() >= 2:
            rows.append(np.interp(ts, pts[ok], pv[ok], left=np.nan, right=np.nan))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.nanmedian(np.vstack(rows), axis=0) if rows else np.full(len(ts), np.nan)
    np.testing.assert_array_equal(peer_median_at(ts, peers), want)
