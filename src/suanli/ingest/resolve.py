"""Exporter labels -> canonical entity ids (spec/telemetry.md, spec/inventory.md "Canonical entity ids").

``series_key(metric, labels, resolver)`` is called once per distinct label set (the parsers cache
it), so it may be thorough. It never raises: a series it cannot map gets ``entity_kind=None`` and
is kept (the loader counts it; ``suanli check`` lists it).

Mapping (first rule that applies):

========================================  ===============================  ===========
metric / labels                           entity                           kind
========================================  ===============================  ===========
``DCGM_*``: ``UUID``; (host, ``gpu``);    the GPU                          gpu
(host, ``pci_bus_id``)
``DCGM_*`` with no GPU: (host,            the NVSwitch the node lists      nvswitch
``nvswitch``); (host, ``pci_bus_id``)
``node_infiniband_*``: host + ``device``  the NIC                          nic
``suanli_switch_port_*``: ``switch`` +    the switch port                  switch_port
``port``
``suanli_port_pre_fec_ber``               switch side -> switch_port,      switch_port /
                                          NIC side (``node``, ``nic``)     nic
``suanli_rdma_retransmits_total``         (``node``, ``nic``)              nic
``suanli_pcie_aer_errors_total``          (``node``, ``pci_bus_id``): the  gpu / node
                                          GPU when the bus id is a GPU's,
                                          else the node (upstream port)
``suanli_link_latency_seconds``           ``src`` node, ``peer_id`` =      node
                                          ``dst`` node
``suanli_storage_read_latency_seconds``   ``storage``                      storage
``suanli_sla_latency_seconds``            ``sla_id``                       sla
anything else with a host label           the node                         node
========================================  ===============================  ===========

The host comes from the first of :data:`~suanli.inventory.normalize.HOST_LABELS` that names a
node (``instance`` as ``node-001:9100``, a fully qualified name by its first label too; for
node-exporter's ``node_*`` metrics not ``node``, a NUMA node there), else from a pod of the
inventory named by ``Hostname``/``hostname``/``pod``. A
``pci_bus_id`` is matched exactly first, then in any PCI domain
(:meth:`~suanli.inventory.Resolver.gpu_in_any_domain`), so that no later layer has to look at it again.

Without an inventory (``resolver=None``) series stay unresolved, while span and log ids pass
through where they are already canonical (:func:`node_of`, :func:`job_of`, :func:`gpu_of`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from suanli.ingest.records import SeriesKey
from suanli.inventory import Resolver
from suanli.inventory.normalize import GPU_INDEX_LABEL, HOST_LABELS, PCI_LABEL, UUID_LABELS

__all__ = ["NODE_EXPORTER_PREFIX", "POD_HOST_LABELS", "gpu_of", "host_of", "job_of", "node_of", "series_key"]

NODE_EXPORTER_PREFIX = "node_"
"""node-exporter's metrics: their ``node`` label is a NUMA node."""
POD_HOST_LABELS = ("Hostname", "hostname")
"""dcgm-exporter's host label (``Hostname``, ``hostname`` from 2026): under Kubernetes it may hold
the name of a pod, which the inventory's ranks place on a node."""

_CANONICAL_GPU = re.compile(r"^[^/\s]+/gpu\d+$")


def node_of(resolver: Resolver | None, host: str) -> str | None:
    """The node id of a host name; without an inventory the name itself."""
    return resolver.node(host) if resolver is not None else (host or None)


def job_of(resolver: Resolver | None, job: str) -> str | None:
    """The job id of a job name; without an inventory the name itself."""
    return resolver.job(job) if resolver is not None else (job or None)


def gpu_of(resolver: Resolver | None, text: str, host: str | None = None) -> str | None:
    """A GPU named by UUID, canonical id or (with the host) PCI bus id; without an inventory a
    canonical id as written."""
    if resolver is None:
        return text if _CANONICAL_GPU.match(text) else None
    return resolver.gpu_any(text, host)


