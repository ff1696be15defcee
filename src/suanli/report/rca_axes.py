"""How the RCA report labels its time plots: each stored metric's quantity and unit (not the raw
DCGM field), the scale it is read in (GB/s, ms), a log axis for error rates that span decades, and
the fault's start and detection marked on every time axis, in UTC."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["MIN_SPAN", "Axis", "axis_of", "band_shape", "fault_marks", "is_all_zero", "steady_range", "time_axis",
           "y_axis"]


@dataclass(frozen=True)
class Axis:
    """A quantity as a person reads it: ``title``, ``unit``, values multiplied by ``scale``, ``log`` axis."""

    title: str
    unit: str
    scale: float = 1.0
    log: bool = False


AXES: dict[str, Axis] = {
    "DCGM_FI_DEV_GPU_TEMP": Axis("GPU temperature", "°C"),
    "DCGM_FI_DEV_SM_CLOCK": Axis("SM clock", "MHz"),
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": Axis("PCIe replays", "replays/s"),
    "suanli_pcie_aer_errors_total": Axis("PCIe AER errors", "errors/s"),
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": Axis("NVLink bandwidth", "GB/s", 1e-9),
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": Axis("single-bit ECC errors", "errors/s"),
    "suanli_switch_port_crc_errors_total": Axis("CRC errors", "errors/s"),
    "suanli_port_pre_fec_ber": Axis("pre-FEC bit error rate", "errors/bit", log=True),
    "suanli_rdma_retransmits_total": Axis("RDMA retransmits", "packets/s"),
    "node_infiniband_link_downed_total": Axis("link-down events", "events/s"),
    "suanli_storage_read_latency_seconds": Axis("storage read latency", "ms", 1e3),
    "suanli_sla_latency_seconds": Axis("SLA latency", "s"),
}
"""The report's metrics; another metric shows its stored name and no unit."""


def axis_of(metric: str, per_second: bool) -> Axis:
    return AXES.get(metric) or Axis(metric, "per second" if per_second else "")


def is_all_zero(values: list[np.ndarray]) -> bool:
    """Every real sample is 0 (a counter that never moved): no plot, the report says "0 in window"."""
    real = [v[np.isfinite(v)] for v in values]
    return any(r.size for r in real) and all(not r.any() for r in real)


def y_axis(ax: Axis) -> dict[str, Any]:
    out: dict[str, Any] = {"title": f"{ax.title} ({ax.unit})" if ax.unit else ax.title}
    if ax.log:
        out |= {"type": "log", "exponentformat": "power"}
    else:
        out["exponentformat"] = "none"
    return out


def time_axis(window: tuple[float, float] | None = None) -> dict[str, Any]:
    """The clock axis every time plot shares; with ``window``, fixed to it so the plots line up."""
    out: dict[str, Any] = {"title": "time (UTC)", "type": "date"}
    if window is not None:
        out["range"] = [_iso(window[0]), _iso(window[1])]
    return out


MIN_SPAN = 0.1
"""A linear axis spans at least this share of its level: 65.0..65.4 °C is drawn as the flat line it
is, not stretched over the whole plot."""


def steady_range(values: list[np.ndarray], band: tuple[float, float] | None, rate: bool) -> list[float] | None:
    """The y range of a linear plot: the data and its normal band, from 0 for a rate, and never
    narrower than :data:`MIN_SPAN` of the level, so noise is not magnified. None: no data."""
    real = np.concatenate([v[np.isfinite(v)] for v in values]) if values else np.empty(0)
    if real.size == 0:
        return None
    lo, hi = float(real.min()), float(real.max())
    if band is not None:
        lo, hi = min(lo, band[0]), max(hi, band[1])
    if rate:
        lo = min(lo, 0.0)
    span = max(hi - lo, MIN_SPAN * max(abs(lo), abs(hi)), 1e-12)
    if hi - lo < span:                  # widen around the middle; a range from 0 stays from 0
        mid = (lo + hi) / 2
        lo, hi = (0.0, span) if lo == 0.0 else (mid - span / 2, mid + span / 2)
    pad = 0.05 * span
    return [lo - (pad if lo != 0 else 0.0), hi + pad]


def band_shape(band: tuple[float, float], scale: float) -> dict[str, Any]:
    """The normal band as a shaded strip across the plot, under the lines."""
    return {"type": "rect", "xref": "paper", "x0": 0, "x1": 1, "yref": "y", "y0": band[0] * scale,
            "y1": band[1] * scale, "fillcolor": "rgba(39, 174, 96, 0.12)", "line": {"width": 0}, "layer": "below"}


def _iso(t: float) -> str:
    """The same UTC clock string the report's series use."""
    return str(np.datetime_as_string(np.datetime64(int(t * 1000), "ms"), unit="s"))


def fault_marks(start: float | None, detected: float | None) -> dict[str, Any]:
    """Layout shapes and labels: a red line at the fault's start, an orange one at its detection
    (clock times in seconds)."""
    shapes, notes = [], []
    for ts, label, colour, side in ((start, "fault start", "#c0392b", "right"),
                                    (detected, "detected", "#e67e22", "left")):
        if ts is None or not np.isfinite(ts):
            continue
        x = _iso(ts)
        shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": x, "x1": x, "y0": 0, "y1": 1,
                       "line": {"color": colour, "width": 2, "dash": "dash"}, "name": label})
        notes.append({"x": x, "xref": "x", "y": 1, "yref": "paper", "yanchor": "bottom", "text": label,
                      "xanchor": side, "showarrow": False, "font": {"color": colour}})
    return {"shapes": shapes, "annotations": notes}
