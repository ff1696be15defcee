"""Sample reads against a plain-Python model: series written in several commits, in any time
order, with repeated timestamps (the last write wins), some before the inventory named their
GPU (an alias of the same series once re-resolved), read back sorted by time, one value per timestamp, whichever way
``samples_of`` groups the rows (16-bit radix or a full sort) and however DuckDB's scan orders them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from suanli.ingest.records import SeriesKey
from suanli.store.duck import DuckStore


def _key(series: int, resolved: bool) -> SeriesKey:
    labels = (("a", str(series)), ("b", "x"))
    return SeriesKey("m", labels, "gpu", f"n/gpu{series}") if resolved else SeriesKey("m", labels, None, None)


def _resolve(key: SeriesKey) -> SeriesKey:
    return _key(int(dict(key.labels)["a"]), True)


writes = st.lists(st.lists(st.tuples(st.integers(0, 3), st.booleans(), st.integers(0, 12), st.integers(-5, 5)),
                           min_size=1, max_size=30), min_size=1, max_size=3)


@settings(max_examples=60, deadline=None)
@given(commits=writes, radix=st.booleans(), window=st.tuples(st.integers(-1, 6), st.integers(6, 13)))
def test_series_are_time_sorted_and_the_last_write_wins(commits: list[list[tuple[int, bool, int, int]]],
                                                        radix: bool, window: tuple[int, int]) -> None:
    import suanli.store.duck.reads as reads
    old = reads._RADIX_SERIES
    reads._RADIX_SERIES = old if radix else 0
    try:
        store = DuckStore(None)
        model: dict[int, dict[float, float]] = {}
        for commit in commits:
            for series, resolved, t, v in commit:            # one sample at a time: any time order
                store.add_samples(_key(series, resolved), [float(t)], [float(v)])
                model.setdefault(series, {})[float(t)] = float(v)
            store.flush()
        store.re_resolve(_resolve)
        lo, hi = window
        got = {int(dict(s.key.labels)["a"]): (s.ts.tolist(), s.values.tolist())
               for s in store.series("m", start=lo, end=hi)}
        want = {}
        for series, points in model.items():
            kept = sorted((t, v) for t, v in points.items() if lo <= t <= hi)
            if kept:
                want[series] = ([t for t, _ in kept], [v for _, v in kept])
        assert got == want
    finally:
        reads._RADIX_SERIES = old


@pytest.mark.parametrize("radix", [True, False])
def test_a_late_sample_in_one_series_leaves_the_others_in_order(radix: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the series with a sample written out of time order is sorted again; the rest keep
    their write order, which is already time order."""
    import suanli.store.duck.reads as reads
    if not radix:
        monkeypatch.setattr(reads, "_RADIX_SERIES", 0)
    store = DuckStore(None)
    store.add_samples(_key(2, False), [20.0], [-3.0])                # before the inventory named its GPU
    for t in range(50):
        for series in range(5):
            store.add_samples(_key(series, True), [float(t)], [float(series * 100 + t)])
    store.add_samples(_key(2, False), [10.5, 3.0], [-1.0, -2.0])     # late, and unresolved again
    store.flush()
    assert store.re_resolve(_resolve) == 1
    got = {int(dict(s.key.labels)["a"]): s for s in store.series("m")}
    assert got[2].ts.tolist() == sorted([*map(float, range(50)), 10.5])
    assert got[2].values[3] == -2.0 and got[2].values[11] == -1.0 and got[2].values[12] == 211.0
    assert got[2].values[21] == 220.0                                # written after -3.0: it wins
    for series in (0, 1, 3, 4):
        assert got[series].ts.tolist() == list(map(float, range(50)))
        assert got[series].values.tolist() == [float(series * 100 + t) for t in range(50)]
