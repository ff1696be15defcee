"""The one table of friendly metric names a rule may use, and the analysis values and events.

Each friendly name maps to one stored metric (spec/telemetry.md), with its unit, whether it is a
cumulative counter, the inventory scope its series resolve to, and the exporter labels that
identify the entity in PromQL (used by the Prometheus export to join conditions).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ANALYSIS_VALUES", "EVENT_KINDS", "METRICS", "SCOPES", "MetricDef", "valid_names"]

SCOPES: tuple[str, ...] = ("gpu", "node", "nvswitch", "nic", "switch_port", "storage", "job")

_DCGM = ("Hostname", "gpu")


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


def _m(name: str, metric: str, unit: str, counter: bool, scope: str,
       prom_labels: tuple[str, ...]) -> tuple[str, MetricDef]:
    return name, MetricDef(name, metric, unit, counter, scope, prom_labels)


METRICS: dict[str, MetricDef] = dict([
    _m("gpu_temp", "DCGM_FI_DEV_GPU_TEMP", "celsius", False, "gpu", _DCGM),
    _m("memory_temp", "DCGM_FI_DEV_MEMORY_TEMP", "celsius", False, "gpu", _DCGM),
    _m("gpu_util", "DCGM_FI_DEV_GPU_UTIL", "percent", False, "gpu", _DCGM),
    _m("sm_active", "DCGM_FI_PROF_SM_ACTIVE", "ratio", False, "gpu", _DCGM),
    _m("tensor_active", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "ratio", False, "gpu", _DCGM),
    _m("sm_clock", "DCGM_FI_DEV_SM_CLOCK", "MHz", False, "gpu", _DCGM),
    _m("power", "DCGM_FI_DEV_POWER_USAGE", "watts", False, "gpu", _DCGM),
    _m("throttle_reasons", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "bitmask", False, "gpu", _DCGM),
    _m("fb_used", "DCGM_FI_DEV_FB_USED", "MiB", False, "gpu", _DCGM),
    _m("sbe", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "errors", True, "gpu", _DCGM),
    _m("dbe", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "errors", True, "gpu", _DCGM),
    _m("row_remap_correctable", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "rows", True, "gpu", _DCGM),
    _m("row_remap_uncorrectable", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "rows", True, "gpu", _DCGM),
    _m("row_remap_failure", "DCGM_FI_DEV_ROW_REMAP_FAILURE", "flag", False, "gpu", _DCGM),
    _m("xid_last", "DCGM_FI_DEV_XID_ERRORS", "code", False, "gpu", _DCGM),
    _m("pcie_replay", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "replays", True, "gpu", _DCGM),
    _m("nvlink_bandwidth", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "bytes/s", False, "gpu", _DCGM),
    _m("pcie_aer_errors", "suanli_pcie_aer_errors_total", "errors", True, "gpu", ("node", "pci_bus_id")),
    _m("rdma_retransmits", "suanli_rdma_retransmits_total", "packets", True, "nic", ("node", "nic")),
    _m("ib_tx_bytes", "node_infiniband_port_data_transmitted_bytes_total", "bytes", True, "nic",
       ("instance", "device")),
    _m("ib_rx_errors", "node_infiniband_port_errors_received_total", "errors", True, "nic",
       ("instance", "device")),
    _m("symbol_errors", "node_infiniband_symbol_error_total", "errors", True, "nic", ("instance", "device")),
    _m("link_downed", "node_infiniband_link_downed_total", "events", True, "nic", ("instance", "device")),
    _m("transmit_wait", "node_infiniband_port_transmit_wait_total", "ticks", True, "nic",
       ("instance", "device")),
    _m("crc_errors", "suanli_switch_port_crc_errors_total", "errors", True, "switch_port", ("switch", "port")),
    _m("port_packets", "suanli_switch_port_packets_total", "packets", True, "switch_port", ("switch", "port")),
    _m("pre_fec_ber", "suanli_port_pre_fec_ber", "ratio", False, "switch_port", ("switch", "port")),
    _m("storage_latency", "suanli_storage_read_latency_seconds", "seconds", False, "storage", ("storage",)),
    _m("sla_latency", "suanli_sla_latency_seconds", "seconds", False, "sla", ("sla_id",)),
])
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
