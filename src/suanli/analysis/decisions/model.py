"""Typed input and output of the decision engine. Any input may be None (unknown): the engine
falls back to a documented default (``DecisionConfig``) and says so in ``Decision.assumptions``.

Where each input comes from is in docs/decisions.md ("Inputs").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from suanli.store.history import NO_HISTORY, History

__all__ = ["AllowedAction", "Capacity", "Decided", "Decision", "Escalation", "IncidentFacts", "JobFacts", "Option",
           "Probabilities", "RankedAction", "Suspect"]


@dataclass(frozen=True)
class JobFacts:
    """One job an action touches: behind the fault (``degraded``), or sharing the suspect node."""

    job_id: str
    gpus: int | None = None
    gpu_hour_price: float | None = None
    healthy_step_s: float | None = None
    """Median step before the onset (the job's own healthy pace)."""
    current_step_s: float | None = None
    """Median of the recent steps since the onset."""
    stalled: bool = False
    """No step finished for ``stall_steps`` healthy steps before now (hung, crashed, dead)."""
    progress_since_checkpoint_s: float | None = None
    """Work since the last checkpoint, in healthy seconds (steps since it × healthy step)."""
    checkpoint_interval_s: float | None = None
    """Work between checkpoints, in healthy seconds (steps between saves × healthy step)."""
    restart_s: float | None = None
    """Observed process start to first step (init + checkpoint load)."""
    elastic: bool | None = None
    gpus_on_suspect: int | None = None
    """Its GPUs on the suspect node(s): what restarting without them needs from the spares."""
    degraded: bool = True
    """False for a job only sharing the node: not slowed, but a node drain evicts it."""
    gpus_in_suspect_pods: int | None = None
    """Its GPUs in the pods that hold the suspect GPU: a per-GPU drain moves them all (a pod of 8
    GPUs needs 8 spares). None: unknown, counted as one (a pod per GPU)."""


@dataclass(frozen=True)
class Suspect:
    """Where the fault is, as far as an action can exclude it."""

    gpu_id: str | None = None
    gpu_uuid: str | None = None
    pods: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()
    """Nodes an exclusion leaves out: the GPU's or NIC's node, the nodes behind a switch port."""
    node_gpus: int | None = None
    """GPUs per suspect node."""


@dataclass(frozen=True)
class Capacity:
    spare_gpus: int | None = None
    """Free GPUs a replacement can use (on nodes no job uses)."""
    spare_nodes: int | None = None


@dataclass(frozen=True)
class AllowedAction:
    """One action the rule pack (or the category's defaults) allows, as ``actions[]`` holds it."""

    action: str
    target: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class IncidentFacts:
    incident_id: str
    category: str
    root_kind: str
    root_id: str
    onset_s: float
    now_s: float
    allowed: tuple[AllowedAction, ...]
    jobs: tuple[JobFacts, ...] = ()
    suspect: Suspect = Suspect()
    capacity: Capacity = Capacity()
    code: str | None = None
    """What the hardware reported (``xid:48``), when it did."""
    code_asks_reset: bool = False
    """The code's recommended action is a GPU reset or a reboot (NVIDIA's Xid catalogue)."""
    currency: str | None = None
    history: History = NO_HISTORY


@dataclass(frozen=True)
class Probabilities:
    """The posteriors the costs used, each from a Beta prior and the cluster's own history."""

    clear: float
    """P(clears by itself), given it has lasted this long already."""
    clear_mean_s: float
    escalate: float
    reset_fix: float
    restart_fix: float
    may_clear: bool
    """Whether the stopping rule decides when to act."""
    lines: tuple[str, ...] = ()


@dataclass(frozen=True)
class Escalation:
    level: str
    """``retire`` (the same GPU keeps failing) or ``inspect`` (resets do not help)."""
    points_at: str
    """``gpu`` or ``software``."""
    reason: str
    prefer: tuple[str, ...]
    """Actions that carry it out, most direct first."""


@dataclass(frozen=True)
class Option:
    """One way of taking an action: when, on what scope, and what it is expected to cost."""

    mode: str
    """``immediate``, ``after_checkpoint`` or ``after_timeout``."""
    delay_s: float
    scope: str
    """``gpu``, ``node``, ``job`` or ``none`` (the action changes nothing for the running jobs)."""
    expected_cost: float
    one_time_cost: float
    rate_after_per_h: float
    reasoning: str


@dataclass(frozen=True)
class RankedAction:
    allowed: AllowedAction
    best: Option
    options: tuple[Option, ...]
    escalated: bool = False

    @property
    def expected_cost(self) -> float:
        return self.best.expected_cost


@dataclass(frozen=True)
class Decision:
    incident_id: str
    category: str
    currency: str
    horizon_s: float
    stay_cost: float
    stay_rate_per_h: float
    ranked: tuple[RankedAction, ...]
    chosen: RankedAction | None
    """The cheapest action if it beats staying (or the escalation's); None: stay."""
    probabilities: Probabilities
    escalation: Escalation | None
    evidence: tuple[str, ...]
    assumptions: tuple[str, ...]

    @property
    def chosen_cost(self) -> float:
        return self.chosen.expected_cost if self.chosen is not None else self.stay_cost

    @property
    def saving(self) -> float:
        """What the chosen action is expected to save against doing nothing: zero when staying is
        chosen, negative only when an escalation chose an action dearer than staying."""
        return self.stay_cost - self.chosen_cost


@dataclass(frozen=True)
class Decided:
    """One incident's decision with the input it was made from, and the wider remediation of
    another incident that makes its choice unnecessary (``reboot_node node-003``), if any."""

    decision: Decision
    facts: IncidentFacts
    superseded_by: str | None = None
