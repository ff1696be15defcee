"""storage_slow: data loading slows down on every job that reads one storage, and the storage's
read latency rises. One job's slow data loader (its own input pipeline) is not a storage fault.

Per job, the per-step median of the ``data_load`` phase over ranks is tested with
:func:`suanli.analysis.changepoint.sudden_increase` (log10: changes are multiplicative); the
storage's ``suanli_storage_read_latency_seconds`` likewise.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from suanli.analysis.changepoint import ChangeConfig, ChangePoint, sudden_increase
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
    min_jobs_without_latency: int = 2
    """Without a latency series, at least this many jobs (all of the storage's) must slow."""


@dataclass(frozen=True)
class StorageVerdict:
    storage_id: str
    slow: bool
    onset_s: float | None
    jobs_slowed: tuple[str, ...]
    jobs_fine: tuple[str, ...]
    latency_change: ChangePoint | None
    job_changes: dict[str, ChangePoint]


def data_load_per_step(frame: SpanFrame) -> tuple[F64, F64]:
    """(step start s, median data_load s over ranks) per step, from one job's spans."""
    ok = (frame.name == "data_load") & (frame.step >= 0) & np.isfinite(frame.start_s) & np.isfinite(frame.end_s)
    if not ok.any():
        return np.zeros(0), np.zeros(0)
    steps, idx = np.unique(frame.step[ok], return_inverse=True)
    dur = (frame.end_s - frame.start_s)[ok]
    start = np.full(len(steps), np.inf)
    np.minimum.at(start, idx, frame.start_s[ok])
    order = np.lexsort((dur, idx))
    idx_s, dur_s = idx[order], dur[order]
    first = np.searchsorted(idx_s, np.arange(len(steps)))
    cnt = np.bincount(idx_s, minlength=len(steps))
    med = (dur_s[first + (cnt - 1) // 2] + dur_s[first + cnt // 2]) / 2.0
    return start, med


def _rise(ts: F64, values: F64, config: StorageConfig) -> ChangePoint | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        cp = sudden_increase(ts, values, config.change)
    if cp is None or cp.after < config.min_increase * max(cp.before, config.change.floor):
        return None
    return cp


def judge_storage(storage_id: str, job_steps: dict[str, tuple[F64, F64]],
                  latency: tuple[F64, F64] | None, config: StorageConfig = StorageConfig()) -> StorageVerdict:
    """Is ``storage_id`` slow? ``job_steps``: job -> (step start s, data_load s) of every job
    reading it (jobs without data_load spans left out); ``latency``: (ts, seconds) or None."""
    changes = {j: cp for j, (t, v) in job_steps.items() if (cp := _rise(t, v, config)) is not None}
    slowed = tuple(sorted(changes))
    fine = tuple(sorted(set(job_steps) - set(changes)))
    lat_cp = _rise(*latency, config) if latency is not None and len(latency[0]) else None
    all_jobs = bool(job_steps) and not fine
    if latency is not None and len(latency[0]):
        slow = all_jobs and lat_cp is not None
    else:
        slow = all_jobs and len(slowed) >= config.min_jobs_without_latency
    onsets = [cp.onset_s for cp in changes.values()] + ([lat_cp.onset_s] if lat_cp else [])
    return StorageVerdict(storage_id, slow, min(onsets) if slow and onsets else None, slowed, fine,
                          lat_cp, changes)
