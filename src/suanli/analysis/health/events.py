"""Hardware events from DCGM counters and log records: pure functions over arrays.

Counters follow Prometheus' reset rule (a drop means the counter restarted from zero, so the
increase at that sample is the new value, never a negative error count). NaN and DCGM's blank
sentinels are "no reading": they are skipped, never treated as errors or as zero.

Throttle reasons are NVIDIA's ``clocks_throttle_reasons`` bits (nvml.h,
``nvmlClocksThrottleReason*``): 0x1 GPU idle, 0x2 applications clocks setting, 0x4 SW power cap,
0x8 HW slowdown, 0x10 sync boost, 0x20 SW thermal slowdown, 0x40 HW thermal slowdown,
0x80 HW power brake slowdown, 0x100 display clock setting.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from suanli.ingest.xid import xid_info

__all__ = [
    "CLOCKS_EVENT", "DBE", "GPU_TEMP", "GPU_UTIL", "MEMORY_TEMP", "NVLINK_BW", "PCIE_AER", "PCIE_REPLAY", "POWER", "REMAP_CORR",
    "REMAP_FAIL", "REMAP_UNCORR", "SBE", "SM_CLOCK", "THROTTLE", "THROTTLE_BITS", "XID_CATEGORY",
    "XID_ERRORS", "CounterDelta", "HwEvent", "clean", "counter_delta",
    "decode_throttle", "event_times_from_counter", "sustained_onset", "xid_category", "xid_meaning",
]

F64 = npt.NDArray[np.float64]

SBE = "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"
DBE = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"
REMAP_CORR = "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"
REMAP_UNCORR = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"
REMAP_FAIL = "DCGM_FI_DEV_ROW_REMAP_FAILURE"
XID_ERRORS = "DCGM_FI_DEV_XID_ERRORS"
PCIE_REPLAY = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
PCIE_AER = "suanli_pcie_aer_errors_total"
NVLINK_BW = "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"
THROTTLE = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"
CLOCKS_EVENT = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"    # DCGM >= 3.3 name of the same bitmask
GPU_TEMP = "DCGM_FI_DEV_GPU_TEMP"
MEMORY_TEMP = "DCGM_FI_DEV_MEMORY_TEMP"
SM_CLOCK = "DCGM_FI_DEV_SM_CLOCK"
POWER = "DCGM_FI_DEV_POWER_USAGE"
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"

#: nvml.h clocks_throttle_reasons bits -> short name.
THROTTLE_BITS: dict[int, str] = {
    0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
    0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting",
}

#: Which finding a hardware Xid points at (NVIDIA Xid catalogue, r570 "Xid Errors" table).
XID_CATEGORY: dict[int, str] = {
    48: "gpu_memory_failure",      # DBE (double-bit ECC error)
    63: "gpu_memory_failure",      # ECC page retirement / row remapping recording event
    64: "gpu_memory_failure",      # ECC page retirement / row remapper failure
    94: "gpu_memory_failure",      # contained ECC error
    95: "gpu_memory_failure",      # uncontained ECC error
    140: "gpu_memory_failure",     # unrecovered ECC error (catalogue: RESET_GPU)
    92: "gpu_memory_degradation",  # high single-bit ECC error rate
    79: "gpu_lost",                # GPU has fallen off the bus
    119: "gpu_lost",               # GSP RPC timeout
    120: "gpu_lost",               # GSP error
    74: "nvlink_degradation",      # NVLink error
    **{c: "nvlink_degradation" for c in range(144, 151)},  # NVLink errors (Blackwell decode)
}

_SENTINEL_I32_LO = float(0x7FFFFFF0)
_SENTINEL_I32_HI = float(0x7FFFFFFF)
_SENTINEL_F_LO = 140737488355328.0       # DCGM_FP64_BLANK; 64-bit integer sentinels lie above it


def xid_category(code: int) -> str | None:
    """The finding an Xid code belongs to, or None for application / informational Xids."""
    return XID_CATEGORY.get(int(code))


def xid_meaning(code: int) -> str:
    """Meaning of an Xid code, from the log parser's catalogue (an "unknown Xid" text if unlisted)."""
    return xid_info(int(code)).meaning


def clean(values: F64) -> F64:
    """Copy with NaN where there is no reading: non-finite values and DCGM blank sentinels."""
    v = np.asarray(values, dtype=np.float64).copy()
    bad = ~np.isfinite(v) | ((v >= _SENTINEL_I32_LO) & (v <= _SENTINEL_I32_HI)) | (v >= _SENTINEL_F_LO)
    v[bad] = np.nan
    return v


