"""An ``inventory.yaml`` from what the cluster says, merged into the hand-written one.

What the exporters and schedulers say wins for what they know (a node's GPUs: index, UUID, PCI bus
id, model; its NICs; running jobs' GPUs); everything else of an existing file is kept as written
(racks, switches, links, NIC cabling and MACs, storage, SLAs, prices, model shapes). What could not
be learned is listed in ``Discovery.unknown`` (nodes with no rack, NICs with no switch port, GPU
models without a spec, jobs without a model shape, nodes in the file that no exporter reports).
The result is checked by the inventory loader.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from suanli.inventory.discover.exporters import NodeSeen
from suanli.inventory.discover.schedulers import JobSeen
from suanli.inventory.gpus import BUILTIN_GPU_MODELS, lookup_model
from suanli.inventory.model import gpu_id

__all__ = ["Discovery", "build_inventory"]

UNRACKED = "unracked"


@dataclass
class Discovery:
    doc: dict[str, Any]
    unknown: list[str] = field(default_factory=list)

    def yaml(self) -> str:
        return yaml.safe_dump(self.doc, sort_keys=False, width=200)


def _nodes_by_id(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(n["id"]): n for r in doc.get("racks") or [] for n in r.get("nodes") or []}


def _merge_gpus(node_id: str, node: dict[str, Any], seen: NodeSeen, unknown: list[str]) -> None:
    by_index = {int(g["index"]): g for g in node.get("gpus") or []}
    for idx, gpu in sorted(seen.gpus.items()):
        entry = by_index.setdefault(idx, {"index": idx})
        if entry.get("uuid") and gpu.uuid and entry["uuid"] != gpu.uuid:
            unknown.append(f"{gpu_id(node_id, idx)}: UUID changed from {entry['uuid']} to {gpu.uuid} (replaced?)")
        for key, value in (("uuid", gpu.uuid), ("pci_bus_id", gpu.pci_bus_id), ("model", gpu.model)):
            if value:
                entry[key] = value
        if gpu.mig:
            entry["mig"] = True
    node["gpus"] = [by_index[i] for i in sorted(by_index)]


def _merge_nics(node: dict[str, Any], seen: NodeSeen) -> None:
    names = {str(n["name"]) for n in node.get("nics") or []}
    nics = list(node.get("nics") or [])
    nics.extend({"name": d} for d in sorted(seen.nics - names))
    if nics:
        node["nics"] = nics


def _place_nodes(doc: dict[str, Any], nodes: Mapping[str, NodeSeen], unknown: list[str]) -> None:
    known = _nodes_by_id(doc)
    racks = doc.setdefault("racks", [])
    for node_id in sorted(nodes):
        node = known.get(node_id)
        if node is None:
            rack = next((r for r in racks if r.get("id") == UNRACKED), None)
            if rack is None:
                rack = {"id": UNRACKED, "nodes": []}
                racks.append(rack)
            node = {"id": node_id}
            rack["nodes"].append(node)
            unknown.append(f"{node_id}: rack unknown (put in '{UNRACKED}')")
        _merge_gpus(node_id, node, nodes[node_id], unknown)
        _merge_nics(node, nodes[node_id])
    for node_id in sorted(set(known) - set(nodes)):
        unknown.append(f"{node_id}: in the inventory but no exporter reports it (kept)")


def _merge_jobs(doc: dict[str, Any], jobs: Iterable[JobSeen], unknown: list[str]) -> None:
    by_id = {str(j["id"]): j for j in doc.get("jobs") or []}
    for job in jobs:
        entry = by_id.setdefault(job.id, {"id": job.id})
        if job.gpus:
            entry["ranks"] = [{"rank": i, "gpu": gpu_id(node, idx), **({"pod": pod} if pod else {})}
                              for i, (node, idx, pod) in enumerate(job.gpus)]
            unknown.append(f"{job.id}: ranks numbered by position ({job.source}); the job's spans override them")
        elif job.nodes:
            unknown.append(f"{job.id}: on {', '.join(job.nodes)} but no GPU attributed to it ({job.source})")
        if not (entry.get("model") or {}):
            unknown.append(f"{job.id}: model shape unknown (MFU needs params/layers/... or flops_per_token)")
    if by_id:
        doc["jobs"] = list(by_id.values())


def _report_gaps(doc: dict[str, Any], unknown: list[str]) -> None:
    models = {**BUILTIN_GPU_MODELS}
    missing_models: set[str] = set()
    for node_id, node in _nodes_by_id(doc).items():
        for nic in node.get("nics") or []:
            if not nic.get("switch_port"):
                unknown.append(f"{node_id}/{nic['name']}: switch port unknown (cabling is not in any exporter)")
        for gpu in node.get("gpus") or []:
            name = gpu.get("model")
            if name and lookup_model(str(name), models) is None and name not in (doc.get("gpu_models") or {}):
                missing_models.add(str(name))
    unknown.extend(f"GPU model {m!r}: no spec (add it under gpu_models)" for m in sorted(missing_models))


def build_inventory(cluster: str, nodes: Mapping[str, NodeSeen], jobs: Iterable[JobSeen] = (),
                    existing: Mapping[str, Any] | None = None) -> Discovery:
    """The merged document and what is still unknown."""
    doc: dict[str, Any] = copy.deepcopy(dict(existing)) if existing else {}
    doc.setdefault("cluster", cluster)
    unknown: list[str] = []
    _place_nodes(doc, nodes, unknown)
    _merge_jobs(doc, jobs, unknown)
    _report_gaps(doc, unknown)
    return Discovery(doc, unknown)
