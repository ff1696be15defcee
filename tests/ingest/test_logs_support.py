"""Test support (no tests here): a small resolver built straight from an inventory.yaml, independent
of suanli.inventory, so the ingest tests check the parsers and not the inventory code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def _pci(text: str) -> str:
    """``00000000:AB:00.0`` / ``0000:ab:00`` -> ``ab:00.0`` (domain dropped, lower case, function 0)."""
    parts = text.strip().lower().split(":")
    bus, devfn = parts[-2], parts[-1]
    return f"{bus}:{devfn if '.' in devfn else devfn + '.0'}"


class InventoryResolver:
    """Alias lookups of spec/inventory.md over one inventory.yaml."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.nodes: set[str] = set()
        self.by_uuid: dict[str, str] = {}
        self.by_index: dict[tuple[str, int], str] = {}
        self.by_pci: dict[tuple[str, str], str] = {}
        self.nic_by_pci: dict[tuple[str, str], str] = {}
        self.nvswitches: dict[tuple[str, str], str] = {}
        for rack in doc.get("racks", []):
            for node in rack.get("nodes", []):
                nid = node["id"]
                self.nodes.add(nid)
                for g in node.get("gpus", []):
                    gid = f"{nid}/gpu{g['index']}"
                    self.by_index[(nid, int(g["index"]))] = gid
                    if g.get("uuid"):
                        self.by_uuid[g["uuid"]] = gid
                    if g.get("pci_bus_id"):
                        self.by_pci[(nid, _pci(str(g["pci_bus_id"])))] = gid
                for w in node.get("nvswitches", []):
                    wid = f"{nid}/nvswitch{w['index']}"
                    self.nvswitches[(nid, f"nvidia-nvswitch{w['index']}")] = wid
                    if w.get("pci_bus_id"):
                        self.nvswitches[(nid, _pci(str(w["pci_bus_id"])))] = wid
                for c in node.get("nics", []):
                    if c.get("pci_bus_id"):
                        self.nic_by_pci[(nid, _pci(str(c["pci_bus_id"])))] = f"{nid}/{c['name']}"
        self.jobs = {j["id"] for j in doc.get("jobs", [])}
        self.node_jobs: dict[str, set[str]] = {}
        self.rank_gpus: dict[tuple[str, int], str] = {}
        for j in doc.get("jobs", []):
            for r in j.get("ranks", []):
                self.node_jobs.setdefault(str(r["gpu"]).split("/")[0], set()).add(j["id"])
                self.rank_gpus[(j["id"], int(r["rank"]))] = str(r["gpu"])

    @classmethod
    def load(cls, path: Path) -> InventoryResolver:
        return cls(yaml.safe_load(path.read_text()))

    def node(self, host: str, /) -> str | None:
        return host if host in self.nodes else None

    def gpu(self, *, uuid: str | None = None, host: str | None = None, index: int | None = None,
            pci_bus_id: str | None = None) -> str | None:
        if uuid is not None:
            return self.by_uuid.get(uuid)
        if host is None:
            return None
        if index is not None:
            return self.by_index.get((host, index))
        if pci_bus_id is not None:
            return self.by_pci.get((host, _pci(pci_bus_id)))
        return None

    def gpu_any(self, text: str, host: str | None = None) -> str | None:
        """A GPU by canonical id (``node/gpuN``), UUID, or with the host its PCI bus id."""
        node, sep, index = text.partition("/gpu")
        if sep and index.isdecimal():
            return self.by_index.get((node, int(index)))
        if text in self.by_uuid:
            return self.by_uuid[text]
        return self.gpu(host=host, pci_bus_id=text) if host else None

    def gpu_in_any_domain(self, host: str, pci_bus_id: str) -> str | None:
        """The GPU at that bus, device and function whatever the domain (this table has no domains)."""
        return self.by_pci.get((host, _pci(pci_bus_id)))

    def nic(self, *, host: str | None = None, device: str | None = None, mac: str | None = None,
            pci_bus_id: str | None = None) -> str | None:
        if host is None or pci_bus_id is None:
            return None
        return self.nic_by_pci.get((host, _pci(pci_bus_id)))

    def process_gpu(self, host: str | None, job: str | None, rank: int | None) -> str | None:
        """A CUDA device index names the process's GPU: its rank's, else the node's only GPU."""
        if job is not None and rank is not None and (job, rank) in self.rank_gpus:
            return self.rank_gpus[(job, rank)]
        gpus = [g for (node, _), g in self.by_index.items() if node == host]
        return gpus[0] if len(gpus) == 1 else None

    def nvswitch(self, host: str, device: str | None = None, pci_bus_id: str | None = None) -> str | None:
        """An NVSwitch by its kernel device name (``nvidia-nvswitchN``), else its PCI address."""
        by_dev = self.nvswitches.get((host, device or ""))
        return by_dev or (self.nvswitches.get((host, _pci(pci_bus_id))) if pci_bus_id else None)

    def job(self, job_id: str, /) -> str | None:
        return job_id if job_id in self.jobs else None

    def jobs_on_node(self, node: str) -> list[str]:
        """The optional hook the log parser uses to put trainer lines on their job."""
        return sorted(self.node_jobs.get(node, ()))
