"""The entities rules run over, by scope, and how a metric or event of one kind of entity reaches a
rule of another scope (a nic metric in a gpu rule goes through the GPU's NIC, a gpu event in a node
rule through the GPU's node ...). Built from an Inventory, or directly in tests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from suanli.inventory.model import gpu_id

__all__ = ["EntityIndex"]


@dataclass
class EntityIndex:
    """Entities by scope and their relations (all canonical ids)."""

    gpus: list[str] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    nics: list[str] = field(default_factory=list)
    ports: list[str] = field(default_factory=list)
    storage: list[str] = field(default_factory=list)
    jobs: list[str] = field(default_factory=list)
    gpu_node: dict[str, str] = field(default_factory=dict)
    gpu_nic: dict[str, str] = field(default_factory=dict)
    nic_node: dict[str, str] = field(default_factory=dict)
    nic_port: dict[str, str] = field(default_factory=dict)
    job_gpus: dict[str, list[str]] = field(default_factory=dict)
    job_sla: dict[str, str] = field(default_factory=dict)
    job_storage: dict[str, str] = field(default_factory=dict)
    rank_gpu: dict[str, str] = field(default_factory=dict)
    dependents_fn: Callable[[str], set[str]] | None = None

    def __post_init__(self) -> None:
        self._node_gpus: dict[str, list[str]] = {}
        for g, n in self.gpu_node.items():
            self._node_gpus.setdefault(n, []).append(g)
        self._gpu_jobs: dict[str, list[str]] = {}
        for j, gs in self.job_gpus.items():
            for g in gs:
                self._gpu_jobs.setdefault(g, []).append(j)

    @classmethod
    def from_inventory(cls, inv: Any) -> EntityIndex:
        """From a ``suanli.inventory.Inventory`` (its topology gives nic_for_gpu and dependents)."""
        topo = getattr(inv, "topology", None)
        gpu_nic: dict[str, str] = {}
        for nic in inv.nics.values():
            if nic.gpu is not None:
                gpu_nic.setdefault(gpu_id(nic.node, nic.gpu), nic.id)
        if topo is not None and hasattr(topo, "nic_for_gpu"):
            for g in inv.gpus:
                n = topo.nic_for_gpu(g)
                if n:
                    gpu_nic[g] = n
        jobs = inv.jobs
        return cls(
            gpus=sorted(inv.gpus), nodes=sorted(inv.nodes), nics=sorted(inv.nics), ports=sorted(inv.ports),
            storage=sorted(inv.storage), jobs=sorted(jobs),
            gpu_node={g.id: g.node for g in inv.gpus.values()}, gpu_nic=gpu_nic,
            nic_node={n.id: n.node for n in inv.nics.values()},
            nic_port={n.id: n.switch_port for n in inv.nics.values() if n.switch_port},
            job_gpus={j.id: [r.gpu for r in j.ranks] for j in jobs.values()},
            job_sla={j.id: j.sla_id for j in jobs.values() if j.sla_id},
            job_storage={j.id: j.storage for j in jobs.values() if j.storage},
            rank_gpu={r.id: r.gpu for j in jobs.values() for r in j.ranks},
            dependents_fn=getattr(topo, "dependents", None))

    def of_scope(self, scope: str) -> list[str]:
        return {"gpu": self.gpus, "node": self.nodes, "nic": self.nics, "switch_port": self.ports,
                "storage": self.storage, "job": self.jobs}.get(scope, [])

    def held(self, scope: str) -> list[str]:
        """The GPUs (``gpu``) or nodes (``node``) some job of the inventory holds: idle spares left out."""
        gpus = sorted(self._gpu_jobs)
        if scope == "gpu":
            return gpus
        if scope == "node":
            return sorted({self.gpu_node[g] for g in gpus if g in self.gpu_node})
        return list(self.of_scope(scope))

    def kind_of(self, entity: str) -> str | None:
        for scope in ("gpu", "nic", "node", "switch_port", "storage", "job"):
            if entity in self._sets()[scope]:
                return scope
        if entity in self.rank_gpu:
            return "rank"
        return None

    def _sets(self) -> dict[str, set[str]]:
        if not hasattr(self, "_set_cache"):
            self._set_cache = {s: set(self.of_scope(s)) for s in ("gpu", "nic", "node", "switch_port",
                                                                   "storage", "job")}
        return self._set_cache

    def node_of(self, kind: str, entity: str) -> str | None:
        if kind == "node":
            return entity
        if kind == "gpu":
            return self.gpu_node.get(entity)
        if kind == "nic":
            return self.nic_node.get(entity)
        return None

    def members(self, rule_scope: str, entity: str, kind: str) -> list[str]:
        """Entities of ``kind`` whose data feeds a rule of ``rule_scope`` on ``entity``."""
        if kind == rule_scope:
            return [entity]
        one = {("gpu", "nic"): self.gpu_nic.get(entity), ("gpu", "node"): self.gpu_node.get(entity),
               ("nic", "node"): self.nic_node.get(entity), ("nic", "switch_port"): self.nic_port.get(entity),
               ("job", "storage"): self.job_storage.get(entity), ("job", "sla"): self.job_sla.get(entity)}
        if (rule_scope, kind) in one:
            hit = one[(rule_scope, kind)]
            return [hit] if hit else []
        if rule_scope == "gpu" and kind == "switch_port":
            nic = self.gpu_nic.get(entity)
            port = self.nic_port.get(nic) if nic else None
            return [port] if port else []
        if rule_scope == "node":
            src = {"gpu": self.gpu_node, "nic": self.nic_node}.get(kind, {})
            return [e for e, n in src.items() if n == entity]
        if rule_scope == "switch_port" and kind == "nic":
            return [n for n, p in self.nic_port.items() if p == entity]
        if rule_scope == "job":
            gpus = self.job_gpus.get(entity, [])
            if kind == "gpu":
                return list(gpus)
            if kind == "node":
                return sorted({self.gpu_node[g] for g in gpus if g in self.gpu_node})
            if kind == "nic":
                return sorted({self.gpu_nic[g] for g in gpus if g in self.gpu_nic})
        return []

    def project(self, kind: str | None, entity: str | None, host: str | None, rule_scope: str) -> list[str]:
        """Rule-scope entities an event on (kind, entity) or host counts for."""
        if entity and kind == "rank":
            gpu = self.rank_gpu.get(entity)
            if rule_scope == "job":
                return [entity.rsplit("/rank", 1)[0]]
            kind, entity = ("gpu", gpu) if gpu else (None, None)
        if entity and kind == rule_scope:
            return [entity]
        if entity and kind == "gpu":
            if rule_scope == "node":
                n = self.gpu_node.get(entity)
                return [n] if n else []
            if rule_scope == "job":
                return list(self._gpu_jobs.get(entity, []))
        node = self.node_of(kind or "", entity) if entity else None
        node = node or host
        if node and rule_scope == "node":
            return [node]
        if node and rule_scope == "job":
            return sorted({j for g in self._node_gpus.get(node, []) for j in self._gpu_jobs.get(g, [])})
        return []

    def labels(self, scope: str, entity: str) -> dict[str, str]:
        """Labels an alert on this entity carries: its id under its scope name plus its parents."""
        out = {scope: entity}
        node = self.node_of(scope, entity)
        if node:
            out["node"] = node
        if scope == "nic":
            if entity in self.nic_port:
                out["switch_port"] = self.nic_port[entity]
            served = [g for g, n in self.gpu_nic.items() if n == entity]
            if len(served) == 1:
                out["gpu"] = served[0]
        if scope == "switch_port":
            out["switch"] = entity.split("/", 1)[0]
        return out

    def dependents(self, entity: str) -> set[str]:
        """Entities downstream of ``entity`` (Topology.dependents when an inventory gave one, else
        derived here: node -> its GPUs and NICs, switch port -> NICs behind it and their GPUs,
        GPU/NIC -> jobs running on them, storage -> jobs reading it)."""
        if self.dependents_fn is not None:
            return set(self.dependents_fn(entity))
        out: set[str] = set()
        kind = self.kind_of(entity)
        if kind == "node":
            out |= set(self._node_gpus.get(entity, []))
            out |= {n for n, nd in self.nic_node.items() if nd == entity}
        elif kind == "switch_port":
            nics = {n for n, p in self.nic_port.items() if p == entity}
            out |= nics | {g for g, n in self.gpu_nic.items() if n in nics}
        elif kind == "nic":
            out |= {g for g, n in self.gpu_nic.items() if n == entity}
        elif kind == "storage":
            out |= {j for j, s in self.job_storage.items() if s == entity}
        gpus = [e for e in out | {entity} if e in self._gpu_jobs]
        out |= {j for g in gpus for j in self._gpu_jobs[g]}
        return out