def host_of(labels: Mapping[str, str], resolver: Resolver, metric: str = "") -> str | None:
    """The node the host-like labels name (the first that resolves); else the node of the
    inventory pod that dcgm-exporter's ``Hostname``/``hostname`` or the ``pod`` label names.

    node-exporter's ``node`` label (``node_zoneinfo_*{node="0"}``) is a NUMA node, never a host."""
    numa = metric.startswith(NODE_EXPORTER_PREFIX)
    for name in HOST_LABELS:
        text = labels.get(name)
        if text and not (numa and name == "node"):
            node = resolver.node(text)
            if node:
                return node
    for name in (*POD_HOST_LABELS, "pod"):
        node = resolver.node_of_pod(labels.get(name))
        if node:
            return node
    return None


def _gpu_at(resolver: Resolver, node: str, bus: str) -> str | None:
    """The GPU at a PCI bus id on a node: the exact address, else the same address in another domain."""
    return resolver.gpu(host=node, pci_bus_id=bus) or resolver.gpu_in_any_domain(node, bus)


def _gpu(labels: Mapping[str, str], resolver: Resolver, node: str | None) -> str | None:
    uuid = next((labels[k] for k in UUID_LABELS if labels.get(k)), None)
    if uuid and (found := resolver.gpu(uuid=uuid)):
        return found
    if node is None:
        return None
    index = labels.get(GPU_INDEX_LABEL)
    if index is not None and index.isdecimal() and (found := resolver.gpu(host=node, index=int(index))):
        return found
    bus = labels.get(PCI_LABEL)
    return _gpu_at(resolver, node, bus) if bus else None


def _nvswitch(labels: Mapping[str, str], resolver: Resolver, node: str | None) -> str | None:
    """An NVSwitch of the node: dcgm-exporter's ``nvswitch`` index label, else its ``pci_bus_id``."""
    if node is None:
        return None
    index = labels.get("nvswitch")
    device = f"nvswitch{index}" if index is not None and index.isdecimal() else None
    return resolver.nvswitch(node, device=device, pci_bus_id=labels.get(PCI_LABEL))


Resolved = tuple[str | None, str | None, str | None]          # kind, id, peer
_NONE: Resolved = (None, None, None)


def _one(kind: str, entity: str | None) -> Resolved:
    return (kind, entity, None) if entity else _NONE


def _resolve(metric: str, labels: Mapping[str, str], resolver: Resolver) -> Resolved:
    node = host_of(labels, resolver, metric)
    if metric.startswith("DCGM_"):
        gpu = _gpu(labels, resolver, node)
        if gpu:
            return "gpu", gpu, None
        switch = _nvswitch(labels, resolver, node)
        if switch:
            return "nvswitch", switch, None
        has_gpu_ids = any(k in labels for k in (*UUID_LABELS, GPU_INDEX_LABEL, PCI_LABEL))
        return _one("node", node) if not has_gpu_ids else _NONE
    if metric.startswith("node_infiniband_"):
        device = labels.get("device")
        return _one("nic", resolver.nic(host=node, device=device) if node and device else None)
    switch, port = labels.get("switch"), labels.get("port")
    if metric.startswith("suanli_") and switch and port:
        return _one("switch_port", resolver.port(switch, port))
    if metric in ("suanli_port_pre_fec_ber", "suanli_rdma_retransmits_total") or "nic" in labels:
        nic_name = labels.get("nic") or labels.get("device")
        return _one("nic", resolver.nic(host=node, device=nic_name) if node and nic_name else None)
    if metric.startswith("suanli_pcie_aer_errors"):
        bus = labels.get(PCI_LABEL)
        gpu = _gpu_at(resolver, node, bus) if node and bus else None
        return ("gpu", gpu, None) if gpu else _one("node", node)
    if "src" in labels and "dst" in labels:
        src, dst = resolver.node(labels["src"]), resolver.node(labels["dst"])
        return ("node", src, dst) if src else _NONE
    if "storage" in labels:
        return _one("storage", resolver.storage(labels["storage"]))
    if "sla_id" in labels:
        return _one("sla", resolver.sla(labels["sla_id"]))
    return _one("node", node)


def series_key(metric: str, labels: Mapping[str, str], resolver: Resolver | None) -> SeriesKey:
    """The canonical key of one series; ``resolver=None`` (no inventory) leaves it unresolved."""
    pairs = tuple(sorted(labels.items()))
    if resolver is None:
        return SeriesKey(metric, pairs, None, None, None)
    kind, entity, peer = _resolve(metric, labels, resolver)
    if entity is None:
        kind = None
    return SeriesKey(metric, pairs, kind, entity, peer)