@dataclass(frozen=True)
class CounterDelta:
    """Increase of a cumulative counter over a range with resets handled.

    ``increments[i]`` is the increase that arrived at ``ts[i]`` (0 at the first valid sample and
    at NaN samples); ``first_value``/``last_value`` are the first and last valid readings.
    """

    ts: F64
    increments: F64
    total: float
    first_value: float
    last_value: float
    resets: int

    @property
    def onset_s(self) -> float | None:
        """Time of the first sample that carried an increase, None when the counter never moved."""
        idx = np.flatnonzero(self.increments > 0)
        return float(self.ts[idx[0]]) if idx.size else None


def counter_delta(ts: F64, values: F64) -> CounterDelta:
    """Increase of a counter between consecutive valid samples, Prometheus reset rule."""
    t = np.asarray(ts, dtype=np.float64)
    v = clean(values)
    ok = np.flatnonzero(np.isfinite(v))
    inc = np.zeros_like(t)
    if ok.size == 0:
        return CounterDelta(t, inc, 0.0, float("nan"), float("nan"), 0)
    vv = v[ok]
    d = np.diff(vv)
    reset = d < 0
    step = np.where(reset, vv[1:], d)
    inc[ok[1:]] = step
    return CounterDelta(t, inc, float(step.sum()), float(vv[0]), float(vv[-1]), int(reset.sum()))


def event_times_from_counter(ts: F64, values: F64, max_events: int = 10_000) -> F64:
    """Event times implied by a counter: each unit increase at the sample time it appeared.

    The counter only says that k events happened between two scrapes; they are placed evenly
    inside that interval (interval censoring resolved at the midpoints of k sub-intervals).
    """
    cd = counter_delta(ts, values)
    ok = np.flatnonzero(np.isfinite(clean(values)))
    out: list[F64] = []
    n = 0
    for j in range(1, ok.size):
        k = round(float(cd.increments[ok[j]]))
        if k <= 0:
            continue
        k = min(k, max_events - n)
        t0, t1 = float(cd.ts[ok[j - 1]]), float(cd.ts[ok[j]])
        out.append(t0 + (t1 - t0) * (np.arange(k) + 0.5) / k)
        n += k
        if n >= max_events:
            break
    return np.concatenate(out) if out else np.zeros(0)


def decode_throttle(mask: float | int) -> list[str]:
    """Names of the throttle reasons set in one ``DCGM_FI_DEV_CLOCK_THROTTLE_REASONS`` value."""
    if not np.isfinite(mask) or mask < 0:
        return []
    m = int(mask)
    return [name for bit, name in THROTTLE_BITS.items() if m & bit]


def sustained_onset(ts: F64, flag: npt.NDArray[np.bool_], min_duration_s: float,
                    max_gap_s: float) -> tuple[float | None, float]:
    """First time a flag holds for at least ``min_duration_s`` and the total flagged time.

    A run continues across gaps up to ``max_gap_s`` between flagged samples (a missing scrape
    does not break it). Returns (onset of the first long-enough run or None, flagged seconds).
    """
    idx = np.flatnonzero(flag)
    if idx.size == 0:
        return None, 0.0
    t = np.asarray(ts, dtype=np.float64)[idx]
    breaks = np.flatnonzero(np.diff(t) > max_gap_s)
    starts = np.concatenate([[0], breaks + 1])
    ends = np.concatenate([breaks, [t.size - 1]])
    durations = t[ends] - t[starts]
    all_ts = np.asarray(ts, dtype=np.float64)
    step = float(np.median(np.diff(all_ts))) if all_ts.size > 1 else 0.0     # the scrape interval
    total = float(durations.sum() + step * len(starts))
    long_runs = np.flatnonzero(durations + step >= min_duration_s)
    onset = float(t[starts[long_runs[0]]]) if long_runs.size else None
    return onset, total


@dataclass(frozen=True)
class HwEvent:
    """One hardware event at a GPU: an Xid, a DBE, a remap, an AER burst ... with its source."""

    ts: float
    gpu_id: str
    kind: str                      # xid | sbe | dbe | remap | remap_failure | aer | replay
    count: float = 1.0
    code: int | None = None
    severity: str | None = None
    meaning: str = ""
    source: str = ""               # "log" | "dcgm"
