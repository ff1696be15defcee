"""Where a log record points: the GPU, NIC, job, rank or node a recognised record is about.

Hardware records (Xid, AER, CUDA errors) go to the GPU at the PCI address they name (an AER of
a bridge port to the GPU behind it, or to the GPU the device lines after a root port's report
name; an Xid or AER whose address matches no GPU exactly to the node's one GPU at that address in
another PCI domain, or at any address its text names), SXids to their NVSwitch, so that no later
layer reads PCI text again. NCCL and CUDA errors of a known job go to the job's rank,
job records (checkpoints, iterations) to the job, everything else to the node that wrote it.
Without an inventory ids pass through where they are canonical (:mod:`suanli.ingest.resolve`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from suanli.ingest.log_classify import Classified
from suanli.ingest.log_config import LogConfig
from suanli.ingest.log_head import Head
from suanli.ingest.records import Event
from suanli.ingest.resolve import job_of, node_of
from suanli.inventory import Resolver
from suanli.inventory.model import rank_id
from suanli.inventory.normalize import PCI_IN_TEXT, normalise_pci

__all__ = ["EntityMapper", "host_from_path"]

_GPU_KINDS = frozenset({"xid", "aer", "cuda_oom", "cuda_error"})
_LOOSE_KINDS = frozenset({"xid", "aer"})
_JOB_KINDS = frozenset({"nccl_warn", "nccl_timeout", "checkpoint", "iteration", "cuda_oom", "cuda_error",
                        "restart"})
_RANK_KINDS = frozenset({"nccl_warn", "nccl_timeout", "cuda_oom", "cuda_error"})
_PCI_TEXT = re.compile(PCI_IN_TEXT)
DEVICE_LINES_S = 5.0
"""A device's AER lines (``nvidia 0000:03:00.0: AER: can't recover``) this soon after its port's
report name the device behind the port."""

Placed = tuple[str | None, str | None]          # entity kind, entity id


class EntityMapper:
    """Maps the records of one stream; learns which job a process runs from its checkpoint lines
    (``on_new_job`` is called when it learns one, so that cached mappings can be dropped)."""

    def __init__(self, resolver: Resolver | None, config: LogConfig, on_new_job: Callable[[], None]) -> None:
        self.resolver, self.config, self.on_new_job = resolver, config, on_new_job
        self.pid_jobs: dict[tuple[str | None, int], str] = {}
        self.node_job: dict[str, str | None] = {}
        self.port_gpu: dict[tuple[str | None, str], str] = {}
        """(host, PCI port) -> the GPU behind it, learnt from the device lines after its AER report."""

    def node(self, host: str) -> str | None:
        return node_of(self.resolver, host)

    def place(self, cls: Classified, text: str, host: str | None, head: Head | None, rank: int | None,
              attrs: dict[str, Any]) -> Placed:
        """Where the record points; what it learns on the way goes into ``attrs`` (the job, the
        normalised PCI address, how the entity was found)."""
        node = self.node(host) if host else None
        job = self._job(cls, host, node, head)
        if job is not None:
            attrs["job"] = job
        kind = cls.kind
        if kind == "nic_link" and cls.pci:
            attrs["pci_bus_id"] = normalise_pci(cls.pci) or cls.pci
            nic = self.resolver.nic(host=host, pci_bus_id=cls.pci) if self.resolver and host else None
            if nic is not None:
                return "nic", nic
        if kind == "sxid":
            return self._nvswitch(cls, host, node, attrs)
        if kind in _GPU_KINDS and (cls.gpu_index is not None
                                   or not (kind in _RANK_KINDS and job is not None and rank is not None)):
            gpu = self._gpu(cls, text, host, node, attrs, rank)
            if gpu is not None:
                return "gpu", gpu
        if kind in _JOB_KINDS and job is not None:
            return ("rank", rank_id(job, rank)) if rank is not None and kind in _RANK_KINDS else ("job", job)
        nccl_host = attrs.get("nccl_host")
        if isinstance(nccl_host, str):
            other = self.node(nccl_host)
            if other is not None:
                return "node", other
        return ("node", node) if node else (None, None)

    def _nvswitch(self, cls: Classified, host: str | None, node: str | None, attrs: dict[str, Any]) -> Placed:
        """An SXid's switch (by the ``nvidia-nvswitchN`` device name, else its PCI address); the
        node when the inventory does not list the node's switches (spec/diagnosis.md)."""
        if cls.pci:
            attrs["pci_bus_id"] = normalise_pci(cls.pci) or cls.pci
        dev = cls.attrs.get("nvswitch")
        found = self.resolver.nvswitch(host, device=dev if isinstance(dev, str) else None,
                                       pci_bus_id=cls.pci) if self.resolver and host else None
        if found is not None:
            return "nvswitch", found
        return ("node", node) if node else (None, None)

    def _gpu(self, cls: Classified, text: str, host: str | None, node: str | None,
             attrs: dict[str, Any], rank: int | None) -> str | None:
        gpu = None
        if cls.pci:
            attrs["pci_bus_id"] = normalise_pci(cls.pci) or cls.pci
            gpu = self._gpu_at(cls.pci, host)
            learnt = self.port_gpu.get((host, normalise_pci(str(attrs.get("reporter") or cls.pci)) or ""))
            if gpu is None and cls.kind == "aer" and learnt is not None:
                attrs["entity_via"] = "the device line after an earlier report of this port"
                return learnt
            if gpu is None and cls.kind == "aer" and self.config.aer_downstream_bus:
                gpu = self._downstream_gpu(attrs.get("reporter") or cls.pci, host)
                if gpu is not None:
                    attrs["entity_via"] = "downstream bus of the reporting port"
        elif cls.gpu_index is not None and node is not None:
            # "GPU N" / "current device: N" is the process's CUDA device index, not an inventory index
            attrs["cuda_device"] = cls.gpu_index
            gpu = self.resolver.process_gpu(host, attrs.get("job"), rank) if self.resolver else None
            if gpu is not None:
                attrs["entity_via"] = "the process's GPU: its rank's, else the node's only one"
            return gpu
        if gpu is None and cls.kind in _LOOSE_KINDS:
            gpu = self._gpu_named(cls.pci, text, host)
            if gpu is not None:
                attrs["entity_via"] = "a PCI address in the record, any domain"
        return gpu

    def behind_port(self, report: Event, following: Event) -> Event:
        """An AER that a PCIe port reported about itself (a Surprise Down, a completion timeout)
        belongs to the GPU behind the port: the GPU the device lines right after it name (``nvidia
        0000:03:00.0: AER: can't recover`` on the same host). The port is remembered, so its later
        records (``Root Port link has been reset``) go to that GPU too."""
        port = normalise_pci(str(report.attrs.get("reporter") or ""))
        if (report.kind != "aer" or following.kind != "aer" or report.entity_kind == "gpu" or port is None
                or report.attrs.get("reporter_driver") != "pcieport"
                or following.attrs.get("reporter_driver") in (None, "pcieport")
                or following.entity_kind != "gpu" or following.entity_id is None or following.host != report.host
                or following.ts - report.ts > DEVICE_LINES_S):           # NaN times: close
            return report
        self.port_gpu[(report.host, port)] = following.entity_id
        attrs = {**report.attrs, "entity_via": f"the device line after the port's report ({following.source})"}
        return dataclasses.replace(report, entity_kind="gpu", entity_id=following.entity_id, attrs=attrs)

    def _gpu_at(self, pci: str, host: str | None) -> str | None:
        """The GPU at exactly this PCI address on the host."""
        if self.resolver is None or normalise_pci(pci) is None:
            return None
        return self.resolver.gpu(host=host, pci_bus_id=pci)

    def _downstream_gpu(self, port: str, host: str | None) -> str | None:
        norm = normalise_pci(port)
        if norm is None:
            return None
        domain, bus = norm[:4], int(norm[5:7], 16)
        return self._gpu_at(f"{domain}:{bus + 1:02x}:00.0", host) if bus < 0xFF else None

    def _gpu_named(self, pci: str | None, text: str, host: str | None) -> str | None:
        """The host's one GPU at the record's address in any PCI domain, else at the first address
        in its text that names one (exactly, else in any domain)."""
        if self.resolver is None or not host:
            return None
        for cand in (pci, *_PCI_TEXT.findall(text)):
            gpu = (self.resolver.gpu(host=host, pci_bus_id=cand) or self.resolver.gpu_in_any_domain(host, cand)
                   if cand else None)
            if gpu is not None:
                return gpu
        return None

    def _job(self, cls: Classified, host: str | None, node: str | None, head: Head | None) -> str | None:
        """The job a record belongs to: named by a checkpoint path, else learnt from an earlier
        checkpoint line of the same process, else the only job the inventory runs on the node."""
        pid = head.pid if head else None
        path = cls.attrs.get("path")
        if isinstance(path, str) and path.strip("/"):
            job = job_of(self.resolver, path.rstrip("/").rsplit("/", 1)[-1])
            if job is not None:
                if pid is not None and self.pid_jobs.get((host, pid)) != job:
                    self.pid_jobs[(host, pid)] = job
                    self.on_new_job()           # lines of this process now map to the job
                return job
        if pid is not None and (host, pid) in self.pid_jobs:
            return self.pid_jobs[(host, pid)]
        return self._only_job(node) if node is not None else None

    def _only_job(self, node: str) -> str | None:
        if self.resolver is None:
            return None
        if node not in self.node_job:
            jobs = self.resolver.jobs_on_node(node)
            self.node_job[node] = jobs[0] if len(jobs) == 1 else None
        return self.node_job[node]


def host_from_path(path: Path, resolver: Resolver) -> str | None:
    """The node a log file or its folder is named after (``node-012.dmesg.log``, ``node-012/kernel.log``)."""
    name = path.name.removesuffix(".gz")
    for cand in (name.split(".", 1)[0], name.rsplit(".", 1)[0], path.parent.name):
        node = resolver.node(cand) if cand else None
        if node is not None:
            return node
    return None
