"""Economics and forecast on hand-worked numbers."""

from __future__ import annotations

import numpy as np
import pytest

from suanli.analysis.ledger.economics import (
    EconomicsConfig,
    energy_j,
    forecast_finish,
    low_util_s,
    windowed_rate,
)


def test_energy_trapezoid_in_window() -> None:
    # 700 W flat for 10 s (samples at 0..10) = 7000 J; a NaN sample is skipped (still 700 W
    # either side), samples outside the window ignored.
    ts = np.array([-5.0, 0.0, 5.0, 7.0, 10.0, 20.0])
    w = np.array([100.0, 700.0, 700.0, np.nan, 700.0, 100.0])
    assert energy_j(ts, w, 0.0, 10.0) == pytest.approx(7000.0)
    # A ramp 0 -> 100 W over 10 s: 500 J.
    assert energy_j(np.array([0.0, 10.0]), np.array([0.0, 100.0]), 0.0, 10.0) == pytest.approx(500.0)


def test_low_util_share_sample_and_hold() -> None:
    # Samples every 10 s at 0..50: util 90, 5, 5, 90, nan, 2 -> low: 10+10+10 (last holds 10 s) = 30 s;
    # observed: 6 samples x 10 s minus the NaN one = 50 s.
    ts = np.arange(0.0, 60.0, 10.0)
    u = np.array([90.0, 5.0, 5.0, 90.0, np.nan, 2.0])
    assert low_util_s(ts, u, 0.0, 100.0, 10.0) == (pytest.approx(30.0), pytest.approx(50.0))


def test_windowed_rate_and_spread() -> None:
    # Window 0..100 s, 5 blocks of 20 s; steps end at 10, 30, 50, 70, 90 with 2000 tokens each:
    # rate = 10000/100 = 100 tok/s, every block 100 tok/s -> sd 0. Excluding 50 s: 200 tok/s.
    ends = np.array([10.0, 30.0, 50.0, 70.0, 90.0, 150.0])
    toks = np.full(6, 2000.0)
    assert windowed_rate(ends, toks, 0.0, 100.0, 5) == (pytest.approx(100.0), pytest.approx(0.0))
    assert windowed_rate(ends, toks, 0.0, 100.0, 5, excluded_s=50.0)[0] == pytest.approx(200.0)


def test_forecast_without_interruptions_is_remaining_over_rate() -> None:
    # 3.6e6 tokens at 1000 tok/s = 3600 s; 8 GPUs x 1 h x $2 = $16; no spread at all.
    cfg = EconomicsConfig(prior_interruptions_per_gpu_hour=0.0)
    got = forecast_finish(1000.0, 3.6e6, 1000.0, 0.0, 0, 10.0, 8, None, 2.0, cfg)
    assert got is not None
    assert got.finish_s == (pytest.approx(4600.0),) * 3
    assert got.cost == (pytest.approx(16.0),) * 3


def test_forecast_poisson_band() -> None:
    # Rate pinned by a heavy prior at 0.5/h for the job (1 GPU); run 10 h; 1 h per interruption.
    # N ~ Poisson(5): P10 = 2, median 5, P90 = 8 (Poisson CDF: F(1)=.040, F(2)=.125, F(4)=.440,
    # F(5)=.616, F(7)=.867, F(8)=.932) -> totals 12 h, 15 h, 18 h.
    cfg = EconomicsConfig(prior_interruptions_per_gpu_hour=0.5, prior_weight_interruptions=1e7)
    got = forecast_finish(0.0, 36000.0, 1.0, 0.0, 0, 0.0, 1, 3600.0, 1.0, cfg)
    assert got is not None
    assert [f / 3600 for f in got.finish_s] == [pytest.approx(12.0), pytest.approx(15.0),
                                                 pytest.approx(18.0)]
    assert got.cost[1] == pytest.approx(15.0)
    assert got.interruptions_per_h == pytest.approx(0.5, rel=1e-2)


def test_forecast_nothing_to_do() -> None:
    assert forecast_finish(0.0, 0.0, 10.0, 0.0, 0, 1.0, 1, None, 1.0) is None
    assert forecast_finish(0.0, 10.0, 0.0, 0.0, 0, 1.0, 1, None, 1.0) is None
