"""Stragglers on synthetic dp/tp/pp jobs: the slow rank found, the ranks waiting on it not blamed."""

from __future__ import annotations

import numpy as np

from suanli.analysis.fabric.stragglers import phase_matrix, straggler_scores
from suanli.store.api import SpanFrame


def job_frame(world: int, steps: int, slow_rank: int | None = None, slow_from: int = 10,
              slow_factor: float = 1.4, comm_extra_all_s: float = 0.0, seed: int = 0) -> SpanFrame:
    """forward 0.4 s, backward 0.6 s, optimizer 0.05 s, allreduce 0.2 s per rank and step (1 % noise).
    A slow rank's compute is `slow_factor` x longer from `slow_from`; every other rank then waits
    the difference inside its allreduce (synchronous data parallelism)."""
    rng = np.random.default_rng(seed)
    rows: list[tuple[int, int, str, float, float]] = []
    t = 0.0
    for s in range(steps):
        extra = (slow_factor - 1.0) * 1.05 if slow_rank is not None and s >= slow_from else 0.0
        for r in range(world):
            noise = 1 + 0.01 * rng.standard_normal(4)
            is_slow = r == slow_rank and s >= slow_from
            f = 0.4 * noise[0] * (slow_factor if is_slow else 1.0)
            b = 0.6 * noise[1] * (slow_factor if is_slow else 1.0)
            o = 0.05 * noise[2] * (slow_factor if is_slow else 1.0)
            ar = 0.2 * noise[3] + comm_extra_all_s + (0.0 if is_slow else extra)
            x = t
            for name, d in (("forward", f), ("backward", b), ("allreduce", ar), ("optimizer", o)):
                rows.append((r, s, name, x, x + d))
                x += d
        t += 2.0
    n = len(rows)
    obj = np.array([None] * n, dtype=object)
    return SpanFrame(job_id=np.array(["j"] * n, dtype=object), rank=np.array([x[0] for x in rows]),
                     step=np.array([x[1] for x in rows]), name=np.array([x[2] for x in rows], dtype=object),
                     start_s=np.array([x[3] for x in rows]), end_s=np.array([x[4] for x in rows]),
                     gpu_id=obj, node_id=obj, trace_id=obj, span_id=obj, parent_id=obj)


def test_slow_rank_found_victims_not_blamed_dp_tp_pp() -> None:
    # dp=2, tp=4, pp=2: 16 ranks; rank 5 is 1.4x slower in compute from step 10 of 40
    m = phase_matrix(job_frame(16, 40, slow_rank=5))
    assert m.compute_s.shape == (16, 40)
    sc = straggler_scores(m)
    # rank 5 is slow in all 30 steps from step 10: score 30/30 = 1
    assert sc.score[5] == 1.0
    assert int(m.steps[sc.onset_step[5]]) == 10
    assert abs(sc.slow_ratio[5] - 1.4) < 0.03
    # its allreduce is shorter than the others' (they wait on it): 0.2 s vs 0.2 + 0.42 s
    assert sc.comm_ratio[5] < 0.5
    assert np.all(np.delete(sc.score, 5) == 0.0)


def test_everyone_waiting_in_collectives_is_no_straggler() -> None:
    # a slow network: allreduce +0.5 s on every rank, compute unchanged -> nobody is a straggler
    sc = straggler_scores(phase_matrix(job_frame(32, 30, comm_extra_all_s=0.5)))
    assert np.all(sc.score == 0.0)


def test_short_slowdown_is_not_persistent() -> None:
    # slow only in the last 3 steps (< min_slow_steps = 5): score 0
    sc = straggler_scores(phase_matrix(job_frame(8, 30, slow_rank=2, slow_from=27)))
    assert sc.score[2] == 0.0


def test_empty_and_unknown_ranks_do_not_crash() -> None:
    f = job_frame(4, 3)
    bad = SpanFrame(f.job_id, np.full(len(f), -1), f.step, f.name, f.start_s, f.end_s, f.gpu_id,
                    f.node_id, f.trace_id, f.span_id, f.parent_id)
    sc = straggler_scores(phase_matrix(bad))
    assert len(sc.score) == 0


def test_a_straggler_that_recovers_inside_the_window_scores_over_its_spell() -> None:
    # steps of 2 s; rank 3 is 1.4x slow in steps 100..179 (160 s >= 120 s) of 400, then recovers.
    # From its first slow step on it is slow in 80 of 300 steps (0.27 < 0.6); over its spell, 80 of 80.
    f = job_frame(8, 400, slow_rank=3, slow_from=100)
    keep = ~((f.rank == 3) & (f.step >= 180))
    g = job_frame(8, 400)                     # the recovered steps: the healthy frame's rows of rank 3
    back = (g.rank == 3) & (g.step >= 180)
    both = SpanFrame(*(np.concatenate([getattr(f, k)[keep], getattr(g, k)[back]]) for k in SpanFrame.__dataclass_fields__))
    sc = straggler_scores(phase_matrix(both))
    assert sc.score[3] == 1.0 and sc.onset_step[3] == 100
    # a spell of 10 slow steps (18 s < 120 s) at the same place is judged the old way: 10/300
    f2 = job_frame(8, 400, slow_rank=3, slow_from=100)
    keep2 = ~((f2.rank == 3) & (f2.step >= 110))
    short = SpanFrame(*(np.concatenate([getattr(f2, k)[keep2], getattr(g, k)[(g.rank == 3) & (g.step >= 110)]])
                        for k in SpanFrame.__dataclass_fields__))
    assert straggler_scores(phase_matrix(short)).score[3] < 0.6
