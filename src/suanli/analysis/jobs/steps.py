"""Per-step timing of a job from its spans: when each step ended, how long it took, and when a
stall became visible. Shared by the hang detector and the incident impact measure."""

from __future__ import annotations

import numpy as np

from suanli.analysis.median import median
from suanli.analysis.window import Window
from suanli.store.api import Store

__all__ = ["stall_time", "step_times"]


def stall_time(step_end_s: np.ndarray, step_s: np.ndarray, before_ts: float, stall_steps: float) -> float | None:
    """When a job's stall became visible: its last step (finished before ``before_ts``) plus
    ``stall_steps`` median step times. None without at least three steps."""
    done = step_end_s < before_ts
    if int(np.count_nonzero(done)) < 3:
        return None
    return float(step_end_s[done].max() + stall_steps * median(step_s[done]))


def step_times(store: Store, job_id: str, window: Window | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(end, duration) per step of a job, sorted by step: from the first rank's start to the last
    rank's end of its ``train_step`` spans (steps wait for the slowest rank) overlapping ``window``
    (None: all of them); spans without a step number are left out."""
    lo, hi = window if window is not None else (None, None)
    frame = store.spans(job_id=job_id, names=["train_step"], start=lo, end=hi, ids=False)
    known = frame.step >= 0
    if not known.any():
        return np.empty(0), np.empty(0)
    order = np.argsort(frame.step[known], kind="stable")
    steps = frame.step[known][order]
    _, first = np.unique(steps, return_index=True)
    ends = np.maximum.reduceat(frame.end_s[known][order], first)
    starts = np.minimum.reduceat(frame.start_s[known][order], first)
    return ends, ends - starts
