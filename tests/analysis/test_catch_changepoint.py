"""The CUSUM onset rule (issue 20): the onset is the first sample since S was last 0 that is
itself at least half-way to the new level (and >= min_shift_sigma), so a lone blip of baseline noise
before the real change does not back-date it; on a ramp the half-way point is the onset."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from suanli.analysis.changepoint import ChangeConfig, cusum_alarms, sudden_increase

SIGMA = 1.4826        # baseline alternating 99 / 101: median 100, MAD 1 -> sigma = 1.4826 x 1
STEP_S = 15.0


def _series(z_after_baseline: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """10 baseline samples (99, 101, ...) then the given robust z-scores, 15 s apart."""
    base = [99.0, 101.0] * 5
    x = np.array(base + [100.0 + z * SIGMA for z in z_after_baseline])
    return np.arange(len(x)) * STEP_S, x


def test_a_blip_before_the_change_does_not_backdate_the_onset() -> None:
    # 40 samples: n_base = max(5, int(40 x 0.25)) = 10 (indices 0..9).
    # 10..19 at the level (z = 0: S stays 0, last zero at 19); 20: a 3-sigma blip (S = 3 - 0.5
    # = 2.5); 21..23 at z = 0.5 (S + 0.5 - 0.5: stays 2.5 > 0); 24..39 at z = 10 (clipped to 4:
    # S = 6, 9.5, 13 > h = 10 -> alarm at 26). Search from 20 (after the last zero).
    # Half-way bar = max(2, 0.5 x median(z[26:]) = 5) = 5: the blip (3) and 0.5s fail it,
    # the first z = 10 sample (index 24) passes -> onset at 24 x 15 s = 360 s. A fixed 2-sigma bar
    # would take the blip at index 20 (300 s) since median(z[20:]) = 10 >= 2.
    ts, x = _series([0.0] * 10 + [3.0] + [0.5] * 3 + [10.0] * 16)
    assert len(x) == 40
    cp = sudden_increase(ts, x)
    assert cp is not None
    assert cp.onset_s == 24 * STEP_S
    assert cp.detected_at_s == 26 * STEP_S
    assert cp.before == pytest.approx(100.0)
    assert cp.after == pytest.approx(100.0 + 10.0 * SIGMA)
    assert cp.score == pytest.approx(10.0)


def test_on_a_ramp_the_onset_is_the_half_way_point() -> None:
    # After 10 level samples the value climbs 1 sigma per sample to 12 and stays (z = 1, 2, ..., 12,
    # then 12 x 14). CUSUM from index 20: S = 0.5, 2, 4.5, 8, 11.5 > 10 (5 clipped to 4) -> alarm at z = 5
    # (index 24); S was 0 last at 19 -> search from 20. median(z[24:]) = 12 -> bar = 6: the first
    # sample at >= 6 sigma is z = 6, index 25 (after the alarm, within ramp_samples = 8).
    ramp = [float(k) for k in range(1, 13)]
    ts, x = _series([0.0] * 10 + ramp + [12.0] * 14)
    cp = sudden_increase(ts, x)
    assert cp is not None
    assert cp.onset_s == 25 * STEP_S
    # detected at the later of onset and alarm: the onset (25) is after the alarm (24)
    assert cp.detected_at_s == 25 * STEP_S


def test_a_burst_that_does_not_last_is_no_change_unless_restarts_allow() -> None:
    # 10 level samples, 4 samples at z = 8 (clipped to 4: S = 3.5, 7, 10.5 > 10: alarm at the
    # third), then back to the level for 16 samples: median after any candidate < 2 sigma -> none.
    burst = [0.0] * 10 + [8.0] * 4 + [0.0] * 16
    ts, x = _series(burst)
    assert sudden_increase(ts, x) is None
    # The same burst, then 24 level samples and a lasting step (z = 6 from index 48 on), 60
    # samples in all (n_base = 15: still median 100, MAD 1). Without restarts: the burst's alarm at
    # 22 has no lasting onset (median(z[20:]) = 0, 24 of its 40 samples are 0) -> None.
    # With one restart the CUSUM starts over at 23 (S back to 0 by 30); z = 6 is clipped to 4:
    # S = 3.5, 7, 10.5 > 10 -> alarm at 50, onset at 48 (z = 6 >= max(2, 0.5 x 6) and
    # median(z[48:]) = 6) -> 48 x 15 s = 720 s, detected at 50 x 15 s = 750 s.
    ts2, x2 = _series([0.0] * 10 + [8.0] * 4 + [0.0] * 24 + [6.0] * 12)
    assert sudden_increase(ts2, x2) is None
    cp = sudden_increase(ts2, x2, ChangeConfig(max_restarts=1))
    assert cp is not None and cp.onset_s == 48 * STEP_S and cp.detected_at_s == 50 * STEP_S


def test_the_half_way_point_needs_four_samples_after_it() -> None:
    # 40 samples (n_base = 10): 24 at the level, three at z = 4 (S = 3.5, 7, 10.5 > 10: alarm at
    # index 36 = len - 4), then three at z = 20. Bar = max(2, 0.5 x median(z[36:] = 4, 20, 20, 20))
    # = 10: no sample from 34 to the alarm reaches it; the first that does, 37, has only 3 samples
    # from it to the end (min_tail_samples = 4: the search stops at len - 4 = 36) -> no change yet.
    ts, x = _series([0.0] * 24 + [4.0] * 3 + [20.0] * 3)
    assert len(x) == 40
    assert sudden_increase(ts, x) is None
    # one more sample at z = 20: 37 is now len - 4 -> onset at 37, detected there (after the alarm)
    ts, x = _series([0.0] * 24 + [4.0] * 3 + [20.0] * 4)
    cp = sudden_increase(ts, x)
    assert cp is not None and cp.onset_s == 37 * STEP_S and cp.detected_at_s == 37 * STEP_S


def test_no_cusum_alarm_no_change_whatever_the_median() -> None:
    # 40 samples (n_base = 10), then (3, 3, -4) ten times: median 3 sigma, but each -4 (clipped,
    # -4.5 after k) pulls S back: its peaks are 5, 5.5, ..., 9.5, never above h = 10 -> None.
    ts, x = _series([3.0, 3.0, -4.0] * 10)
    assert len(x) == 40
    assert sudden_increase(ts, x) is None


def test_a_restart_begins_after_the_alarm_sample() -> None:
    # 40 samples (n_base = 10): z = 4 at 10..12 (S = 3.5, 7, 10.5: alarm at 12), z = 0.5 at 13..20
    # (S + 0.5 - k: unchanged), z = 20 from 21 on. First pass: bar = max(2, 0.5 x median(z[12:])
    # = 20) = 10, and no sample from 10 to 12 + 8 = 20 reaches it -> no onset, start over.
    # The restart begins at 13, after the alarm sample: S = 0 through 20, then 3.5, 7, 10.5 ->
    # alarm at 23; onset 21 (z = 20 >= 10, median after it 20) -> onset 21, detected 23.
    # (Restarting at 12 would carry that sample's 3.5 and alarm at 22.)
    ts, x = _series([4.0] * 3 + [0.5] * 8 + [20.0] * 19)
    assert len(x) == 40
    assert sudden_increase(ts, x) is None
    cp = sudden_increase(ts, x, ChangeConfig(max_restarts=1))
    assert cp is not None and cp.onset_s == 21 * STEP_S and cp.detected_at_s == 23 * STEP_S
    # The same with z = 4 at 13 too (and 0.5 at 14..20): the restart at 13 counts it, S = 3.5
    # through 20, 7, 10.5 -> alarm at 22; onset 21 again, detected at 22.
    ts, x = _series([4.0] * 4 + [0.5] * 7 + [20.0] * 19)
    cp = sudden_increase(ts, x, ChangeConfig(max_restarts=1))
    assert cp is not None and cp.onset_s == 21 * STEP_S and cp.detected_at_s == 22 * STEP_S


def test_fewer_than_min_baseline_points_plus_three_samples_is_no_test() -> None:
    # min_baseline_points = 5: 7 samples < 5 + 3 -> None, however clear: 4 level samples and 3 at
    # z = 10 (with a 4-point baseline they would alarm: S = 3.5, 7, 10.5).
    ts, x = np.arange(7) * STEP_S, np.array([99.0, 101.0, 99.0, 101.0] + [100.0 + 10 * SIGMA] * 3)
    assert sudden_increase(ts, x) is None
    # also where 1 sample after the baseline could alarm (h = 1 < 4 - 0.5): still 7 < 5 + 3
    assert sudden_increase(ts, x, ChangeConfig(h=1.0)) is None
    # 8 samples = 5 + 3 are tested: baseline 99, 101, 99, 101, 99 (median 99, MAD 0 -> sigma 0.99),
    # three samples at z = 15.99 (clipped 4): S = 3.5, 7, 10.5 -> alarm at 7, onset 5.
    h8 = 100.0 + 10 * SIGMA
    cp = sudden_increase(np.arange(8) * STEP_S, np.array([99.0, 101.0, 99.0, 101.0, 99.0, h8, h8, h8]))
    assert cp is not None and cp.onset_s == 5 * STEP_S and cp.detected_at_s == 7 * STEP_S
    # 9 samples (n_base = max(5, int(9 x 0.25)) = 5): baseline 99, 101, 99, 101, 99 (median 99,
    # MAD 0 -> sigma = 0.01 x 99 = 0.99), then 101 (z = 2.02) and 3 high samples (z = 15.99,
    # clipped to 4): S = 1.52, 5.02, 8.52, 12.02 -> alarm at 8; onset from 5 with bar =
    # max(2, 0.5 x 15.99): 101 fails it, the first high sample, 6, passes.
    high = 100.0 + 10 * SIGMA
    ts, x = np.arange(9) * STEP_S, np.array([99.0, 101.0, 99.0, 101.0, 99.0, 101.0, high, high, high])
    cp = sudden_increase(ts, x)
    assert cp is not None and cp.onset_s == 6 * STEP_S and cp.detected_at_s == 8 * STEP_S


def test_log_rates_use_the_default_floor_for_zeros() -> None:
    # log10 with the default floor 1e-15: the zeros before the rise are 1e-15 (-15 decades), not
    # dropped; baseline -15 (MAD 0 -> sigma = 0.01 x 15 = 0.15), the rise at 45 is found there.
    rate = np.zeros(60)
    rate[45:] = 800.0
    cp = sudden_increase(np.arange(60) * STEP_S, rate, ChangeConfig(log10=True))
    assert cp is not None and cp.onset_s == 45 * STEP_S
    assert cp.before == pytest.approx(1e-15) and cp.after == pytest.approx(800.0)


def test_an_alarm_at_the_first_sample_after_the_baseline() -> None:
    # h = 1: the first sample after the baseline (z = 10, clipped 4: S = 3.5 > 1) alarms at once,
    # CUSUM index 0 -> onset and detection at sample 10.
    ts, x = _series([10.0] * 30)
    cp = sudden_increase(ts, x, ChangeConfig(h=1.0))
    assert cp is not None and cp.onset_s == 10 * STEP_S and cp.detected_at_s == 10 * STEP_S


def test_a_step_of_exactly_min_shift_sigma_is_a_change() -> None:
    # A flat baseline at 100 with min_sigma = 1 (MAD 0; 0.01 x 100 = 1 too): sigma = 1 exactly.
    # 30 samples at 102: z = 2 = min_shift_sigma; S grows 1.5 per sample -> 10.5 at the 7th (16);
    # bar = max(2, 0.5 x 2) = 2 and the median after 10 is 2 >= 2 -> onset 10, detected 16.
    x = np.array([100.0] * 10 + [102.0] * 30)
    cp = sudden_increase(np.arange(40) * STEP_S, x, ChangeConfig(min_sigma=1.0))
    assert cp is not None and cp.onset_s == 10 * STEP_S and cp.detected_at_s == 16 * STEP_S


def test_small_scale_series_have_no_absolute_sigma_floor() -> None:
    # The blip case scaled to 0 +- 0.001 (median 0, MAD 0.001 -> sigma 0.0014826; min_sigma 0 and
    # rel_sigma x 0 add no floor): the same onset at 24 (a 1.0 floor would see no change at all).
    ts, x = _series([0.0] * 10 + [3.0] * 1 + [0.5] * 3 + [10.0] * 16)
    cp = sudden_increase(ts, (x - 100.0) / 1000.0)
    assert cp is not None and cp.onset_s == 24 * STEP_S


def test_minus_infinity_is_no_sample_in_both_cusum_paths() -> None:
    # z = 4, 4, -inf, 4: the -inf is skipped (S = 3.5, 7, -, 10.5): alarm at 3, onset 0; read as
    # -4 it would pull S down to 2.5. One row (the plain-Python path) and two rows (vectorised).
    z = np.array([4.0, 4.0, -np.inf, 4.0])
    assert [v.tolist() for v in cusum_alarms(z[None, :])] == [[3], [0]]
    assert [v.tolist() for v in cusum_alarms(np.vstack([z, z]))] == [[3, 3], [0, 0]]


def test_a_change_point_and_its_config_are_immutable_values() -> None:
    # (ChangeConfig() is the default argument every call shares)
    cp = sudden_increase(*_series([10.0] * 30))
    assert cp is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        cp.onset_s = 0.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        ChangeConfig().h = 0.0  # type: ignore[misc]


def test_the_cusum_alarms_above_h_not_at_it() -> None:
    # z = 2.5: S grows by 2.5 - 0.5 = 2 exactly: 2, 4, 6, 8, 10 (= h: no alarm), 12 -> alarm at 5,
    # onset 0; in the one-row path and the vectorised one (the zero row never alarms).
    z = np.full(6, 2.5)
    assert [v.tolist() for v in cusum_alarms(z[None, :])] == [[5], [0]]
    assert [v.tolist() for v in cusum_alarms(np.vstack([z, np.zeros(6)]))] == [[5, -1], [0, -1]]


def test_no_rows_no_alarms() -> None:
    alarm, onset = cusum_alarms(np.zeros((0, 5)))
    assert alarm.tolist() == [] and onset.tolist() == []


def test_a_vectorised_row_keeps_its_first_alarm_even_at_index_0() -> None:
    # h = 1: z = 4 alarms at once (S = 3.5 > 1) at index 0, and stays alarmed there (the later
    # samples would alarm again).
    alarm, onset = cusum_alarms(np.array([[4.0, 4.0, 4.0], [0.0, 0.0, 0.0]]), ChangeConfig(h=1.0))
    assert alarm.tolist() == [0, -1] and onset.tolist() == [0, -1]


def test_an_all_zero_baseline_still_has_a_scale() -> None:
    # Ten zeros (median 0, MAD 0, no floors) then 5.0: sigma is the 1e-300 guard, not 0 (0/0 would
    # leave no sample): z is huge, clipped to 4 -> alarm at 12, onset 10; before 0, after 5.
    x = np.array([0.0] * 10 + [5.0] * 30)
    cp = sudden_increase(np.arange(40) * STEP_S, x)
    assert cp is not None and cp.onset_s == 10 * STEP_S and cp.detected_at_s == 12 * STEP_S
    assert (cp.before, cp.after) == (0.0, 5.0)


def test_the_half_way_point_may_come_eight_samples_after_the_alarm() -> None:
    # z = 4 at 10..19 (S = 3.5, 7, 10.5: alarm at 12), z = 20 from 20 on (40 samples). Bar =
    # max(2, 0.5 x median(z[12:]) = 20) = 10: the first sample at it is 20 = 12 + ramp_samples (8)
    # -> onset 20, detected there.
    ts, x = _series([4.0] * 10 + [20.0] * 20)
    cp = sudden_increase(ts, x)
    assert cp is not None and cp.onset_s == 20 * STEP_S and cp.detected_at_s == 20 * STEP_S
