"""The one table of friendly metric names a rule may use, and the analysis values and events.

Each friendly name maps to one stored metric (spec/telemetry.md), with its unit, whether it is a
cumulative counter, the inventory scope its series resolve to, and the exporter labels that
identify the entity in PromQL (used by the Prometheus export to join conditions): all read from
the metric catalogue, so a name is defined once.
"""

from __future__ import annotations

from dataclasses import dataclass

from suanli.metric_catalog import METRICS as _CATALOG

__all__ = ["ANALYSIS_VALUES", "EVENT_KINDS", "METRICS", "SCOPES", "MetricDef", "valid_names"]

SCOPES: tuple[str, ...] = ("gpu", "node", "nvswitch", "nic", "switch_port", "storage", "job")

@dataclass(frozen=True)
class MetricDef:
    """A friendly name: ``metric`` stored name, ``unit``, ``counter`` (cumulative), ``scope``
    (kind of entity its series resolve to), ``prom_labels`` (exporter labels naming the entity)."""

    name: str
    metric: str
    unit: str
    counter: bool
    scope: str
    prom_labels: tuple[str, ...]


# Read from the one metric catalogue (suanli.metric_catalog): every catalogued metric with a
# friendly name is a name a rule may use, with the catalogue's unit, kind, entity and labels.
METRICS: dict[str, MetricDef] = {
    m.friendly: MetricDef(m.friendly, m.name, m.unit, m.kind == "counter", m.entity_kind, tuple(m.entity_labels))
    for m in _CATALOG.values() if m.friendly
}
"""Friendly name -> metric. ``crc_ratio`` is derived: rate(crc_errors) / rate(port_packets)."""

DERIVED: dict[str, tuple[str, str]] = {"crc_ratio": ("crc_errors", "port_packets")}

ANALYSIS_VALUES: dict[str, str] = {
    "health_score": "GPU health score in [0, 1] (1 = healthy), from analysis.health",
    "p_dbe_30d": "probability of a double-bit ECC error within 30 days, from analysis.health",
    "sbe_per_day": "fitted current single-bit ECC intensity (events/day), from analysis.health",
    "straggler_score": "how persistently a rank/GPU is slower than its peers in [0, 1], from analysis.stragglers",
    "sxid_fatal": "fatal NVSwitch SXid records on a switch (or its node) in the window, from analysis.nvswitch",
    "sxid_nonfatal": "non-fatal NVSwitch SXid records on a switch (or its node) in the window, from analysis.nvswitch",
}
"""Per-entity analysis outputs, passed to the evaluator as ``{entity_id: {name: value}}``."""

EVENT_KINDS: dict[str, str] = {
    "xid": "NVIDIA Xid records (kernel.log); ``xid(79)`` or ``xid(48, 63)`` selects codes",
    "sxid": "NVSwitch SXid records",
    "aer": "PCIe AER records",
    "nccl_timeout": "NCCL watchdog collective timeouts",
    "nccl_warn": "NCCL WARN lines",
    "cuda_oom": "CUDA out-of-memory records",
    "oom": "alias of cuda_oom",
}
"""Event counts a condition may use (``nccl_timeout >= 1 within 10m``)."""


def valid_names() -> list[str]:
    """Every name a condition may start with, sorted (for error messages)."""
    return sorted([*METRICS, *DERIVED, *ANALYSIS_VALUES, *EVENT_KINDS, "sudden_increase"])
