"""storage_slow: data loading slows down on every job that reads one storage, and the storage's
read latency rises. One job's slow data loader (its own input pipeline) is not a storage fault.

Per job, the per-step median of the ``data_load`` phase over ranks is tested with
:func:`suanli.analysis.changepoint.sudden_increase` (log10: changes are multiplicative), and, for
a fault that rises and recovers inside the window, as an episode against the job's own past (its
fast steps); the storage's ``suanli_storage_read_latency_seconds`` with ``sudden_increase``.

Without a latency series the jobs are the only witnesses: every job of the storage must slow, by
``min_increase_alone`` when it is the storage's only reader. A slowdown already running when the
window opens has no past to compare with: a storage whose every reader spends more than
``max_load_share`` of its step waiting for data (healthy jobs: a few per cent) is slow too.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from suanli.analysis.changepoint import ChangeConfig, ChangePoint, sudden_increase
from suanli.analysis.codes import int_codes
from suanli.analysis.fabric.counters import episode
from suanli.analysis.median import median
from suanli.store.api import SpanFrame

__all__ = ["StorageConfig", "StorageVerdict", "data_load_per_step", "judge_storage"]

F64 = npt.NDArray[np.float64]


def _cfg() -> ChangeConfig:
    return ChangeConfig(log10=True, min_sigma=0.03, floor=1e-6)


@dataclass(frozen=True)
class StorageConfig:
    """Thresholds of the storage check."""

    change: ChangeConfig = field(default_factory=_cfg)
    """Change test on log10 of per-step data_load seconds and of read latency."""
    min_increase: float = 1.3
    """Both must rise to at least this multiple of their baseline (and suddenly)."""
    min_increase_alone: float = 2.0
    """Without a latency series and with a single reader, its data_load must rise this much."""
    episode_quantile: float = 0.2
    """A job's own past: this quantile of its per-step data_load over the window (its fast steps)."""
    min_episode_s: float = 90.0
    """An episode of slow data loading lasts at least this long (and three steps)."""
    max_load_share: float = 0.25
    """A job that waits for data this share of its step over the whole window is input-bound."""


@dataclass(frozen=True)
class StorageVerdict:
    storage_id: str
    slow: bool
    onset_s: float | None
    jobs_slowed: tuple[str, ...]
    jobs_fine: tuple[str, ...]
    latency_change: ChangePoint | None
    job_changes: dict[str, ChangePoint]
    load_share: dict[str, float] = field(default_factory=dict)
    """Per job: the share of its step it waits for data (its fast steps'), when over ``max_load_share``."""


_RADIX_STEPS = 1 << 16
"""Distinct steps up to which ``data_load_per_step`` groups by a 16-bit key."""


def data_load_per_step(frame: SpanFrame) -> tuple[F64, F64]:
    """(step start s, median data_load s over ranks) per step, from one job's spans."""
    ok = frame.name_in(("data_load",)) & (frame.step >= 0) & np.isfinite(frame.start_s) & np.isfinite(frame.end_s)
    if not ok.any():
        return np.zeros(0), np.zeros(0)
    steps, idx = int_codes(frame.step[ok])
    dur = (frame.end_s - frame.start_s)[ok]
    start = np.full(len(steps), np.inf)
    np.minimum.at(start, idx, frame.start_s[ok])
    cnt = np.bincount(idx, minlength=len(steps))
    first = np.concatenate(([0], np.cumsum(cnt)[:-1]))
    lo, hi = first + (cnt - 1) // 2, first + cnt // 2          # each step's middle one or two
    if len(steps) <= _RADIX_STEPS:
        # group by step with NumPy's radix sort (16-bit keys), then put each step's middle values
        # in place: 1,200 steps of 8,000 ranks in 0.3 s, where sorting by (step, duration) took 3 s
        dur_s = dur[np.argsort(idx.astype(np.uint16), kind="stable")]
        for k, (a, b) in enumerate(zip(first.tolist(), (first + cnt).tolist(), strict=True)):
            dur_s[a:b] = np.partition(dur_s[a:b], sorted({int(lo[k] - a), int(hi[k] - a)}))
    else:
        dur_s = dur[np.lexsort((dur, idx))]
    med = (dur_s[lo] + dur_s[hi]) / 2.0
    return start, med


def _rise(ts: F64, values: F64, config: StorageConfig) -> ChangePoint | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        cp = sudden_increase(ts, values, config.change)
    if cp is None or cp.after < config.min_increase * max(cp.before, config.change.floor):
        return None
    return cp


def _episode(ts: F64, values: F64, config: StorageConfig) -> ChangePoint | None:
    """The longest run of steps at ``min_increase`` x the job's own fast steps, if it lasts."""
    ok = np.isfinite(values) & np.isfinite(ts)
    t, v = ts[ok], values[ok]
    if len(v) < 6:
        return None
    base = max(float(np.quantile(v, config.episode_quantile)), config.change.floor)
    smooth = np.array([median(v[max(0, i - 1): i + 2]) for i in range(len(v))])
    run = episode(smooth >= config.min_increase * base, 3)
    if run is None or t[run[1] - 1] - t[run[0]] < config.min_episode_s:
        return None
    i0, i1 = run
    after = median(v[i0:i1])
    return ChangePoint(float(t[i0]), float(t[min(i1 - 1, i0 + 2)]), base, after, after / base)


def _slowed(ts: F64, values: F64, config: StorageConfig) -> ChangePoint | None:
    return _rise(ts, values, config) or _episode(ts, values, config)


def _load_share(ts: F64, values: F64, config: StorageConfig) -> float:
    """The ``episode_quantile`` of data_load / step (step = gap to the next step's start)."""
    if len(ts) < 4:
        return 0.0
    gaps = np.diff(ts)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(gaps > 0, values[:-1] / gaps, np.nan)
    share = share[np.isfinite(share)]
    return float(np.quantile(share, config.episode_quantile)) if len(share) else 0.0


def judge_storage(storage_id: str, job_steps: dict[str, tuple[F64, F64]],
                  latency: tuple[F64, F64] | None, config: StorageConfig = StorageConfig()) -> StorageVerdict:
    """Is ``storage_id`` slow? ``job_steps``: job -> (step start s, data_load s) of every job
    reading it (jobs without data_load spans left out); ``latency``: (ts, seconds) or None."""
    changes = {j: cp for j, (t, v) in job_steps.items() if (cp := _slowed(t, v, config)) is not None}
    slowed = tuple(sorted(changes))
    fine = tuple(sorted(set(job_steps) - set(changes)))
    measured = latency is not None and len(latency[0]) > 0
    lat_cp = _rise(*latency, config) if latency is not None and measured else None
    all_jobs = bool(job_steps) and not fine
    if measured:
        slow = all_jobs and lat_cp is not None
    elif len(slowed) == 1:
        cp = changes[slowed[0]]
        slow = all_jobs and cp.after >= config.min_increase_alone * max(cp.before, config.change.floor)
    else:
        slow = all_jobs
    share = {j: _load_share(t, v, config) for j, (t, v) in job_steps.items()}
    bound = {j: x for j, x in share.items() if x >= config.max_load_share}
    onsets = [cp.onset_s for cp in changes.values()] + ([lat_cp.onset_s] if lat_cp else [])
    if job_steps and len(bound) == len(job_steps) and not slow:
        slow, onsets = True, onsets or [min(float(t[0]) for t, _ in job_steps.values())]
    return StorageVerdict(storage_id, slow, min(onsets) if slow and onsets else None, slowed, fine,
                          lat_cp, changes, bound if len(bound) == len(job_steps) else {})
