"""Your names, not ours: a metric map says under which name and labels a TSDB holds each metric
suanli reads (spec/telemetry.md names them as the exporters do by default), so a cluster whose
exporters or relabelling renamed them needs no copy of its data.

A map file (YAML)::

    metrics:                                   # suanli's name: the TSDB's name (or name, scale, labels)
      DCGM_FI_DEV_GPU_TEMP: gpu_temperature_celsius
      DCGM_FI_DEV_FB_USED: {name: gpu_memory_used_bytes, scale: 9.5367431640625e-07}   # bytes -> MiB
      suanli_switch_port_crc_errors_total: {name: ifInErrors, labels: {instance: switch, ifName: port}}
    labels:                                    # every series: the TSDB's label -> the label suanli reads
      kubernetes_node: Hostname

Presets (``PRESETS``) cover common exporters; several maps combine, the later winning.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from suanli.errors import InputError
from suanli.metric_catalog import METRICS

__all__ = ["PRESETS", "MetricMap", "Source", "combine", "load_metric_map"]


@dataclass(frozen=True)
class Source:
    """Where one metric lives in the TSDB: its name there, and the factor to suanli's unit."""

    name: str
    scale: float = 1.0
    labels: Mapping[str, str] = field(default_factory=dict)
    """Label renames for this metric's series only (after the map's own)."""


@dataclass(frozen=True)
class MetricMap:
    name: str = "dcgm-exporter"
    metrics: Mapping[str, Source] = field(default_factory=dict)
    """suanli's metric name -> where it lives."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """A TSDB label -> the label suanli reads it as (for every series the store reads)."""

    def source(self, metric: str) -> Source:
        return self.metrics.get(metric) or Source(metric)

    def canonical(self, names: Iterable[str]) -> list[str]:
        """The metric names the store shows for the TSDB's ``names``: a mapped source under suanli's
        name; a name suanli maps elsewhere is hidden (it would read the source)."""
        present = set(names)
        by_source = {s.name: m for m, s in self.metrics.items()}
        out = {by_source[n] for n in present if n in by_source}
        out |= {n for n in present if n not in self.metrics and n not in by_source}
        return sorted(out)

    def relabel(self, metric: str, labels: Mapping[str, str]) -> dict[str, str]:
        """A series' labels as suanli reads them: the map's renames, then the metric's own (a renamed
        label wins over one already of the target's name)."""
        out = dict(labels)
        for renames in (self.labels, self.source(metric).labels):
            kept = {k: v for k, v in out.items() if k not in renames}
            kept.update({renames[k]: v for k, v in out.items() if k in renames})
            out = kept
        return out


def _m(name: str, metrics: Mapping[str, Source], labels: Mapping[str, str] | None = None) -> MetricMap:
    return MetricMap(name, dict(metrics), labels or {})


_IBDIAG = {"local_name": "switch", "local_port": "port"}
_IF_MIB = {"instance": "switch", "ifName": "port"}


PRESETS: dict[str, MetricMap] = {
    # dcgm-exporter's default counters CSV: the names spec/telemetry.md uses; nothing to map.
    "dcgm-exporter": _m("dcgm-exporter", {}),
    # dcgm-exporter in Kubernetes behind kube-prometheus relabelling: the exporter pod's name in
    # Hostname, the node in kubernetes_node (or node).
    "dcgm-exporter-kubernetes": _m("dcgm-exporter-kubernetes", {}, {"kubernetes_node": "Hostname"}),
    # node-exporter's infiniband collector, its hw_counters included: the requester's NAK
    # sequence errors are what RC retransmits (a corrupted packet dropped, the next out of sequence).
    "node-exporter-infiniband": _m("node-exporter-infiniband", {
        "suanli_rdma_retransmits_total": Source("node_infiniband_packet_sequence_errors_total")}),
    # ibqueryerrors / ibdiagnet port counters as infiniband-exporter (guilbaults) names them:
    # infiniband_<counter>_total{local_name, local_port, remote_name, remote_port}; PortRcvErrors
    # counts received packets with errors, CRC (local physical) errors among them.
    "ibdiagnet": _m("ibdiagnet", {
        "suanli_switch_port_crc_errors_total": Source("infiniband_portrcverrors_total", labels=_IBDIAG),
        "suanli_switch_port_packets_total": Source("infiniband_portrcvpkts_total", labels=_IBDIAG)}),
    # snmp_exporter's if_mib module on switches: the target as instance, the interface as ifName.
    "snmp-if-mib": _m("snmp-if-mib", {
        "suanli_switch_port_crc_errors_total": Source("ifInErrors", labels=_IF_MIB),
        "suanli_switch_port_packets_total": Source("ifHCInUcastPkts", labels=_IF_MIB)}),
}


def combine(maps: Iterable[MetricMap]) -> MetricMap:
    """Several maps as one (a later one's entries win)."""
    metrics: dict[str, Source] = {}
    labels: dict[str, str] = {}
    names = []
    for m in maps:
        metrics.update(m.metrics)
        labels.update(m.labels)
        names.append(m.name)
    return MetricMap("+".join(names) or "dcgm-exporter", metrics, labels)


def _labels(value: Any, file: str, key: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) and k and v
                                              for k, v in value.items()):
        raise InputError("labels map one label name to another", file=file, key=key)
    return dict(value)


def _source(value: Any, key: str, file: str) -> Source:
    if isinstance(value, str) and value:
        return Source(value)
    if isinstance(value, dict) and isinstance(value.get("name"), str) and set(value) <= {"name", "scale", "labels"}:
        scale = value.get("scale", 1.0)
        if isinstance(scale, int | float) and not isinstance(scale, bool) and math.isfinite(scale) and scale != 0:
            return Source(value["name"], float(scale), _labels(value.get("labels") or {}, file, f"metrics.{key}.labels"))
    raise InputError("expected a metric name or {name: NAME, scale: NUMBER, labels: {FROM: TO}}", file=file,
                     key=f"metrics.{key}")


def load_metric_map(spec: str) -> MetricMap:
    """A preset by name, else a map file (module docstring); bad entries are InputErrors naming the key."""
    if spec in PRESETS:
        return PRESETS[spec]
    path = Path(spec)
    if not path.is_file():
        raise InputError(f"--metric-map {spec}: neither a preset ({', '.join(PRESETS)}) nor a file")
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise InputError(f"cannot read a metric map: {exc}", file=spec) from None
    if not isinstance(doc, dict) or not set(doc) <= {"metrics", "labels"}:
        raise InputError("expected a mapping with 'metrics' and/or 'labels'", file=spec)
    metrics, labels = doc.get("metrics") or {}, doc.get("labels") or {}
    if not isinstance(metrics, dict) or not isinstance(labels, dict):
        raise InputError("'metrics' and 'labels' must be mappings", file=spec)
    for key in metrics:
        if key not in METRICS:
            raise InputError(f"unknown metric {key!r} (suanli reads: {', '.join(sorted(METRICS))})", file=spec,
                             key=f"metrics.{key}")
    return MetricMap(path.name, {str(k): _source(v, str(k), spec) for k, v in metrics.items()},
                     _labels(labels, spec, "labels"))
