"""The whole inventory: entities by canonical id, their kinds, and the lazily built resolver/topology."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from suanli.inventory.gpus import BUILTIN_GPU_MODELS, lookup_model
from suanli.inventory.model import (
    EntityKind,
    Gpu,
    GpuModelSpec,
    Job,
    Link,
    Nic,
    Node,
    NvSwitch,
    Rack,
    Storage,
    Switch,
)

if TYPE_CHECKING:
    from suanli.inventory.resolver import Resolver
    from suanli.inventory.topology import Topology

__all__ = ["Inventory"]

_RANK_RE = re.compile(r"^(?P<job>.+)/rank(?P<rank>\d+)$")


@dataclass(eq=False)
class Inventory:
    """Everything inventory.yaml declares, indexed by canonical id (spec/inventory.md).

    Built by :func:`suanli.inventory.load_inventory`; treat it as read-only.
    ``resolver`` and ``topology`` are built on first use and cached.
    """

    cluster: str
    currency: str
    gpu_models: dict[str, GpuModelSpec]
    racks: tuple[Rack, ...]
    switches: dict[str, Switch]
    links: tuple[Link, ...]
    storage: dict[str, Storage]
    jobs: dict[str, Job]
    source: str = "inventory.yaml"
    extra: dict[str, object] = field(default_factory=dict)
    timezone: str | None = None                  # IANA zone of local-time log stamps; None: UTC
    nodes: dict[str, Node] = field(init=False)
    gpus: dict[str, Gpu] = field(init=False)
    nics: dict[str, Nic] = field(init=False)
    nvswitches: dict[str, NvSwitch] = field(init=False)
    ports: set[str] = field(init=False)
    slas: set[str] = field(init=False)
    pdus: set[str] = field(init=False)
    links_by_id: dict[str, Link] = field(init=False)
    pods: set[str] = field(init=False)
    _kinds: dict[str, EntityKind] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.nodes = {n.id: n for r in self.racks for n in r.nodes}
        self.gpus = {g.id: g for n in self.nodes.values() for g in n.gpus}
        self.nics = {c.id: c for n in self.nodes.values() for c in n.nics}
        self.nvswitches = {w.id: w for n in self.nodes.values() for w in n.nvswitches}
        self.links_by_id = {lk.id: lk for lk in self.links}
        self.ports = {c.switch_port for c in self.nics.values() if c.switch_port}
        self.ports.update(p for lk in self.links for p in (lk.a, lk.b))
        self.slas = {j.sla_id for j in self.jobs.values() if j.sla_id}
        self.pdus = {r.pdu for r in self.racks if r.pdu}
        self.pods = {rk.pod for j in self.jobs.values() for rk in j.ranks if rk.pod}
        kinds: dict[str, EntityKind] = {}
        groups: list[tuple[EntityKind, Iterable[str]]] = [
            ("pdu", self.pdus), ("sla", self.slas), ("pod", self.pods), ("storage", self.storage),
            ("switch_port", self.ports), ("link", self.links_by_id), ("switch", self.switches),
            ("nic", self.nics), ("nvswitch", self.nvswitches), ("gpu", self.gpus), ("node", self.nodes),
            ("rack", {r.id: r for r in self.racks}), ("job", self.jobs),
        ]
        for kind, ids in groups:
            for eid in ids:
                kinds[eid] = kind
        for job in self.jobs.values():
            for rk in job.ranks:
                kinds[rk.id] = "rank"
                if rk.pod and rk.container:
                    kinds[f"{rk.pod}/{rk.container}"] = "container"
        kinds[self.cluster] = kinds.get(self.cluster, "cluster")
        self._kinds = kinds

    def kind_of(self, entity_id: str) -> EntityKind | None:
        """The kind of a canonical id, or None if the inventory does not know it.

        Ranks beyond the listed ones (``job/rank57`` of a job with ranks from spans) are ranks, and
        ``switch/pN`` of a known switch is a switch port even when no cable in the file uses it.
        """
        kind = self._kinds.get(entity_id)
        if kind is not None:
            return kind
        m = _RANK_RE.match(entity_id)
        if m and m.group("job") in self.jobs:
            return "rank"
        head, sep, tail = entity_id.partition("/")
        if sep and head in self.switches and tail:
            return "switch_port"
        return None

    def gpu_spec(self, gpu_id: str) -> GpuModelSpec | None:
        """The model spec of a GPU: the file's ``gpu_models`` first, then the built-in table."""
        gpu = self.gpus.get(gpu_id)
        if gpu is None:
            return None
        spec = lookup_model(gpu.model, self.gpu_models)
        if spec is None and gpu.model is None and len(self.gpu_models) == 1:
            spec = next(iter(self.gpu_models.values()))
        return spec if spec is not None else lookup_model(gpu.model, BUILTIN_GPU_MODELS)

    def gpu_price(self, gpu_id: str) -> float | None:
        """Price of one GPU-hour in ``currency`` (None when the file gives none for its model)."""
        spec = self.gpu_spec(gpu_id)
        return spec.gpu_hour_price if spec is not None else None

    def switch_of_port(self, port_id: str) -> str | None:
        """``leaf-01/p3`` -> ``leaf-01`` (None if that switch is unknown)."""
        head, sep, _ = port_id.partition("/")
        return head if sep and head in self.switches else None

    @cached_property
    def resolver(self) -> Resolver:
        from suanli.inventory.resolver import Resolver

        return Resolver(self)

    @cached_property
    def topology(self) -> Topology:
        from suanli.inventory.topology import Topology

        return Topology(self)
