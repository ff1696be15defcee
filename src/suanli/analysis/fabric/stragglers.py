"""Stragglers: the rank that is slow in its own compute, told apart from the ranks that wait on it.

Per step, every rank's compute time (forward + backward + optimizer) is scored against the
step's median over ranks with a robust z = (x - median) / max(1.4826 MAD, rel_floor x median).
A rank is slow in a step when z >= ``min_z`` and x >= ``min_ratio`` x median. Its straggler score
in [0, 1] is the share of slow steps from its first slow step on, or from its first to its last
when those lie ``min_episode_s`` apart (a straggler that recovers inside the window), whichever is
higher (0 with fewer than ``min_slow_steps``). A victim waits in its collectives: its allreduce grows, its compute does
not, so it scores 0. Vectorised over ranks x steps (10,240 ranks x 720 steps in well under a second).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from suanli.analysis.codes import int_codes
from suanli.store.api import SpanFrame

__all__ = ["COMPUTE_PHASES", "PhaseMatrix", "StragglerConfig", "StragglerScores", "phase_matrix",
           "straggler_scores"]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
COMPUTE_PHASES: tuple[str, ...] = ("forward", "backward", "optimizer")
COMM_PHASES: tuple[str, ...] = ("allreduce",)


@dataclass(frozen=True)
class StragglerConfig:
    """Thresholds of the straggler scores."""

    min_z: float = 4.0
    """Robust z of a rank's compute time in one step over the step's median."""
    min_ratio: float = 1.1
    """... and at least this multiple of the step's median compute time."""
    rel_floor: float = 0.01
    """Scale floor as a share of the step median (ranks with identical times)."""
    min_slow_steps: int = 5
    """A straggler is slow in at least this many steps ..."""
    min_score: float = 0.6
    """... and in at least this share of the steps from its first slow one (the score)."""
    min_episode_s: float = 120.0
    """A slow spell that ends inside the window is scored over its own span when it lasts this long."""
    min_ranks: int = 4
    """Steps with fewer ranks reporting are not scored."""
    hot_gpu_c: float = 85.0
    """A GPU this hot (late median) is thermal (health's gpu_thermal), not a straggler."""
    nvlink_drop_ratio: float = 0.5
    """A GPU whose NVLink bandwidth fell under this share of its early level is nvlink_degradation."""
    clock_ratio: float = 0.9
    """Several slow ranks in one job: the straggler is the one whose SM clock is under this share
    of the others' (tensor-parallel peers wait inside their compute too); none such: no finding."""


@dataclass(frozen=True)
class PhaseMatrix:
    """Seconds per (rank, step) of the compute and communication phases; NaN where missing."""

    ranks: I64
    steps: I64
    step_start_s: F64
    compute_s: F64
    comm_s: F64


@dataclass(frozen=True)
class StragglerScores:
    ranks: I64
    score: F64                 # [0, 1] per rank
    onset_step: I64            # index into steps, -1 when never slow
    slow_ratio: F64            # median compute / step median over the slow steps (1 if none)
    comm_ratio: F64            # median allreduce / step median over the same steps


def _pivot(r_idx: I64, s_idx: I64, dur: F64, n_r: int, n_s: int) -> F64:
    cell = r_idx * n_s + s_idx
    tot = np.bincount(cell, weights=dur, minlength=n_r * n_s)
    cnt = np.bincount(cell, minlength=n_r * n_s)
    return np.where(cnt > 0, tot, np.nan).reshape(n_r, n_s)


def phase_matrix(frame: SpanFrame) -> PhaseMatrix:
    """Pivot spans (one job) into ranks x steps compute and communication seconds."""
    comp = frame.name_in(COMPUTE_PHASES)
    comm = frame.name_in(COMM_PHASES)
    keep = (comp | comm) & (frame.rank >= 0) & (frame.step >= 0) & np.isfinite(frame.start_s) & np.isfinite(frame.end_s)
    rank, step = frame.rank[keep], frame.step[keep]            # one selection of each column, not two
    start = frame.start_s[keep]
    dur = frame.end_s[keep] - start
    comp, comm = comp[keep], comm[keep]
    ranks, r_idx = int_codes(rank)                       # no sort of every span's rank and step
    steps, s_idx = int_codes(step)
    n_r, n_s = len(ranks), len(steps)
    first = np.full(n_s, np.inf)
    np.minimum.at(first, s_idx, start)
    return PhaseMatrix(ranks.astype(np.int64), steps.astype(np.int64), first,
                       _pivot(r_idx[comp], s_idx[comp], dur[comp], n_r, n_s),
                       _pivot(r_idx[comm], s_idx[comm], dur[comm], n_r, n_s))


def _robust_z(x: F64, rel_floor: float) -> tuple[F64, F64]:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        med = np.nanmedian(x, axis=0)
        mad = np.nanmedian(np.abs(x - med[None, :]), axis=0)
        scale = np.maximum(1.4826 * mad, rel_floor * np.abs(med))
        return (x - med[None, :]) / scale[None, :], x / med[None, :]


def straggler_scores(m: PhaseMatrix, config: StragglerConfig = StragglerConfig()) -> StragglerScores:
    """Per-rank straggler score in [0, 1] (see the module docstring)."""
    n_r, n_s = m.compute_s.shape
    if n_r == 0 or n_s == 0:
        e = np.zeros(n_r)
        return StragglerScores(m.ranks, e, np.full(n_r, -1, dtype=np.int64), e + 1, e + 1)
    reporting = np.isfinite(m.compute_s).sum(axis=0) >= config.min_ranks
    z, ratio = _robust_z(m.compute_s, config.rel_floor)
    slow = np.nan_to_num(z) >= config.min_z
    slow &= np.nan_to_num(ratio) >= config.min_ratio
    slow &= reporting[None, :]
    seen = np.isfinite(m.compute_s) & reporting[None, :]
    n_slow = slow.sum(axis=1)
    first = np.where(n_slow > 0, np.argmax(slow, axis=1), n_s)
    idx = np.arange(n_s)[None, :]
    after = seen & (idx >= first[:, None])
    share = n_slow / np.maximum(after.sum(axis=1), 1)
    last = n_s - 1 - np.argmax(slow[:, ::-1], axis=1)
    t = m.step_start_s
    lasting = (n_slow > 0) & (t[last] - t[np.minimum(first, n_s - 1)] >= config.min_episode_s)
    spell = after & (idx <= last[:, None])
    share = np.where(lasting, np.maximum(share, n_slow / np.maximum(spell.sum(axis=1), 1)), share)
    score = np.where(n_slow >= config.min_slow_steps, share, 0.0)
    _, comm_ratio_m = _robust_z(m.comm_s, config.rel_floor)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        slow_ratio = np.nan_to_num(np.nanmedian(np.where(slow, ratio, np.nan), axis=1), nan=1.0)
        comm_ratio = np.nan_to_num(np.nanmedian(np.where(slow, comm_ratio_m, np.nan), axis=1), nan=1.0)
    onset = np.where(n_slow > 0, first, -1).astype(np.int64)
    return StragglerScores(m.ranks, np.clip(score, 0.0, 1.0), onset, slow_ratio, comm_ratio)
