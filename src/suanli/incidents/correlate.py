"""Topology-aware correlation: one incident per fault, named at the faulty part.

Findings (an analysis's verdict at an entity, with direct evidence) seed incidents. A finding
whose entity depends on another finding's entity (a NIC behind a bad port, a job whose GPU fell
off the bus) and whose time is close is that fault's symptom, not a fault of its own; so is a
second finding on the same entity, which keeps the more specific category. Alerts then join the
incident whose root explains them: the same entity, or an entity downstream of the root in the
physical, logical or dataflow topology, within the correlation window. Alerts no finding
explains group among themselves by the same rule and become incidents of their own (the rule's
category, lower confidence) when at least one of them carries direct evidence and a category.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from suanli.incidents.model import Incident, Signal
from suanli.inventory import Inventory

__all__ = ["CorrelationConfig", "correlate"]

# When two findings land on one entity, the more specific category names the fault.
CATEGORY_PRIORITY: dict[str, int] = {
    "gpu_lost": 100, "gpu_memory_failure": 90, "pcie_riser": 80, "nvlink_degradation": 70,
    "gpu_thermal": 60, "gpu_memory_degradation": 50, "gpu_straggler": 40,
    "nic_down": 85, "optical_degradation": 75, "switch_port_errors": 72,
    "storage_slow": 60, "oom": 95, "collective_hang": 10,
}
# What a fault can cause downstream: a finding of such a category on a dependant of the fault's
# entity is that fault's symptom. A lost GPU hangs its job's collectives; a degrading memory does
# not, so a hang beside it is a second fault. A bad port or optic shows on the NICs behind it.
CAN_EXPLAIN: dict[str, frozenset[str]] = {
    "gpu_lost": frozenset({"collective_hang", "gpu_straggler"}),
    "gpu_memory_failure": frozenset({"collective_hang"}),
    "pcie_riser": frozenset({"collective_hang", "gpu_straggler", "switch_port_errors",
                             "optical_degradation", "nic_down"}),
    "gpu_thermal": frozenset({"gpu_straggler"}),
    "nvlink_degradation": frozenset({"gpu_straggler"}),
    "nic_down": frozenset({"collective_hang"}),
    "switch_port_errors": frozenset({"collective_hang", "switch_port_errors", "optical_degradation", "nic_down"}),
    "optical_degradation": frozenset({"collective_hang", "switch_port_errors", "optical_degradation",
                                      "nic_down"}),
}
NEVER_FOLDED: frozenset[str] = frozenset({"oom"})
# Entities whose faults show as retransmits and slow pairs across the network of the jobs they carry.
NETWORK_KINDS: frozenset[str] = frozenset({"nic", "switch_port", "link", "switch"})
# A fault on a GPU's PCIe path (the riser) also disturbs the NIC that shares that path.
PCIE_PATH_CATEGORIES: frozenset[str] = frozenset({"pcie_riser"})


@dataclass(frozen=True)
class CorrelationConfig:
    window_s: float = 900.0
    """Signals further apart in time than this never join one incident."""
    min_seed_confidence: float = 0.0
    """Findings below this confidence do not seed incidents (they may still join one)."""
    alert_incident_confidence: float = 0.5
    """Confidence of an incident seeded by alerts alone (no analysis finding)."""


def _close(a: Signal, b: Signal, window_s: float) -> bool:
    a_end = a.end if a.end is not None else float("inf")
    b_end = b.end if b.end is not None else float("inf")
    return a.start <= b_end + window_s and b.start <= a_end + window_s


class _Graph:
    """Cached upstream/downstream questions over the inventory's topologies."""

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
        a dependent job — the latter only for symptoms, not for another fault's direct evidence."""
        other = sig.entity_id
        if root == other or other in self.dependents(root):
            return True
        if category in PCIE_PATH_CATEGORIES and self._pcie_peer(root) == other:
            return True
        own_fault = sig.direct and sig.category is not None and sig.category != category
        return not own_fault and other in self.members(root)


def _new_incident(seed: Signal) -> Incident:
    inc = Incident(category=seed.category or seed.name, root_kind=seed.entity_kind,
                   root_id=seed.entity_id, confidence=seed.confidence, start=seed.start,
                   detected_at=seed.detected_at, end=seed.end, signals=[seed],
                   evidence=list(seed.evidence))
    _note_symptoms(inc, seed)
    return inc


def _note_symptoms(inc: Incident, sig: Signal) -> None:
    if sig.source == "finding" and sig.finding is not None:
        inc.symptom_ids.update(sym.entity_id for sym in sig.finding.symptoms)


def _absorb(inc: Incident, sig: Signal) -> None:
    inc.signals.append(sig)
    _note_symptoms(inc, sig)
    if _own_evidence(inc, sig):
        for line in sig.evidence:
            if line not in inc.evidence and len(inc.evidence) < 12:
                inc.evidence.append(line)


