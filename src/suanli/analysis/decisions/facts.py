"""A job's decision facts from its spans, as plain arrays (no store, no file): pace, checkpoints,
restart time. The same functions serve the pipeline (arrays from ``Store.spans``) and the bench
(arrays from a scenario's trace file).

* healthy step: median duration of the steps that ended at or before the onset (at least
  ``min_baseline`` of them), the impact measure's baseline;
* current step: median of the last ``recent`` steps that ended after the onset and by now;
* stalled: the last step ended more than ``stall_steps`` healthy steps before now;
* work since the last checkpoint: steps that ended after the last ``checkpoint_save`` ended (and by
  now) × healthy step; interval: median count of steps between consecutive saves × healthy step;
* restart time: median over ``init`` spans of (first step start after it − its start).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from suanli.analysis.median import median

__all__ = ["Checkpoints", "Pace", "checkpoints", "pace", "restart_time"]

F64 = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Pace:
    healthy_step_s: float | None
    current_step_s: float | None
    stalled: bool


@dataclass(frozen=True)
class Checkpoints:
    progress_since_checkpoint_s: float | None
    checkpoint_interval_s: float | None


def _finite(a: npt.ArrayLike) -> F64:
    return np.asarray(a, dtype=np.float64)


def pace(step_end: npt.ArrayLike, step_s: npt.ArrayLike, onset_s: float, now_s: float, *,
         min_baseline: int = 3, recent: int = 5, stall_steps: float = 3.0) -> Pace:
    end, dur = _finite(step_end), _finite(step_s)
    ok = np.isfinite(end) & np.isfinite(dur) & (dur > 0)
    end, dur = end[ok], dur[ok]
    before = dur[end <= onset_s]
    healthy = median(before) if len(before) >= max(min_baseline, 1) else None
    after = (end > onset_s) & (end <= now_s)
    order = np.argsort(end[after], kind="stable")
    last = dur[after][order][-max(recent, 1):]
    current = median(last) if len(last) else None
    done = end[end <= now_s]
    ref = healthy if healthy is not None else (median(dur) if len(dur) else None)
    stalled = ref is not None and len(done) > 0 and now_s - float(done.max()) > stall_steps * ref
    return Pace(healthy, current, bool(stalled))


def checkpoints(ckpt_end: npt.ArrayLike, step_end: npt.ArrayLike, now_s: float,
                healthy_step_s: float | None) -> Checkpoints:
    saves = np.sort(_finite(ckpt_end)[np.isfinite(_finite(ckpt_end))])
    saves = saves[saves <= now_s]
    steps = np.sort(_finite(step_end)[np.isfinite(_finite(step_end))])
    if healthy_step_s is None or len(saves) == 0:
        return Checkpoints(None, None)
    done = int(np.count_nonzero((steps > saves[-1]) & (steps <= now_s)))
    interval = None
    if len(saves) >= 2:
        between = np.diff(np.searchsorted(steps, saves, side="right"))
        between = between[between > 0]
        interval = median(between) * healthy_step_s if len(between) else None
    return Checkpoints(done * healthy_step_s, interval)


def restart_time(init_start: npt.ArrayLike, step_start: npt.ArrayLike) -> float | None:
    inits = _finite(init_start)
    starts = np.sort(_finite(step_start)[np.isfinite(_finite(step_start))])
    gaps = []
    for t in inits[np.isfinite(inits)]:
        i = int(np.searchsorted(starts, t, side="left"))
        if i < len(starts):
            gaps.append(float(starts[i] - t))
    return median(gaps) if gaps else None
