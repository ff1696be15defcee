"""Goodput and time split on hand-worked span sets (every expected number worked out in comments)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from suanli.analysis.ledger.goodput import CATEGORIES, GoodputConfig, JobSplit, split_job
from tests.analysis.ledger.test_ledger_frames import Row, make_frame, split_rows

T0 = 1.7e9


def _split(rows: list[Row]) -> JobSplit:
    steps, others = split_rows(rows)
    return split_job(make_frame(steps, t0=T0), make_frame(others, t0=T0), GoodputConfig())


def _step(rank: int, step: int, t: float, comm: tuple[float, float]) -> list[Row]:
    """A 12 s step at t: data_load 1 s, forward 3 s, backward 5 s, optimizer last 1 s
    (at t+11), allreduce at t+comm[0]..t+comm[1]."""
    return [(rank, step, "train_step", t, t + 12), (rank, -1, "data_load", t, t + 1),
            (rank, -1, "forward", t + 1, t + 4), (rank, -1, "backward", t + 4, t + 9),
            (rank, -1, "allreduce", t + comm[0], t + comm[1]),
            (rank, -1, "optimizer", t + 11, t + 12)]


def test_comm_fully_hidden_half_hidden_exposed() -> None:
    # compute = fwd 3 + bwd 5 + opt 1 = 9 s; data 1 s; step 12 s.
    # hidden: allreduce 5..9 entirely under backward -> exposed 0, other (9..11 empty) 2 s.
    hidden = _split(_step(0, 1, 0.0, (5.0, 9.0)))
    assert hidden.gpu_s["compute"] == pytest.approx(9.0)
    table = hidden.steps                   # the step table has the same split of the one step
    assert (table.compute_s[0], table.exposed_comm_s[0], table.data_s[0], table.other_s[0]) == pytest.approx(
        (9.0, 0.0, 1.0, 2.0))
    assert hidden.gpu_s["exposed_communication"] == pytest.approx(0.0)
    assert hidden.gpu_s["data_loading"] == pytest.approx(1.0)
    assert hidden.gpu_s["step_other"] == pytest.approx(2.0)
    # half: allreduce 7..11: 7..9 under backward (2 s hidden), 9..11 exposed (2 s).
    half = _split(_step(0, 1, 0.0, (7.0, 11.0)))
    assert half.gpu_s["exposed_communication"] == pytest.approx(2.0)
    assert half.gpu_s["step_other"] == pytest.approx(0.0)
    # exposed: allreduce 9..11 after backward: all 2 s exposed.
    exposed = _split(_step(0, 1, 0.0, (9.0, 11.0)))
    assert exposed.gpu_s["exposed_communication"] == pytest.approx(2.0)
    assert exposed.shares()["compute"] == pytest.approx(9 / 12)
    assert sum(exposed.shares().values()) == pytest.approx(1.0)


def test_straggler_wait_is_exposed_comm_beyond_the_fastest_rank() -> None:
    # rank 0 exposed 9..11 = 2 s; rank 1 allreduce 6..11 but backward covers 6..9 -> exposed 2 s;
    # rank 2 slow compute: pretend it exposes only 1 s (10..11). Minimum exposed = 1 s, so
    # straggler wait = (2-1) + (2-1) + 0 = 2 s, pure exposed comm = 3 x 1 s = 3 s.
    rows = _step(0, 1, 0.0, (9.0, 11.0)) + _step(1, 1, 0.0, (6.0, 11.0)) + _step(2, 1, 0.0, (10.0, 11.0))
    got = _split(rows)
    assert got.gpu_s["straggler_wait"] == pytest.approx(2.0)
    assert got.gpu_s["exposed_communication"] == pytest.approx(3.0)
    assert got.steps.straggler_wait_s.tolist() == pytest.approx([2.0])
    assert got.n_ranks == 3


def _failure_rows() -> list[Row]:
    # Steps of 10 s: 1 [0,10], 2 [10,20], checkpoint_save [20,22], 3 [22,32], 4 [32,42],
    # 5 [42,52]; crash; init [100,110], checkpoint_load [110,115]; resume at step 3:
    # 3 [115,125], 4 [125.5,135.5], 5 [136,146] (half-second gaps: idle, not failures).
    rows: list[Row] = []
    for step, t in ((1, 0), (2, 10), (3, 22), (4, 32), (5, 42), (3, 115), (4, 125.5), (5, 136)):
        rows += [(0, step, "train_step", t, t + 10), (0, -1, "forward", t, t + 4),
                 (0, -1, "backward", t + 4, t + 10)]
    rows += [(0, -1, "checkpoint_save", 20, 22), (0, -1, "init", 100, 110),
             (0, -1, "checkpoint_load", 110, 115)]
    return rows


def test_failure_with_rollback_to_checkpoint() -> None:
    got = _split(_failure_rows())
    # wall 146 s: productive 5 steps x 10 = 50; lost first runs of 3, 4, 5 = 30;
    # downtime 52..115 = 63 (init and checkpoint_load inside it are failure time); checkpoint 2;
    # idle 1.
    assert got.wall_s == pytest.approx(146.0)
    assert got.gpu_s["compute"] == pytest.approx(50.0)
    assert got.gpu_s["failure_lost_progress"] == pytest.approx(30.0)
    assert got.gpu_s["failure_downtime"] == pytest.approx(63.0)
    assert got.gpu_s["checkpoint"] == pytest.approx(2.0)
    assert got.gpu_s["init"] == pytest.approx(0.0)
    assert got.gpu_s["idle"] == pytest.approx(1.0)
    assert got.steps.step.tolist() == [1, 2, 3, 4, 5]
    assert [(a - T0, b - T0) for a, b in got.interruptions] == [pytest.approx((52.0, 115.0))]
    assert sum(got.gpu_s.values()) == pytest.approx(146.0)


def test_long_gap_without_restart_is_idle_and_short_gaps_too() -> None:
    # steps [0,10], [10.5,20.5], then a 100 s pause, [120.5,130.5] continuing at step 3, no
    # init: idle = 0.5 + 100 = 100.5 s; no failure.
    rows: list[Row] = []
    for step, t in ((1, 0.0), (2, 10.5), (3, 120.5)):
        rows += [(0, step, "train_step", t, t + 10), (0, -1, "forward", t, t + 10)]
    got = _split(rows)
    assert got.gpu_s["idle"] == pytest.approx(100.5)
    assert got.gpu_s["failure_downtime"] == 0.0
    assert got.interruptions == []


def test_init_before_first_step_and_rank_that_dies() -> None:
    # rank 0: init [0,5], steps [5,15] .. [45,55]; rank 1: init [0,5], step [5,15], then gone:
    # 55-15 = 40 s > 3 x median 10 s -> failure downtime 40 s; total 2 x 55 = 110 GPU-s.
    rows: list[Row] = [(0, -1, "init", 0, 5), (1, -1, "init", 0, 5)]
    for i in range(5):
        rows += [(0, i, "train_step", 5 + 10 * i, 15 + 10 * i), (0, -1, "forward", 5 + 10 * i, 15 + 10 * i)]
    rows += [(1, 0, "train_step", 5, 15), (1, -1, "forward", 5, 15)]
    got = _split(rows)
    assert got.gpu_s["init"] == pytest.approx(10.0)
    assert got.gpu_s["compute"] == pytest.approx(60.0)
    assert got.gpu_s["failure_downtime"] == pytest.approx(40.0)
    assert got.wall_s * got.n_ranks == pytest.approx(110.0)


def test_steps_without_numbers_and_spans_without_rank() -> None:
    rows: list[Row] = [(0, -1, "train_step", 0, 10), (0, -1, "forward", 0, 8),
                       (0, -1, "train_step", 10, 20), (0, -1, "forward", 10, 18),
                       (-1, -1, "forward", 0, 1), (0, -1, "forward", 22, 23)]
    got = _split(rows)
    # The orphan forward at 22..23 lies outside any step: skipped; 20..23 is idle (wall 23).
    assert got.steps.step.tolist() == [0, 1]
    assert got.gpu_s["compute"] == pytest.approx(16.0)
    assert got.skipped_spans == 2
    assert got.gpu_s["idle"] == pytest.approx(3.0)
    assert got.gpu_s["step_other"] == pytest.approx(4.0)


def test_empty_and_categories() -> None:
    got = _split([])
    assert got.n_ranks == 0 and set(got.gpu_s) == set(CATEGORIES)
    assert np.isnan(got.median_step_s)
    # no span has a rank: nothing to split; the wall is 0..0, the step table empty, both spans skipped
    none = _split([(-1, -1, "train_step", 0, 10), (-1, -1, "forward", 0, 5)])
    assert (none.start_s, none.end_s, none.n_ranks, none.skipped_spans) == (0.0, 0.0, 0, 2)
    assert all(v == 0.0 for v in none.gpu_s.values())
    assert none.shares() == dict.fromkeys(CATEGORIES, 0.0)      # 0 GPU-s in all: no share, not 0 / 0
    table = none.steps
    assert [len(a) for a in (table.step, table.start_s, table.end_s, table.n_ranks, table.compute_s,
                             table.flops, table.tokens)] == [0] * 7


def test_job_that_stops_before_the_window_ends_is_down() -> None:
    # 2 ranks, 3 steps of 10 s (0..30), window ends at 100: 70 s > 3 x 10 s -> each rank is
    # down 70 s (failure), wall 100, total 200 GPU-s. A span with NaN times is skipped.
    rows: list[Row] = [(r, k, "train_step", 10.0 * k, 10.0 * k + 10) for r in (0, 1) for k in range(3)]
    steps, _ = split_rows(rows)
    frame = make_frame(steps, t0=T0)
    others = make_frame([(0, -1, "forward", 0.0, 1.0)], t0=T0)
    others.start_s[0] = np.nan
    got = split_job(frame, others, GoodputConfig(), window_end_s=T0 + 100.0)
    assert got.wall_s == pytest.approx(100.0)
    assert got.gpu_s["failure_downtime"] == pytest.approx(140.0)
    assert got.gpu_s["compute"] == pytest.approx(60.0)
    assert [(a - T0, b - T0) for a, b in got.interruptions] == [pytest.approx((30.0, 100.0))]
    assert got.skipped_spans == 1
    # A span on a rank above every known one (7) with a NaN end is skipped as well.
    extra = make_frame([(0, -1, "forward", 0.0, 1.0), (7, -1, "forward", 0.0, 1.0)], t0=T0)
    extra.start_s[0] = np.nan
    extra.end_s[1] = np.nan
    assert split_job(frame, extra, GoodputConfig(), window_end_s=T0 + 100.0).skipped_spans == 2
    # One step [0,10] and the window ending at 100: 90 s > 3 x 10 s: down 90 s.
    # (A forward on rank 3 with a NaN start, a rank the job does not know, is skipped.)
    lone, _ = split_rows([(0, 0, "train_step", 0.0, 10.0)])
    odd = make_frame([(3, -1, "forward", 0.0, 1.0)], t0=T0)
    odd.start_s[0] = np.nan
    one = split_job(make_frame(lone, t0=T0), odd, GoodputConfig(), window_end_s=T0 + 100.0)
    assert one.gpu_s["failure_downtime"] == pytest.approx(90.0) and one.gpu_s["idle"] == 0.0
    assert one.skipped_spans == 1
    # A window end only 20 s after the last span (< 3 medians) changes nothing.
    same = split_job(frame, others, GoodputConfig(), window_end_s=T0 + 50.0)
    assert same.wall_s == pytest.approx(30.0)


def test_a_step_run_again_under_the_same_number_is_a_rollback() -> None:
    # Bare 10 s steps (no phases: compute) on each of 2 ranks: 1 [0,10], 2 [10,20], then step 2
    # again [25,35] after a 5 s gap (< 3 x median 10 s, no restart span). The repeat's number is
    # not above the step before (2 <= 2): a rollback, so the gap 20..25 is failure downtime (5 s
    # per rank), not idle, and the first run of step 2 is lost (10 s per rank). 2 x 35 GPU-s =
    # compute 40 + lost 20 + down 10.
    rows: list[Row] = [(r, k, "train_step", t, t + 10) for r in (0, 1) for k, t in ((1, 0), (2, 10), (2, 25))]
    got = _split(rows)
    assert got.gpu_s["compute"] == pytest.approx(40.0)
    assert got.gpu_s["failure_lost_progress"] == pytest.approx(20.0)
    assert got.gpu_s["failure_downtime"] == pytest.approx(10.0)
    assert got.gpu_s["idle"] == pytest.approx(0.0)
    assert [(a - T0, b - T0) for a, b in got.interruptions] == [pytest.approx((20.0, 25.0))]


def test_a_restart_after_the_first_step_marks_the_long_gap_a_failure() -> None:
    # One rank: step 1 [0,10], a crash, init [50,60], steps 2 [60,70] and 3 [70,80] (numbers go
    # on: no rollback). The init follows the job's very first step row (row 0), so the row after
    # it (step 2) has a restart; its gap 10..60 = 50 s > 3 x median 10 s holds it: all 50 s are
    # failure downtime (the init inside too): compute 30, init 0, idle 0, wall 80.
    rows: list[Row] = [(0, 1, "train_step", 0, 10), (0, -1, "init", 50, 60), (0, 2, "train_step", 60, 70),
                       (0, 3, "train_step", 70, 80)]
    got = _split(rows)
    assert got.wall_s == pytest.approx(80.0)
    assert got.gpu_s["failure_downtime"] == pytest.approx(50.0)
    assert got.gpu_s["compute"] == pytest.approx(30.0)
    assert got.gpu_s["init"] == 0.0 and got.gpu_s["idle"] == 0.0
    assert [(a - T0, b - T0) for a, b in got.interruptions] == [pytest.approx((10.0, 60.0))]
    # An init after a rank's last step has no next step to mark: steps [0,10], [10,20], init
    # [25,30]: wall 30 = compute 20 + init 5 + idle 5 (20..25); the rank ends 10 s < 30 s early.
    end = _split([(0, 1, "train_step", 0, 10), (0, 2, "train_step", 10, 20), (0, -1, "init", 25, 30)])
    assert end.gpu_s["init"] == pytest.approx(5.0) and end.gpu_s["idle"] == pytest.approx(5.0)
    assert end.gpu_s["failure_downtime"] == 0.0 and end.interruptions == []
    # A restart after a later row, on each of 2 ranks: steps 1 [0,10], 2 [10,20], init [60,70],
    # 3 [70,80]: the init follows the rank's second row, so step 3 has a restart; gap 20..70 =
    # 50 s > 30 s: failure downtime 2 x 50 = 100.
    mid = _split([(r, k, name, a, b) for r in (0, 1) for k, name, a, b in (
        (1, "train_step", 0, 10), (2, "train_step", 10, 20), (-1, "init", 60, 70), (3, "train_step", 70, 80))])
    assert mid.gpu_s["failure_downtime"] == pytest.approx(100.0)
    assert mid.gpu_s["init"] == 0.0 and mid.gpu_s["idle"] == 0.0


def test_checkpoint_and_init_spans_without_a_rank_are_skipped() -> None:
    # Steps [0,10] and [12,22] on rank 0; a checkpoint_save at 10..12 and an init at 22..30 with
    # no rank (-1) belong to no GPU: both skipped, the wall stays 0..22, and 10..12 is idle (2 s).
    # A train_step without a rank at -5..25 is skipped too (3 skipped; compute stays 20, the
    # wall 0..22).
    rows: list[Row] = [(0, 0, "train_step", 0, 10), (0, 1, "train_step", 12, 22),
                       (-1, -1, "checkpoint_save", 10, 12), (-1, -1, "init", 22, 30), (-1, 0, "train_step", -5, 25)]
    got = _split(rows)
    assert got.wall_s == pytest.approx(22.0)
    assert got.skipped_spans == 3
    assert got.gpu_s["checkpoint"] == 0.0 and got.gpu_s["init"] == 0.0
    assert got.gpu_s["idle"] == pytest.approx(2.0)
    assert got.gpu_s["compute"] == pytest.approx(20.0)


def test_down_means_more_than_the_gap_limit_before_the_end() -> None:
    # Exactly 3 x median (10 s) = 30 s is not "more than": (a) 3 steps 0..30 with the window
    # ending at 60 keep the wall at 30 with no downtime; (b) rank 0 steps 0..60, rank 1 steps
    # 0..30: rank 1's last 30 s are idle, not failure (2 x 60 = 120 GPU-s: compute 90, idle 30).
    rows: list[Row] = [(0, k, "train_step", 10.0 * k, 10.0 * k + 10) for k in range(3)]
    steps, _ = split_rows(rows)
    got = split_job(make_frame(steps, t0=T0), make_frame([], t0=T0), GoodputConfig(), window_end_s=T0 + 60.0)
    assert got.wall_s == pytest.approx(30.0)
    assert got.gpu_s["failure_downtime"] == 0.0 and got.interruptions == []
    two = _split([(0, k, "train_step", 10.0 * k, 10.0 * k + 10) for k in range(6)]
                 + [(1, k, "train_step", 10.0 * k, 10.0 * k + 10) for k in range(3)])
    assert two.wall_s == pytest.approx(60.0)
    assert two.gpu_s["failure_downtime"] == 0.0 and two.interruptions == []
    assert two.gpu_s["idle"] == pytest.approx(30.0)
    assert two.gpu_s["compute"] == pytest.approx(90.0)


def test_the_job_starts_at_its_earliest_rank() -> None:
    # Bare steps (compute): rank 0 [5,15], rank 1 [0,10]. The wall is 0..15 (rank 1 starts
    # first): 2 x 15 = 30 GPU-s = compute 20 + idle 10 (rank 0 0..5, rank 1 10..15).
    got = _split([(0, 0, "train_step", 5, 15), (1, 0, "train_step", 0, 10)])
    assert got.wall_s == pytest.approx(15.0)
    # and ends at its latest: rank 0 [0,10], rank 1 [5,15]: the same 0..15
    assert _split([(0, 0, "train_step", 0, 10), (1, 0, "train_step", 5, 15)]).wall_s == pytest.approx(15.0)
    assert got.gpu_s["compute"] == pytest.approx(20.0)
    assert got.gpu_s["idle"] == pytest.approx(10.0)
    # rank 0's init [0,5] starts the job and its checkpoint_save [15,18] after its only step
    # [5,15] ends it: wall 18 = init 5 + compute 10 + checkpoint 3.
    one = _split([(0, -1, "init", 0, 5), (0, 0, "train_step", 5, 15), (0, -1, "checkpoint_save", 15, 18)])
    assert one.wall_s == pytest.approx(18.0)
    assert (one.gpu_s["init"], one.gpu_s["compute"], one.gpu_s["checkpoint"]) == pytest.approx((5.0, 10.0, 3.0))
    assert one.gpu_s["idle"] == pytest.approx(0.0)


def test_a_child_late_in_the_wall_stays_with_its_own_rank() -> None:
    # Two ranks, one 10 s step each (the wall is 10 s): forward 0..6, backward 6..9.5, allreduce
    # 9.5..10. Rank 0's allreduce starts 9.5 s in, more than wall - 1 s: it must still be found
    # in rank 0's step (not skipped): compute 2 x 9.5 = 19, exposed comm 2 x 0.5 = 1 (equal on
    # both ranks: no straggler wait), step_other 0, nothing skipped.
    rows: list[Row] = []
    for r in (0, 1):
        rows += [(r, 0, "train_step", 0, 10), (r, -1, "forward", 0, 6), (r, -1, "backward", 6, 9.5),
                 (r, -1, "allreduce", 9.5, 10)]
    got = _split(rows)
    assert got.skipped_spans == 0
    assert got.gpu_s["compute"] == pytest.approx(19.0)
    assert got.gpu_s["exposed_communication"] == pytest.approx(1.0)
    assert got.gpu_s["straggler_wait"] == 0.0
    assert got.gpu_s["step_other"] == pytest.approx(0.0)


def test_a_numbered_step_keeps_its_number_among_unnumbered_ones() -> None:
    # Rank 0: an unnumbered step [0,10] (its ordinal in the rank: 0), then one numbered 0
    # [10,20]. The numbered one keeps 0, so it repeats step 0: the first run is lost (10 s) and the
    # table holds one step 0 (the second run, 10 s of compute).
    got = _split([(0, -1, "train_step", 0, 10), (0, 0, "train_step", 10, 20)])
    assert got.steps.step.tolist() == [0]
    assert got.gpu_s["failure_lost_progress"] == pytest.approx(10.0)
    assert got.gpu_s["compute"] == pytest.approx(10.0)


def test_a_rank_whose_only_step_has_no_length_adds_nothing() -> None:
    # Rank 0 a 10 s step; rank 1 only a zero-length step at 4 s (no productive time to scale
    # by). Wall 10 x 2 ranks = 20 GPU-s = compute 10 + idle 10 (median step 5 s: rank 1 ends 6 s
    # before the end, not more than 15 s, so it is not down).
    got = _split([(0, 0, "train_step", 0, 10), (1, 0, "train_step", 4, 4)])
    assert got.gpu_s["compute"] == pytest.approx(10.0)
    assert got.gpu_s["idle"] == pytest.approx(10.0)
    assert sum(got.gpu_s.values()) == pytest.approx(20.0)


def test_an_init_that_ends_within_the_first_second_counts_its_own_length() -> None:
    # init [0,0.5], idle 0.5..2, step [2,12]: wall 12 = init 0.5 + idle 1.5 + compute 10.
    got = _split([(0, -1, "init", 0, 0.5), (0, 0, "train_step", 2, 12)])
    assert got.gpu_s["init"] == pytest.approx(0.5)
    assert got.gpu_s["idle"] == pytest.approx(1.5)
    assert got.gpu_s["compute"] == pytest.approx(10.0)


def test_unnumbered_steps_are_numbered_per_rank() -> None:
    # Two ranks, two unnumbered 10 s steps each ([0,10], [10,20]): each rank numbers its own
    # steps 0, 1, so the table has steps 0 and 1, each run by 2 ranks (20 GPU-s of compute each).
    rows: list[Row] = [(r, -1, "train_step", t, t + 10) for r in (0, 1) for t in (0.0, 10.0)]
    got = _split(rows)
    assert got.steps.step.tolist() == [0, 1]
    assert got.steps.n_ranks.tolist() == [2, 2]
    assert got.steps.compute_s.tolist() == pytest.approx([20.0, 20.0])
    assert got.gpu_s["failure_lost_progress"] == 0.0


def test_a_job_without_steps_is_its_other_spans_and_idle() -> None:
    # Rank 0 only ran init [0,5] and checkpoint_load [8,10]: wall 10 = init 5 + checkpoint 2 +
    # idle 3; no step, so no failure and an empty step table.
    got = _split([(0, -1, "init", 0, 5), (0, -1, "checkpoint_load", 8, 10)])
    assert got.n_ranks == 1 and got.wall_s == pytest.approx(10.0)
    assert (got.gpu_s["init"], got.gpu_s["checkpoint"], got.gpu_s["idle"]) == pytest.approx((5.0, 2.0, 3.0))
    assert got.gpu_s["failure_downtime"] == 0.0 and got.interruptions == [] and len(got.steps.step) == 0


def test_a_restart_in_a_gap_of_at_most_3_medians_is_not_a_failure() -> None:
    # 10 s steps (median 10 s). (a) steps 1 [0,10], 2 [10,20], checkpoint_load [20,21], 3
    # [21,31]: the 1 s gap holds a restart span but is short: checkpoint 1 s, no failure.
    # (b) steps 1 [0,10], init [10,40], 2 [40,50], 3 [50,60]: the gap is exactly 3 x 10 s =
    # 30 s, not more: init 30 s, no failure.
    short = _split([(0, 1, "train_step", 0, 10), (0, 2, "train_step", 10, 20), (0, -1, "checkpoint_load", 20, 21),
                    (0, 3, "train_step", 21, 31)])
    assert short.gpu_s["checkpoint"] == pytest.approx(1.0)
    assert short.gpu_s["failure_downtime"] == 0.0 and short.interruptions == []
    edge = _split([(0, 1, "train_step", 0, 10), (0, -1, "init", 10, 40), (0, 2, "train_step", 40, 50),
                   (0, 3, "train_step", 50, 60)])
    assert edge.gpu_s["init"] == pytest.approx(30.0)
    assert edge.gpu_s["failure_downtime"] == 0.0 and edge.interruptions == []


def test_the_config_and_results_are_frozen() -> None:
    # GoodputConfig is a shared default argument (and a hashable value); the split and its
    # table are results: none of them can be assigned to.
    cfg = GoodputConfig()
    assert hash(cfg) == hash(GoodputConfig())
    got = _split(_step(0, 1, 0.0, (9.0, 11.0)))
    for obj, name in ((cfg, "failure_gap_steps"), (got, "n_ranks"), (got.steps, "step")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, name, 1)


def test_a_split_built_without_the_optional_fields() -> None:
    # JobSplit's defaults: no interruptions, an unknown (NaN) median step, nothing skipped; one
    # rank over 0..10 s with 6 s of compute and 4 s idle: shares 0.6 and 0.4.
    table = _split([]).steps
    got = JobSplit(0.0, 10.0, 1, {"compute": 6.0, "idle": 4.0}, table)
    assert got.interruptions == [] and np.isnan(got.median_step_s) and got.skipped_spans == 0
    assert got.wall_s == 10.0
    assert got.shares() == pytest.approx({"compute": 0.6, "idle": 0.4})


def test_a_child_starting_at_its_steps_end_is_outside_it() -> None:
    # Steps [0,10] and [12,22] with forward covering each; a forward starting at 10.0, the first
    # step's end, lies in neither (the second starts at 12): skipped, and 10..12 stays idle.
    rows: list[Row] = [(0, 0, "train_step", 0, 10), (0, -1, "forward", 0, 10), (0, 1, "train_step", 12, 22),
                       (0, -1, "forward", 12, 22), (0, -1, "forward", 10, 11)]
    got = _split(rows)
    assert got.skipped_spans == 1
    assert got.gpu_s["compute"] == pytest.approx(20.0) and got.gpu_s["idle"] == pytest.approx(2.0)


def test_overlapping_steps_of_a_rank_are_scaled_to_their_union() -> None:
    # Rank 0: step 1 [0,10] (forward 0..3, allreduce 3..5, nothing after: 5 s other) and step 2
    # [5,15] (forward 5..13, allreduce 13..15) overlap (a child belongs to the latest step that
    # started at or before it). Their union is 15 s, their lengths sum to 20 s, so every in-step
    # part is scaled by 15/20 = 0.75: compute (3 + 8) x 0.75 = 8.25, exposed comm (2 + 2) x 0.75
    # = 3 (one rank per step: no straggler wait), other 5 x 0.75 = 3.75; in all 15 = the wall.
    rows: list[Row] = [(0, 1, "train_step", 0, 10), (0, -1, "forward", 0, 3), (0, -1, "allreduce", 3, 5),
                       (0, 2, "train_step", 5, 15), (0, -1, "forward", 5, 13), (0, -1, "allreduce", 13, 15)]
    got = _split(rows)
    assert got.gpu_s["compute"] == pytest.approx(8.25)
    assert got.gpu_s["exposed_communication"] == pytest.approx(3.0)
    assert got.gpu_s["step_other"] == pytest.approx(3.75)
    assert sum(got.gpu_s.values()) == pytest.approx(15.0)
    # Two ranks like that, rank 1's step-1 allreduce only 3..4 (exposed 1 s, rank 0's 2 s): rank 0
    # waits 2 - 1 = 1 s on the straggler in step 1, scaled by 0.75: 0.75; 2 x 15 = 30 GPU-s.
    rows1 = [(1, k, n, a, b) for (_r, k, n, a, b) in rows]
    rows1[2] = (1, -1, "allreduce", 3, 4)
    two = _split(rows + rows1)
    assert two.gpu_s["straggler_wait"] == pytest.approx(0.75)
    assert sum(two.gpu_s.values()) == pytest.approx(30.0)
    # The same under a second: bare steps [0,0.5] and [0.25,0.75]: union 0.75 of 1.0 s summed.
    short = _split([(0, 1, "train_step", 0, 0.5), (0, 2, "train_step", 0.25, 0.75)])
    assert short.gpu_s["compute"] == pytest.approx(0.75)
