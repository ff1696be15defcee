"""What dcgm-exporter and node-exporter's infiniband collector say about the cluster, from the
label sets of their series (``/api/v1/series`` of any DCGM metric and of ``node_infiniband_*``).

dcgm-exporter: ``Hostname`` (``hostname`` from 2026 on), ``gpu`` (index), ``UUID``, ``pci_bus_id``,
``modelName``, and ``pod``/``namespace``/``container`` where Kubernetes mapping is on; a MIG GPU
has one series per instance (``GPU_I_ID``) under one UUID. Where dcgm-exporter runs as a pod
without ``hostNetwork`` its host label is the exporter pod's name (``dcgm-exporter-wwwjh``): the
node then comes from the scrape's ``node``/``kubernetes_node`` label when present, else it is
reported. node-exporter: the node from ``instance`` (``node-001:9100``), the NIC from ``device``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["GpuSeen", "NodeSeen", "from_dcgm", "from_infiniband", "pod_gpus"]

_NODE_LABELS = ("node", "kubernetes_node", "kubernetes_io_hostname")
_EXPORTER_POD_PREFIX = "dcgm-exporter"


@dataclass
class GpuSeen:
    index: int
    uuid: str | None = None
    pci_bus_id: str | None = None
    model: str | None = None
    pods: set[tuple[str, str]] = field(default_factory=set)
    """(namespace, pod) using it."""
    mig: bool = False


@dataclass
class NodeSeen:
    gpus: dict[int, GpuSeen] = field(default_factory=dict)
    nics: set[str] = field(default_factory=set)


def _strip_port(instance: str) -> str:
    if instance.startswith("["):
        return instance[1:].split("]", 1)[0]
    host, sep, port = instance.rpartition(":")
    return host if sep and port.isdigit() else instance


def _dcgm_node(labels: Mapping[str, str], notes: set[str]) -> str | None:
    for name in _NODE_LABELS:
        if labels.get(name):
            return labels[name]
    host = labels.get("Hostname") or labels.get("hostname")
    if host and host.startswith(_EXPORTER_POD_PREFIX):
        notes.add(f"dcgm-exporter host label {host!r} is the exporter's pod name, not a node: run it with "
                  "hostNetwork, or relabel the scrape's node name into a 'node' label")
        return None
    if host:
        return host
    if labels.get("instance"):
        return _strip_port(labels["instance"])
    return None


def from_dcgm(label_sets: Iterable[Mapping[str, str]], nodes: dict[str, NodeSeen], notes: set[str]) -> None:
    """Add the GPUs the DCGM series name to ``nodes``; what cannot be placed goes into ``notes``."""
    for labels in label_sets:
        node = _dcgm_node(labels, notes)
        index_text = labels.get("gpu", "")
        if node is None or not index_text.isdigit():
            if node is not None:
                notes.add(f"{node}: a DCGM series without a numeric 'gpu' label")
            continue
        seen = nodes.setdefault(node, NodeSeen())
        gpu = seen.gpus.setdefault(int(index_text), GpuSeen(int(index_text)))
        for attr, label in (("uuid", "UUID"), ("pci_bus_id", "pci_bus_id"), ("model", "modelName")):
            value = labels.get(label)
            old = getattr(gpu, attr)
            if value and old and old != value:
                notes.add(f"{node}/gpu{index_text}: two {label} values ({old}, {value}); the first kept")
            elif value:
                setattr(gpu, attr, value)
        if labels.get("GPU_I_ID"):
            gpu.mig = True
        if labels.get("pod"):
            gpu.pods.add((labels.get("namespace", ""), labels["pod"]))


def from_infiniband(label_sets: Iterable[Mapping[str, str]], nodes: dict[str, NodeSeen], notes: set[str]) -> None:
    """Add the NICs (``device``) node-exporter reports, per ``instance`` host."""
    for labels in label_sets:
        device = labels.get("device")
        host = labels.get("node") or _strip_port(labels.get("instance", ""))
        if not device:
            continue
        if not host:
            notes.add(f"infiniband device {device!r} without an instance label (not from a scrape)")
            continue
        nodes.setdefault(host, NodeSeen()).nics.add(device)


def pod_gpus(nodes: Mapping[str, NodeSeen]) -> dict[tuple[str, str], list[tuple[str, int]]]:
    """(namespace, pod) -> the (node, GPU index) dcgm-exporter attributes to it."""
    out: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for node_id, node in nodes.items():
        for idx, gpu in node.gpus.items():
            for pod in gpu.pods:
                out.setdefault(pod, []).append((node_id, idx))
    return out
