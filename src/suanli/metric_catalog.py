"""The one catalogue of the metrics suanli reads, below every layer (spec/telemetry.md).

Each stored metric (its exposed sample name: ``_total`` kept) has its kind (``counter``: cumulative,
read with rate/increase and Prometheus' reset rule; ``gauge``), its unit, the kind of inventory
entity its series resolve to (``suanli.ingest.resolve.series_key``), the exporter labels that name
that entity, the DCGM field id where it is a DCGM field (``dcgm_fields.h``), and the friendly name a
rule may use (``gpu_temp``). DCGM's blank sentinels (numbers dcgm-exporter prints for "no reading")
are here too, with the functions that recognise them.

>>> METRICS["DCGM_FI_DEV_GPU_TEMP"].unit
'celsius'
>>> by_friendly("crc_errors").name
'suanli_switch_port_crc_errors_total'
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

__all__ = ["DCGM_BLANK", "DCGM_PREFIX", "METRICS", "DcgmBlank", "MetricInfo", "MetricKind", "by_friendly",
           "dcgm_blank_to_nan", "is_counter", "is_dcgm_blank"]

MetricKind = Literal["counter", "gauge"]

DCGM_PREFIX = "DCGM_"
"""Metrics of dcgm-exporter: the only ones whose blank sentinels become NaN."""


@dataclass(frozen=True)
class MetricInfo:
    """One stored metric. ``entity_labels`` are the exporter labels that name its entity (the
    Prometheus rule export joins on them); ``friendly`` is the name rules use, None where rules have
    none; ``dcgm_field`` the DCGM field id, None for other exporters."""

    name: str
    kind: MetricKind
    unit: str
    entity_kind: str
    entity_labels: tuple[str, ...]
    friendly: str | None = None
    dcgm_field: int | None = None


_DCGM_LABELS = ("Hostname", "gpu")
_IB_LABELS = ("instance", "device")


def _dcgm(name: str, field: int, kind: MetricKind, unit: str, friendly: str | None) -> MetricInfo:
    return MetricInfo(f"DCGM_FI_{name}", kind, unit, "gpu", _DCGM_LABELS, friendly, field)


def _ib(name: str, unit: str, friendly: str | None) -> MetricInfo:
    return MetricInfo(f"node_infiniband_{name}", "counter", unit, "nic", _IB_LABELS, friendly)


_ALL: tuple[MetricInfo, ...] = (
    # dcgm-exporter (field ids from dcgm_fields.h)
    _dcgm("DEV_SM_CLOCK", 100, "gauge", "MHz", "sm_clock"),
    _dcgm("DEV_CLOCK_THROTTLE_REASONS", 112, "gauge", "bitmask", "throttle_reasons"),
    _dcgm("DEV_CLOCKS_EVENT_REASONS", 112, "gauge", "bitmask", None),     # DCGM >= 3.3 name of field 112
    _dcgm("DEV_MEMORY_TEMP", 140, "gauge", "celsius", "memory_temp"),
    _dcgm("DEV_GPU_TEMP", 150, "gauge", "celsius", "gpu_temp"),
    _dcgm("DEV_POWER_USAGE", 155, "gauge", "watts", "power"),
    _dcgm("DEV_PCIE_REPLAY_COUNTER", 202, "counter", "replays", "pcie_replay"),
    _dcgm("DEV_GPU_UTIL", 203, "gauge", "percent", "gpu_util"),
    _dcgm("DEV_XID_ERRORS", 230, "gauge", "code", "xid_last"),
    # dcgm-exporter's own per-Xid series (no DCGM field: the exporter counts DCGM_FI_DEV_XID_ERRORS
    # changes over its xid-count-window-size): one series per code in the err_code / xid label
    MetricInfo("DCGM_EXP_XID_ERRORS_COUNT", "gauge", "errors", "gpu", _DCGM_LABELS),
    MetricInfo("DCGM_FI_DEV_XID_ERRORS_ACTIVE", "gauge", "flag", "gpu", _DCGM_LABELS),
    _dcgm("DEV_FB_USED", 252, "gauge", "MiB", "fb_used"),
    _dcgm("DEV_ECC_SBE_VOL_TOTAL", 310, "counter", "errors", "sbe"),
    _dcgm("DEV_ECC_DBE_VOL_TOTAL", 311, "counter", "errors", "dbe"),
    _dcgm("DEV_UNCORRECTABLE_REMAPPED_ROWS", 393, "counter", "rows", "row_remap_uncorrectable"),
    _dcgm("DEV_CORRECTABLE_REMAPPED_ROWS", 394, "counter", "rows", "row_remap_correctable"),
    _dcgm("DEV_ROW_REMAP_FAILURE", 395, "gauge", "flag", "row_remap_failure"),
    _dcgm("DEV_NVLINK_BANDWIDTH_TOTAL", 449, "gauge", "bytes/s", "nvlink_bandwidth"),
    _dcgm("PROF_SM_ACTIVE", 1002, "gauge", "ratio", "sm_active"),
    _dcgm("PROF_PIPE_TENSOR_ACTIVE", 1004, "gauge", "ratio", "tensor_active"),
    # node-exporter infiniband collector
    _ib("port_data_transmitted_bytes_total", "bytes", "ib_tx_bytes"),
    _ib("port_errors_received_total", "errors", "ib_rx_errors"),
    _ib("symbol_error_total", "errors", "symbol_errors"),
    # node-exporter's hw_counters: the NAK sequence errors RC retransmits count (metric-map preset
    # node-exporter-infiniband reads them as suanli_rdma_retransmits_total)
    _ib("packet_sequence_errors_total", "packets", None),
    _ib("link_downed_total", "events", "link_downed"),
    _ib("port_transmit_wait_total", "ticks", "transmit_wait"),
    # suanli's own probes and exporters (spec/telemetry.md "Fabric and probes")
    MetricInfo("suanli_switch_port_crc_errors_total", "counter", "errors", "switch_port", ("switch", "port"),
               "crc_errors"),
    MetricInfo("suanli_switch_port_packets_total", "counter", "packets", "switch_port", ("switch", "port"),
               "port_packets"),
    MetricInfo("suanli_port_pre_fec_ber", "gauge", "ratio", "switch_port", ("switch", "port"), "pre_fec_ber"),
    MetricInfo("suanli_rdma_retransmits_total", "counter", "packets", "nic", ("node", "nic"), "rdma_retransmits"),
    MetricInfo("suanli_pcie_aer_errors_total", "counter", "errors", "gpu", ("node", "pci_bus_id"),
               "pcie_aer_errors"),
    MetricInfo("suanli_link_latency_seconds", "gauge", "seconds", "node", ("src", "dst")),
    MetricInfo("suanli_storage_read_latency_seconds", "gauge", "seconds", "storage", ("storage",),
               "storage_latency"),
    MetricInfo("suanli_sla_latency_seconds", "gauge", "seconds", "sla", ("sla_id",), "sla_latency"),
    # what the training-side probe exposes on rank 0 (suanli.probe.metrics)
    MetricInfo("suanli_probe_mfu", "gauge", "ratio", "job", ("job",)),
    MetricInfo("suanli_probe_step_time_seconds", "gauge", "seconds", "job", ("job",)),
    MetricInfo("suanli_probe_steps_total", "counter", "steps", "job", ("job",)),
    MetricInfo("suanli_probe_spans_dropped", "gauge", "spans", "job", ("job",)),
    # what `suanli serve` exposes about its own analysis loop (suanli.web.metrics)
    MetricInfo("suanli_analysis_step_duration_seconds", "gauge", "seconds", "cluster", ()),
    MetricInfo("suanli_analysis_last_step_timestamp_seconds", "gauge", "seconds", "cluster", ()),
)

METRICS: dict[str, MetricInfo] = {m.name: m for m in _ALL}
"""Every metric suanli reads (and the probe exposes), by stored name."""

_FRIENDLY: dict[str, MetricInfo] = {m.friendly: m for m in _ALL if m.friendly}


def by_friendly(name: str) -> MetricInfo:
    """The metric a rule's friendly name stands for; KeyError for an unknown name."""
    return _FRIENDLY[name]