def _own_evidence(inc: Incident, sig: Signal) -> bool:
    """Evidence worth showing: findings, and direct alerts at the root or of the same category."""
    if sig.source == "finding":
        return True
    return sig.source != "symptom" and sig.direct and (sig.entity_id == inc.root_id or sig.category == inc.category)


def _detected_at(inc: Incident) -> float:
    """When suanli knew: the earliest of the root finding's own detection time and the firing of a
    direct rule alert at the root or of the incident's category; the onset if neither says."""
    times = [s.detected_at for s in inc.signals if s.detected_at is not None and (
        (s.source == "finding" and s.entity_id == inc.root_id)
        or (s.source in ("rule", "alertmanager") and s.direct
            and (s.entity_id == inc.root_id or s.category == inc.category)))]
    return max(min(times), inc.start) if times else inc.start


def _as_signal(inc: Incident) -> Signal:
    return Signal("finding", inc.category, inc.root_kind, inc.root_id, inc.start, inc.end,
                  inc.detected_at, inc.category, inc.confidence)


def _merge_findings(findings: list[Signal], graph: _Graph, cfg: CorrelationConfig) -> list[Incident]:
    """Fold findings into one another: same entity -> most specific category; downstream -> symptom."""
    order = sorted(findings, key=lambda s: (-CATEGORY_PRIORITY.get(s.category or "", 0), -s.confidence, s.start))
    incidents: list[Incident] = []
    for sig in order:
        host = None
        for inc in incidents:
            if not _close(_as_signal(inc), sig, cfg.window_s):
                continue
            same = inc.root_id == sig.entity_id
            if same and (sig.category not in NEVER_FOLDED or inc.category == sig.category):
                host = inc
                break
            if (sig.category in CAN_EXPLAIN.get(inc.category, frozenset())
                    and graph.explains(inc.root_id, sig, inc.category)):
                host = inc
                break
        if host is None:
            if sig.confidence >= cfg.min_seed_confidence:
                incidents.append(_new_incident(sig))
            continue
        host.start = min(host.start, sig.start)
        host.confidence = max(host.confidence, sig.confidence) if host.root_id == sig.entity_id else host.confidence
        _absorb(host, sig)
    return incidents


def _best_host(sig: Signal, incidents: list[Incident], graph: _Graph, window_s: float) -> Incident | None:
    best: tuple[tuple[int, int, float], Incident] | None = None
    for inc in incidents:
        if not _close(_as_signal(inc), sig, window_s):
            continue
        if not (graph.explains(inc.root_id, sig, inc.category) or sig.entity_id in inc.symptom_ids):
            continue
        rank = (int(inc.root_id == sig.entity_id), int(sig.category == inc.category), inc.confidence)
        if best is None or rank > best[0]:
            best = (rank, inc)
    return None if best is None else best[1]


def _alert_incidents(loose: list[Signal], graph: _Graph, cfg: CorrelationConfig) -> tuple[list[Incident], list[Signal]]:
    """Alerts no finding explains: the upstream-most direct, categorised alert seeds an incident."""
    seeds = [s for s in loose if s.direct and s.category]
    seeds.sort(key=lambda s: (-len(graph.dependents(s.entity_id)), s.start))
    incidents: list[Incident] = []
    for s in seeds:
        host = _best_host(s, incidents, graph, cfg.window_s)
        if host is None:
            inc = _new_incident(s)
            inc.confidence = min(inc.confidence, cfg.alert_incident_confidence)
            incidents.append(inc)
        else:
            _absorb(host, s)
    left: list[Signal] = []
    seeded = {id(s) for s in seeds}
    for s in loose:
        if id(s) in seeded:
            continue
        host = _best_host(s, incidents, graph, cfg.window_s)
        if host is None:
            left.append(s)
        else:
            _absorb(host, s)
    return incidents, left


def correlate(signals: Iterable[Signal], inventory: Inventory,
              config: CorrelationConfig = CorrelationConfig()) -> tuple[list[Incident], list[Signal]]:
    """Incidents, and the alerts that no incident explains (reported, never dropped)."""
    graph = _Graph(inventory)
    sigs = list(signals)
    incidents = _merge_findings([s for s in sigs if s.source == "finding"], graph, config)
    loose: list[Signal] = []
    for s in sigs:
        if s.source == "finding":
            continue
        host = _best_host(s, incidents, graph, config.window_s)
        if host is None:
            loose.append(s)
        else:
            _absorb(host, s)
    extra, left = _alert_incidents(loose, graph, config)
    incidents.extend(extra)
    for inc in incidents:
        inc.detected_at = _detected_at(inc)
    incidents.sort(key=lambda i: (i.start, i.root_id))
    return incidents, left
