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

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from suanli.analysis.median import median
from suanli.ingest.records import Event
from suanli.ingest.xid import xid_info

__all__ = [
    "AER_LEAD_S",
    "CLOCKS_EVENT",
    "DBE",
    "GPU_TEMP",
    "GPU_UTIL",
    "MEMORY_TEMP",
    "NVLINK_BW",
    "PCIE_AER",
    "PCIE_REPLAY",
    "POWER",
    "REMAP_CORR",
    "REMAP_FAIL",
    "REMAP_UNCORR",
    "SBE",
    "SM_CLOCK",
    "THROTTLE",
    "THROTTLE_BITS",
    "XID_ACTIVE",
    "XID_CATEGORY",
    "XID_COUNT",
    "XID_ERRORS",
    "XID_SERIES",
    "CounterDelta",
    "HwEvent",
    "clean",
    "counter_delta",
    "dcgm_xid_events",
    "decode_throttle",
    "event_times_from_counter",
    "fatal_aer_before",
    "hw_event",
    "sustained_onset",
    "xid_category",
    "xid_meaning",
]

F64 = npt.NDArray[np.float64]

SBE = "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"
DBE = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"
REMAP_CORR = "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"
REMAP_UNCORR = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"
REMAP_FAIL = "DCGM_FI_DEV_ROW_REMAP_FAILURE"
XID_ERRORS = "DCGM_FI_DEV_XID_ERRORS"                # the last Xid code only, not a count
XID_COUNT = "DCGM_EXP_XID_ERRORS_COUNT"              # per code (err_code): Xids in the exporter's window
XID_ACTIVE = "DCGM_FI_DEV_XID_ERRORS_ACTIVE"         # per code (xid): 1 while that Xid is in the window
XID_SERIES = (XID_ERRORS, XID_COUNT, XID_ACTIVE)
AER_LEAD_S = 600.0
"""A fatal AER of a GPU this long before it is lost (Xid 79) is evidence of the loss."""
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
    step = median(np.diff(all_ts)) if all_ts.size > 1 else 0.0     # the scrape interval
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


def hw_event(ev: Event, gpu_id: str) -> HwEvent:
    """A log record as a hardware event of its GPU. An Xid's meaning names the Xid it was caused
    by (Xid 45 "caused by previous Xid 149"); an AER's, its error bits read whole."""
    meaning = ""
    if ev.kind == "xid" and ev.code is not None:
        meaning = xid_meaning(ev.code)
        cause = ev.attrs.get("caused_by_xid")
        if isinstance(cause, int):
            meaning += f", caused by previous Xid {cause} ({xid_meaning(cause)})"
    elif ev.kind == "aer":
        errors = ev.attrs.get("errors")
        meaning = ", ".join(map(str, errors)) if isinstance(errors, list) and errors else str(
            ev.attrs.get("error_type") or "")
    return HwEvent(ev.ts, gpu_id, ev.kind, float(ev.count), ev.code, ev.severity, meaning, ev.source or "log")


def fatal_aer_before(events: Sequence[HwEvent], lost_s: float, lead_s: float = AER_LEAD_S) -> list[str]:
    """Evidence lines of the GPU's fatal AERs (a Surprise Down, a completion timeout the port could
    not recover from) in the ``lead_s`` before it was lost."""
    return [f"{e.gpu_id} fatal PCIe AER{f' ({e.meaning})' if e.meaning else ''} "
            f"{lost_s - e.ts:.0f} s before it was lost [{e.source}]"
            for e in events if e.kind == "aer" and e.severity == "fatal" and lost_s - lead_s <= e.ts <= lost_s]


def dcgm_xid_events(metric: str, label: Callable[[str], str | None], gpu_id: str, ts: F64,
                    values: F64) -> list[HwEvent]:
    """Xid events in dcgm-exporter's Xid series.

    ``DCGM_FI_DEV_XID_ERRORS`` holds only the last code: each change to a non-zero code is one
    Xid (a code already there at the first sample may be days old). ``DCGM_EXP_XID_ERRORS_COUNT``
    (code in ``err_code``) counts that code's Xids in the exporter's sliding window: each rise is
    that many new ones. ``DCGM_FI_DEV_XID_ERRORS_ACTIVE`` (code in ``xid``) is 1 while the code was
    seen in the window: each rise to 1 is one. The windowed series count from their first sample.
    """
    v = clean(values)
    ok = np.flatnonzero(np.isfinite(v))
    if metric == XID_ERRORS:
        return [_dcgm_xid(float(ts[b]), gpu_id, int(v[b]), 1.0) for a, b in itertools.pairwise(ok)
                if v[b] != v[a] and v[b] > 0]
    text = label("err_code" if metric == XID_COUNT else "xid") or ""
    if not text.strip().isdecimal() or ok.size == 0:
        return []
    code = int(text)
    prev = np.concatenate([[0.0], v[ok][:-1]])
    rise = v[ok] - prev
    if metric == XID_ACTIVE:
        rise = np.where((v[ok] > 0) & (prev <= 0), 1.0, 0.0)
    return [_dcgm_xid(float(ts[i]), gpu_id, code, float(r)) for i, r in zip(ok, rise, strict=True) if r > 0]


def _dcgm_xid(t: float, gpu_id: str, code: int, count: float) -> HwEvent:
    return HwEvent(t, gpu_id, "xid", count, code, xid_info(code).severity, xid_meaning(code), "dcgm")
