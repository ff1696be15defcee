"""Counter arithmetic every backend shares: Prometheus' reset rule over finite samples.

When a sample is below the one before, the counter restarted from zero and the increase is the
new value itself. Non-finite samples (NaN, ±Inf, DCGM blanks already NaN) are skipped.
"""

from __future__ import annotations

import math

import numpy as np

from suanli.store.api import F64

__all__ = ["counter_increase", "counter_rate"]


def counter_rate(ts: F64, values: F64) -> tuple[F64, F64]:
    """(later timestamps, per-second rates) of a counter, finite samples only, resets handled."""
    ok = np.isfinite(values) & np.isfinite(ts)
    ts, values = ts[ok], values[ok]
    if len(ts) < 2:
        return np.empty(0), np.empty(0)
    inc = _increments(values)
    dt = np.diff(ts)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(dt > 0, inc / dt, math.nan)
    return ts[1:], rate


def counter_increase(values: F64) -> float | None:
    """Total increase of a counter over its finite samples, resets handled (None if < 2 samples)."""
    values = values[np.isfinite(values)]
    if len(values) < 2:
        return None
    return float(_increments(values).sum())


def _increments(values: F64) -> F64:
    inc = np.diff(values)
    reset = inc < 0
    inc[reset] = values[1:][reset]
    return inc
