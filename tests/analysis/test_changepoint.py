"""sudden_increase: detection of a step and silence on noise at the documented rates.

The rates asserted come from the CUSUM theory in the module docstring (Siegmund's ARL0 of ~1e5
samples for k=0.5, h=10 means well under 1 % of 60-sample noise series may alarm) with margins
for the baseline being estimated from 15 samples; they are not copied from a run.
"""

from __future__ import annotations

import numpy as np

from suanli.analysis.changepoint import ChangeConfig, cusum_alarms, sudden_increase

T = np.arange(60.0) * 15.0          # one sample every 15 s, 15 minutes


def test_step_found_with_onset_levels_and_short_delay() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(0.0, 1.0, 60)
    x[30:] += 5.0                   # a 5-sigma step at sample 30 (t = 450 s)
    cp = sudden_increase(T, x)
    assert cp is not None
    assert 29 * 15.0 <= cp.onset_s <= 31 * 15.0
    # delay ~ h'/(z_clip - k) = 11.17 / 3.5 = 3.2 samples; allow up to 6
    assert cp.detected_at_s - 450.0 <= 6 * 15.0
    assert abs(cp.before) < 0.6 and abs(cp.after - 5.0) < 0.6
    assert cp.score > 3.0


def test_false_alarm_rate_on_gaussian_noise_is_under_one_percent() -> None:
    rng = np.random.default_rng(11)
    alarms = sum(sudden_increase(T, rng.normal(10.0, 2.0, 60)) is not None for _ in range(1000))
    assert alarms <= 10


def test_three_sigma_step_detected_in_most_series() -> None:
    rng = np.random.default_rng(12)
    hits = 0
    for _ in range(300):
        x = rng.normal(0.0, 1.0, 60)
        x[30:] += 3.0
        hits += sudden_increase(T, x) is not None
    assert hits >= 0.85 * 300


def test_one_spike_is_not_a_sudden_increase() -> None:
    x = np.zeros(60) + np.random.default_rng(3).normal(0, 0.1, 60)
    x[40] = 1e6                     # clipped to z = 4: one sample adds 3.5 < h = 10
    assert sudden_increase(T, x) is None
    x[41] = x[42] = 1e6             # three in a row: 3 x 3.5 = 10.5 > 10 -> CUSUM alarm, but the
    assert sudden_increase(T, x) is None   # level after it is back to normal: no lasting increase
    x[57:] = 1e6                    # three in a row that stay until the end: a sudden increase,
    assert sudden_increase(T, x) is None   # found only when the CUSUM may start over after the burst
    cp = sudden_increase(T, x, ChangeConfig(max_restarts=1))
    assert cp is not None and cp.onset_s == 57 * 15.0


def test_log_rates_from_zero_and_nan_inf_ignored() -> None:
    rate = np.zeros(60)
    rate[45:] = 800.0               # CRC errors per second appear
    rate[10] = np.nan
    rate[20] = np.inf
    cfg = ChangeConfig(log10=True, min_sigma=0.25, floor=1e-3)
    cp = sudden_increase(T, rate, cfg)
    assert cp is not None
    assert cp.onset_s == 45 * 15.0
    assert cp.before == 1e-3 and abs(cp.after - 800.0) < 1e-9


def test_too_short_or_flat_series_give_none() -> None:
    assert sudden_increase(T[:6], np.arange(6.0)) is None
    assert sudden_increase(T, np.full(60, 3.0)) is None
    assert sudden_increase(np.zeros(0), np.zeros(0)) is None


def test_cusum_alarms_vectorised_rows() -> None:
    z = np.zeros((2, 10))
    z[1, 5:] = 4.0                  # 3.5 per sample: 3.5, 7, 10.5 -> alarm at index 7, onset 5
    alarm, onset = cusum_alarms(z)
    assert alarm.tolist() == [-1, 7] and onset.tolist() == [-1, 5]


def test_single_row_fast_path_agrees_with_the_vectorised_one() -> None:
    rng = np.random.default_rng(9)
    z = rng.normal(0.5, 1.5, (40, 80))
    z[rng.random(z.shape) < 0.05] = np.nan
    alarm, onset = cusum_alarms(z)
    for i in range(40):
        a1, o1 = cusum_alarms(z[i:i + 1])
        assert (a1[0], o1[0]) == (alarm[i], onset[i])
