"""Counter rates and increases against a brute-force reading of Prometheus' reset rule: walk the
finite samples in order; between two of them the increase is ``b - a`` when ``b >= a`` and ``b``
(the counter restarted from zero) when ``b < a``. Both the store's counter math
(:mod:`suanli.store.counters`) and the health analysis' (:func:`counter_delta`) must agree with it."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from suanli.analysis.health.events import counter_delta
from suanli.store.counters import counter_increase, counter_rate
from tests.conftest import examples

sample = st.one_of(st.integers(0, 1000).map(float), st.just(math.nan), st.just(math.inf))


def _brute(ts: list[float], vs: list[float]) -> list[tuple[float, float, float]]:
    """(time, increase, seconds since the previous finite sample) per finite sample after the first."""
    out: list[tuple[float, float, float]] = []
    prev: tuple[float, float] | None = None
    for t, v in zip(ts, vs, strict=True):
        if not (math.isfinite(v) and math.isfinite(t)):
            continue
        if prev is not None:
            out.append((t, v - prev[1] if v >= prev[1] else v, t - prev[0]))
        prev = (t, v)
    return out


@settings(max_examples=examples(200), deadline=None, derandomize=True)
@given(st.lists(sample, max_size=25), st.lists(st.sampled_from([0.0, 15.0, 30.0]), max_size=25))
def test_rate_and_increase_follow_the_reset_rule(vs: list[float], gaps: list[float]) -> None:
    n = min(len(vs), len(gaps))
    vs = vs[:n]
    ts = list(np.cumsum(gaps[:n]) + 1000.0)
    want = _brute(ts, vs)
    got_t, got_rate = counter_rate(np.array(ts, dtype=np.float64), np.array(vs, dtype=np.float64))
    assert got_t.tolist() == [t for t, _, _ in want]
    for (_, inc, dt), r in zip(want, got_rate.tolist(), strict=True):
        if dt > 0:
            assert r == inc / dt
        else:
            assert math.isnan(r)          # two samples at one time: no rate
    total = counter_increase(np.array(vs, dtype=np.float64))
    finite = [v for v in vs if math.isfinite(v)]
    if len(finite) < 2:
        assert total is None
    else:
        assert total == sum(inc for _, inc, _ in _brute(list(range(len(vs))), vs))


@settings(max_examples=examples(200), deadline=None, derandomize=True)
@given(st.lists(sample, max_size=25))
def test_counter_delta_follows_the_reset_rule(vs: list[float]) -> None:
    ts = [15.0 * i for i in range(len(vs))]
    want = _brute(ts, vs)
    cd = counter_delta(np.array(ts, dtype=np.float64), np.array(vs, dtype=np.float64))
    by_t = {t: inc for t, inc, _ in want}
    assert cd.increments.tolist() == [by_t.get(t, 0.0) for t in ts]
    assert cd.total == sum(by_t.values())
    assert cd.resets == sum(1 for a, b in zip([v for v in vs if math.isfinite(v)],
                                              [v for v in vs if math.isfinite(v)][1:], strict=False) if b < a)
    finite = [v for v in vs if math.isfinite(v)]
    if finite:
        assert (cd.first_value, cd.last_value) == (finite[0], finite[-1])
        moved = [t for t, inc, _ in want if inc > 0]
        assert cd.onset_s == (moved[0] if moved else None)
    else:
        assert math.isnan(cd.first_value) and cd.total == 0.0


def test_hand_worked_counter_cases() -> None:
    # two samples are enough for an increase: 5 -> 7 is +2
    assert counter_increase(np.array([5.0, 7.0])) == 2.0
    # flat, then a fractional rise: 0 + 0.5 (no reset: a reset is a drop, not a small rise)
    assert counter_increase(np.array([5.0, 5.0, 5.5])) == 0.5
    # a drop is a restart from zero: the increase is the new value, 3
    assert counter_increase(np.array([5.0, 3.0])) == 3.0
    assert counter_increase(np.array([5.0])) is None
    assert counter_increase(np.array([np.nan, 5.0, np.inf])) is None
    # rates: 0 -> 30 in 15 s = 2/s; 30 -> 10 (reset) = 10 in 15 s = 2/3 per s
    t, r = counter_rate(np.array([0.0, 15.0, 30.0]), np.array([0.0, 30.0, 10.0]))
    assert t.tolist() == [15.0, 30.0] and r.tolist() == [2.0, 10.0 / 15.0]
    t, r = counter_rate(np.array([0.0]), np.array([1.0]))
    assert len(t) == 0 and len(r) == 0
    # two samples at one time have no rate (NaN, not inf): 1 -> 3 in 0 s
    t, r = counter_rate(np.array([0.0, 0.0]), np.array([1.0, 3.0]))
    assert t.tolist() == [0.0] and np.isnan(r[0])
    # sub-second scrapes still have a rate: +1 in 0.5 s = 2/s
    t, r = counter_rate(np.array([0.0, 0.5]), np.array([0.0, 1.0]))
    assert r.tolist() == [2.0]
    # any drop is a reset, however small: 5 -> 4.5 restarted from zero, increase 4.5
    assert counter_increase(np.array([5.0, 4.5])) == 4.5
