"""PromQL arithmetic against values worked out by hand from Prometheus' extrapolatedRate."""

from __future__ import annotations

import math

import numpy as np
import pytest

from suanli.rules.series_math import SeriesBlock


def _blk(ts: list[float], vs: list[float]) -> SeriesBlock:
    return SeriesBlock([np.array(ts, float)], [np.array(vs, float)])


def test_rate_of_a_steady_counter_is_its_slope() -> None:
    # (0, 60] holds 15..60: increase 45 over 45 s; 15 s to the window start < 1.1*15 -> extrapolate
    # fully to 60 s: 45 * 60/45 / 60 = 1.0 /s
    b = _blk([0, 15, 30, 45, 60], [0, 15, 30, 45, 60])
    assert b.rate(np.array([60.0]), 60)[0, 0] == pytest.approx(1.0)


def test_rate_handles_a_counter_reset() -> None:
    # 110 -> 5 is a reset: increase = 25 - 110 + 110 = 25 over 45 s, extrapolated to 60 s: 25/45 /s
    b = _blk([0, 15, 30, 45, 60], [100, 110, 5, 15, 25])
    assert b.rate(np.array([60.0]), 60)[0, 0] == pytest.approx(25 / 45)


def test_rate_extrapolates_half_an_interval_past_a_gap_and_stops_at_zero() -> None:
    # t=100, w=60: samples 70, 85, 100 (10, 20, 30): increase 20 over 30 s; 30 s to the start >= 16.5
    # -> avg/2 = 7.5 s (zero point 15 s away is further); 20 * 37.5/30 / 60 = 0.41667 /s
    b = _blk([70, 85, 100], [10, 20, 30])
    assert b.rate(np.array([100.0]), 60)[0, 0] == pytest.approx(20 * 37.5 / 30 / 60)
    # counter starting at 0: zero point is the first sample, no extrapolation before it: 50/45*45/60
    z = _blk([30, 45, 60, 75], [0, 0, 0, 50])
    assert z.rate(np.array([75.0]), 60)[0, 0] == pytest.approx(50 / 60)


def test_window_edges_prometheus_3_and_2() -> None:
    b = _blk([0, 60], [0, 60])
    assert math.isnan(b.rate(np.array([60.0]), 60)[0, 0])            # (0, 60] has one sample
    assert b.rate(np.array([60.0]), 60, v2=True)[0, 0] == pytest.approx(1.0)   # [0, 60] has two


def test_instant_lookback_and_nan() -> None:
    b = _blk([0, 400], [1, 2])
    v3 = b.instant(np.array([299.0, 300.0, 400.0]), 300)
    assert v3[0, 0] == 1 and math.isnan(v3[0, 1]) and v3[0, 2] == 2
    assert b.instant(np.array([300.0]), 300, v2=True)[0, 0] == 1
    n = _blk([0, 15, 30], [1, 2, float("nan")])
    assert math.isnan(n.rate(np.array([30.0]), 60)[0, 0])             # a NaN last sample: NaN rate


def test_many_series_do_not_see_each_other() -> None:
    b = SeriesBlock([np.array([0.0, 15, 30]), np.array([100.0, 115, 130])],
                    [np.array([5.0, 5, 5]), np.array([0.0, 30, 60])])
    r = b.rate(np.array([30.0, 130.0]), 60)
    assert r[0, 0] == pytest.approx(0.0) and math.isnan(r[0, 1])
    # series 2 at 130: increase 60 over 30 s; the zero point is its first sample (value 0), so no
    # extrapolation before it and none after (last sample at t): 60 * 30/30 / 60 = 1.0 /s
    assert math.isnan(r[1, 0]) and r[1, 1] == pytest.approx(1.0)
    assert math.isnan(b.instant(np.array([50.0]), 300)[1, 0])     # series 2 starts at 100
