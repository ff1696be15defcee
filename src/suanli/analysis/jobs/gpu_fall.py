"""How a job's GPUs fell together when it stalled: the job-wide symptoms its finding counts.

A hung collective leaves every GPU of the job with no NVLink traffic, idle tensor cores and a
fraction of its power, at once; those are the job's symptoms, not faults of each GPU (the health
analysis judges a GPU against its peers doing the same work, so it raises nothing for them). This
reads, per metric, each of the job's GPUs' median before the stall and during it, and counts the
GPUs that fell below ``keep`` of their own level.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from suanli.analysis.median import median
from suanli.store.api import Store

__all__ = ["FALL_METRICS", "FallConfig", "fallen_together"]

FALL_METRICS: tuple[tuple[str, str, float, str], ...] = (
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "NVLink", 1e9, "GB/s"),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "tensor activity", 0.01, "%"),
    ("DCGM_FI_DEV_GPU_UTIL", "utilisation", 1.0, "%"),
    ("DCGM_FI_DEV_POWER_USAGE", "power", 1.0, "W"),
)
"""(metric, words, divisor to the unit, unit) of the signals a stall lowers on every GPU."""


@dataclass(frozen=True)
class FallConfig:
    keep: float = 0.7
    """A GPU fell when its median during the stall is below this share of its median before."""
    settle_s: float = 60.0
    """The stall's first seconds are left out (the last step's traffic still drains)."""


def _medians(store: Store, metric: str, gpus: Sequence[str], start: float, at_s: float,
             end: float, cfg: FallConfig) -> list[tuple[float, float]]:
    out = []
    for s in store.series(metric, entity_ids=list(gpus), start=start, end=end):
        if s.key.entity_id not in gpus:
            continue
        ok = np.isfinite(s.values)
        before = s.values[ok & (s.ts < at_s)]
        during = s.values[ok & (s.ts >= at_s + cfg.settle_s)]
        if before.size and during.size:
            out.append((median(before), median(during)))
    return out


def fallen_together(store: Store, job: str, gpus: Sequence[str], start: float, at_s: float, end: float,
                    cfg: FallConfig = FallConfig()) -> str | None:
    """One evidence line: how many of the job's GPUs fell together at ``at_s``, metric by metric
    (None when no metric fell on most of them)."""
    falls: list[tuple[str, int]] = []
    for metric, words, div, unit in FALL_METRICS:
        pairs = _medians(store, metric, gpus, start, at_s, end, cfg)
        fell = [(b, d) for b, d in pairs if b > 0 and d < cfg.keep * b]
        if not pairs or len(fell) * 2 < len(pairs):
            continue
        b = median([x for x, _ in fell]) / div
        d = median([y for _, y in fell]) / div
        falls.append((f"{words} {_num(b)} -> {_num(d)} {unit}", len(fell)))
    if not falls:
        return None
    most = max(n for _, n in falls)
    parts = [text if n == most else f"{text} ({n} GPUs)" for text, n in falls]
    return (f"{job}: {most} of {len(gpus)} GPUs fell together ({', '.join(parts)}): "
            f"job-wide symptoms of this stall, not GPU faults")


def _num(x: float) -> str:
    return f"{x:.0f}" if abs(x) >= 10 else f"{x:.2g}"