def is_counter(metric: str) -> bool:
    """True for a cumulative counter of the catalogue (unknown metrics: a ``_total`` name)."""
    info = METRICS.get(metric)
    return info.kind == "counter" if info is not None else metric.endswith("_total")


@dataclass(frozen=True)
class DcgmBlank:
    """DCGM's "no reading" sentinels (dcgm_structs.h DCGM_INT32_BLANK / DCGM_INT64_BLANK / DCGM_FP64_BLANK)."""

    int32_min: float = float(0x7FFFFFF0)
    """Smallest 32-bit sentinel (DCGM_INT32_BLANK = 0x7ffffff0; NOT_FOUND, NOT_SUPPORTED, ... follow)."""
    int32_max: float = float(0x7FFFFFFF)
    """Largest 32-bit sentinel (INT32_MAX)."""
    float_min: float = 140737488355328.0
    """DCGM_FP64_BLANK = 2**47; every float >= this is a sentinel. The 64-bit integer sentinels
    (from 0x7ffffffffffffff0) are above it too."""


DCGM_BLANK = DcgmBlank()


def is_dcgm_blank(value: float, blank: DcgmBlank = DCGM_BLANK) -> bool:
    """True for a DCGM sentinel value (NaN and -Inf are not sentinels)."""
    return value >= blank.float_min or blank.int32_min <= value <= blank.int32_max


def dcgm_blank_to_nan(values: npt.NDArray[np.float64], blank: DcgmBlank = DCGM_BLANK) -> None:
    """Replace DCGM sentinels by NaN, in place."""
    with np.errstate(invalid="ignore"):
        mask = (values >= blank.float_min) | ((values >= blank.int32_min) & (values <= blank.int32_max))
    values[mask] = math.nan
