"""How the RCA report labels its time plots: each stored metric's quantity and unit (not the raw
DCGM field), the scale it is read in (GB/s, ms), a log axis for error rates that span decades, and
the fault's start and detection marked on every time axis, in UTC."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Axis", "axis_of", "fault_marks", "is_all_zero", "step_at", "time_axis", "y_axis"]


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


def time_axis() -> dict[str, Any]:
    return {"title": "time (UTC)", "type": "date"}


def _iso(t: float) -> str:
    """The same UTC clock string the report's series use."""
    return str(np.datetime_as_string(np.datetime64(int(t * 1000), "ms"), unit="s"))


def step_at(steps: np.ndarray, step_start_s: np.ndarray, t: float | None) -> float | None:
    """The step running at clock time ``t`` (the last one begun by then); None before the first."""
    if t is None or not np.isfinite(t):
        return None
    i = int(np.searchsorted(step_start_s, t, side="right")) - 1
    return float(steps[i]) if i >= 0 else None


def fault_marks(start: float | None, detected: float | None, on_clock: bool = True) -> dict[str, Any]:
    """Layout shapes and labels: a red line at the fault's start, an orange one at its detection
    (clock times in seconds, or ``on_clock=False``: positions on another axis such as steps)."""
    shapes, notes = [], []
    for ts, label, colour, side in ((start, "fault start", "#c0392b", "right"),
                                    (detected, "detected", "#e67e22", "left")):
        if ts is None or not np.isfinite(ts):
            continue
        x: str | float = _iso(ts) if on_clock else ts
        shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": x, "x1": x, "y0": 0, "y1": 1,
                       "line": {"color": colour, "width": 2, "dash": "dash"}, "name": label})
        notes.append({"x": x, "xref": "x", "y": 1, "yref": "paper", "yanchor": "bottom", "text": label,
                      "xanchor": side, "showarrow": False, "font": {"color": colour}})
    return {"shapes": shapes, "annotations": notes}
