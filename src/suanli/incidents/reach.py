"""Where a fault's effects reach: the dependants of an entity in the physical, logical and dataflow
topologies, the NIC on a GPU's PCIe path, and the ranks, GPUs and network of the jobs behind it.

:meth:`Reach.explains` is the one test of "a fault of category C at X explains the signal at Y"
(correlation folds with it; ``topology: upstream`` inhibit rules ask :meth:`Reach.downstream`,
the topology half of the same question).
"""

from __future__ import annotations

from suanli.analysis.categories import policy
from suanli.incidents.model import Signal
from suanli.inventory import Inventory

__all__ = ["NETWORK_KINDS", "Reach"]

NETWORK_KINDS: frozenset[str] = frozenset({"nic", "switch_port", "link", "switch"})
"""Entities whose faults show as retransmits and slow pairs across the network of the jobs they carry."""


class Reach:
    """What a fault at one entity reaches, over the inventory's topologies (cached): the one
    answer to "does a fault at X explain a signal at Y", for correlation and inhibition alike."""

    def __init__(self, inventory: Inventory) -> None:
        self.inv = inventory
        self._deps: dict[str, frozenset[str]] = {}
        self._members: dict[str, frozenset[str]] = {}
        self._nets: dict[str, frozenset[str]] = {}

    def dependents(self, entity_id: str) -> frozenset[str]:
        if entity_id not in self._deps:
            try:
                deps = frozenset(self.inv.topology.dependents(entity_id))
            except (KeyError, ValueError):
                deps = frozenset()
            self._deps[entity_id] = deps
        return self._deps[entity_id]

    def downstream(self, root: str, other: str) -> bool:
        """Whether ``other`` depends on ``root`` (physical, logical or dataflow topology)."""
        return other in self.dependents(root)

    def _pcie_peer(self, gpu: str) -> str | None:
        """The NIC on the GPU's PCIe path (GPUDirect affinity): a riser fault shows on it too."""
        if gpu not in self.inv.gpus:
            return None
        try:
            return self.inv.topology.nic_for_gpu(gpu)
        except (KeyError, ValueError):
            return None

    def _network(self, job_id: str) -> frozenset[str]:
        if job_id not in self._nets:
            try:
                self._nets[job_id] = frozenset(self.inv.topology.job_network(job_id))
            except (KeyError, ValueError):
                self._nets[job_id] = frozenset()
        return self._nets[job_id]

    def members(self, root: str) -> frozenset[str]:
        """Ranks and GPUs of the jobs that depend on ``root`` (or of ``root`` itself, a job), and,
        for a fault in the network, those jobs' NICs, ports and links: where it shows as slowness,
        a stall or retransmits."""
        if root not in self._members:
            out: set[str] = set()
            for dep in (root, *self.dependents(root)):
                job = self.inv.jobs.get(dep)
                if job is not None:
                    out.update(r.id for r in job.ranks)
                    out.update(r.gpu for r in job.ranks)
                    if self.inv.kind_of(root) in NETWORK_KINDS:
                        out.update(self._network(job.id))
            self._members[root] = frozenset(out)
        return self._members[root]

    def explains(self, root: str, sig: Signal, category: str | None = None) -> bool:
        """Whether a fault at ``root`` explains ``sig``: the same entity, a dependant, or a member of
        a dependent job — the latter only for symptoms, not for another fault's direct evidence nor
        for an alert of a category the fault does not cause."""
        other = sig.entity_id
        if root == other or self.downstream(root, other):
            return True
        if policy(category).pcie_path and self._pcie_peer(root) == other:
            return True
        # another category's direct evidence is its own fault; an indirect alert of a category this
        # fault neither is nor causes (a memory forecast on a GPU behind a bad port) is not its
        # symptom, unless it fired on the whole job alike (then it is the job's trouble, :mod:`.jobwide`)
        other_cat = sig.category is not None and sig.category != category
        unrelated = sig.job_wide is None and sig.category not in policy(category).explains
        own_fault = other_cat and (sig.direct or unrelated)
        return not own_fault and other in self.members(root)
