"""THE category table: every fault category of spec/diagnosis.md and its policy, in one place.

Each row says where such a fault is named (its root-cause kind), how specific it is when two
categories land on one entity (``CATEGORY_ORDER``: the cause before its consequences), which
categories of findings on the entities downstream of it are its symptoms (``explains``), what to
do about it when no rule planned anything (``default_actions``), whether it is never folded into
another fault (``never_folded``), whether it also shows on the NIC that shares its GPU's PCIe path
(``pcie_path``) and how sure its detectors are (``confidence``).

Health (one finding per GPU), correlation (folding, the symptom test), the pipeline (default
actions), ``findings.CATEGORIES`` and the simulator's fault library all read this table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["CATEGORIES", "CATEGORY_ORDER", "POLICIES", "CategoryPolicy", "Confidence", "policy", "priority",
           "root_kind"]


@dataclass(frozen=True)
class Confidence:
    """How sure a detector of this category is: ``strong`` with corroborating evidence (two
    counters agree, an Xid names it), ``weak`` on one line of evidence; no bonus lifts it above
    ``cap``."""

    strong: float
    weak: float
    cap: float = 0.99


@dataclass(frozen=True)
class CategoryPolicy:
    name: str
    root_kinds: tuple[str, ...]
    """Entity kinds the fault may be named at (spec/diagnosis.md "Fault taxonomy"); the first is
    the usual one (the simulator injects there)."""
    explains: frozenset[str]
    """Categories of findings on entities downstream of this fault that are its symptoms, not
    faults of their own (a lost GPU hangs its job's collectives; a degrading memory does not)."""
    default_actions: tuple[str, ...]
    """What to do when no rule planned an action (always dry run in ``diagnose``)."""
    confidence: Confidence
    never_folded: bool = False
    """The fault is its owner's own (a job's out-of-memory): never a symptom of hardware."""
    pcie_path: bool = False
    """The fault sits on a GPU's PCIe path, so it also disturbs the NIC sharing that path."""

    @property
    def root_kind(self) -> str:
        return self.root_kinds[0]


_NETWORK_SYMPTOMS = frozenset({"collective_hang", "switch_port_errors", "optical_degradation", "nic_down"})

_TABLE: tuple[CategoryPolicy, ...] = (
    # in CATEGORY_ORDER: the more specific (the cause) first. A bad riser heats its GPU and can
    # drop it off the bus; a DBE can hang it; heat throttles NVLink; everything slows a rank.
    CategoryPolicy("pcie_riser", ("gpu",), _NETWORK_SYMPTOMS | {"gpu_straggler"},
                   ("mark_degraded", "open_ticket", "reschedule_job"), Confidence(0.9, 0.75, cap=0.95),
                   pcie_path=True),
    CategoryPolicy("gpu_memory_failure", ("gpu",), frozenset({"collective_hang"}),
                   ("retire_gpu", "reschedule_job"), Confidence(0.9, 0.9)),
    CategoryPolicy("gpu_lost", ("gpu",), frozenset({"collective_hang", "gpu_straggler"}),
                   ("drain_node", "reschedule_job", "open_ticket"), Confidence(0.95, 0.7)),
    # a broken NVSwitch cuts the NVLink of every GPU of its node: their NVLink findings, the slow
    # ranks and the hung collectives behind them are its symptoms (Fabric Manager guide DU-09883-001:
    # a fatal SXid needs the switch and its GPUs reset, i.e. the node out of service).
    CategoryPolicy("nvswitch_fault", ("nvswitch", "node"),
                   frozenset({"nvlink_degradation", "gpu_straggler", "collective_hang"}),
                   ("drain_node", "reschedule_job", "open_ticket"), Confidence(0.9, 0.6)),
    CategoryPolicy("oom", ("job",), frozenset(), ("notify",), Confidence(0.9, 0.9), never_folded=True),
    CategoryPolicy("nic_down", ("nic",), frozenset({"collective_hang"}), ("drain_node", "reschedule_job"),
                   Confidence(0.85, 0.85)),
    CategoryPolicy("optical_degradation", ("switch_port", "nic"), _NETWORK_SYMPTOMS, ("open_ticket",),
                   Confidence(0.8, 0.5)),
    CategoryPolicy("switch_port_errors", ("switch_port",), _NETWORK_SYMPTOMS, ("open_ticket", "reschedule_job"),
                   Confidence(0.85, 0.5)),
    CategoryPolicy("gpu_thermal", ("gpu",), frozenset({"gpu_straggler"}), ("mark_degraded", "open_ticket"),
                   Confidence(0.85, 0.7)),
    CategoryPolicy("nvlink_degradation", ("gpu",), frozenset({"gpu_straggler"}), ("mark_degraded", "open_ticket"),
                   Confidence(0.9, 0.75)),
    CategoryPolicy("storage_slow", ("storage",), frozenset(), ("open_ticket", "notify"), Confidence(0.85, 0.6)),
    CategoryPolicy("gpu_memory_degradation", ("gpu",), frozenset(), ("mark_degraded", "open_ticket"),
                   Confidence(0.8, 0.6)),
    CategoryPolicy("gpu_straggler", ("gpu",), frozenset(), ("mark_degraded", "reschedule_job"),
                   Confidence(0.95, 0.5, cap=0.95)),
    CategoryPolicy("collective_hang", ("job",), frozenset(), ("reschedule_job", "notify"), Confidence(0.8, 0.8)),
)

POLICIES: Mapping[str, CategoryPolicy] = MappingProxyType({p.name: p for p in _TABLE})
CATEGORY_ORDER: tuple[str, ...] = tuple(p.name for p in _TABLE)
"""Most specific first: when two categories land on one entity, the earlier names the fault."""
CATEGORIES: tuple[str, ...] = (
    "gpu_memory_degradation", "gpu_memory_failure", "gpu_lost", "gpu_thermal", "pcie_riser",
    "gpu_straggler", "nvlink_degradation", "nvswitch_fault", "switch_port_errors", "optical_degradation",
    "nic_down", "storage_slow", "collective_hang", "oom",
)
"""The categories in the order of spec/diagnosis.md's taxonomy table."""

_RANK = {name: len(CATEGORY_ORDER) - i for i, name in enumerate(CATEGORY_ORDER)}
_NO_POLICY = CategoryPolicy("", ("",), frozenset(), ("notify",), Confidence(0.5, 0.5))


def policy(category: str | None) -> CategoryPolicy:
    """The category's row; a neutral row (explains nothing, notify) for a category the table lacks
    (a rule may name its own)."""
    return POLICIES.get(category or "", _NO_POLICY)


def priority(category: str | None) -> int:
    """Higher is more specific (``CATEGORY_ORDER`` reversed); 0 for a category the table lacks."""
    return _RANK.get(category or "", 0)


def root_kind(category: str) -> str:
    """Where the simulator injects a fault of this category (the first allowed root-cause kind)."""
    return POLICIES[category].root_kind
