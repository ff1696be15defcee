"""Alerts and findings in one model (:class:`Signal`), the :class:`Incident` they make, its
:class:`Impact` and its :class:`ActionDecision`s."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from suanli.analysis.findings import Finding


@dataclass(frozen=True)
class Signal:
    """One thing that went off, anchored to a canonical entity.

    ``source`` is ``finding`` (an analysis found a fault there, with direct evidence), ``rule``
    (a rule's alert fired), ``alertmanager`` (an alert posted by an Alertmanager webhook) or
    ``symptom`` (where a finding's fault shows on a dependant). ``direct`` says whether the signal
    is evidence about its own entity (a hot GPU) rather than about what it waits on (a slow rank).
    ``ref`` names what it stands for (a rule alert's key, a finding, an Alertmanager fingerprint);
    ``state`` is Alertmanager's (``firing`` or ``resolved``); ``muted_by`` holds the refs of the
    signals whose inhibit rules muted it (empty: not muted); ``job_wide`` names the job when the
    same alert fired on most of that job's parts at once.
    """

    source: str
    name: str
    entity_kind: str
    entity_id: str
    start: float
    end: float | None = None
    detected_at: float | None = None
    category: str | None = None
    confidence: float = 0.5
    evidence: tuple[str, ...] = ()
    labels: tuple[tuple[str, str], ...] = ()
    direct: bool = True
    finding: Finding | None = None
    ref: str = ""
    state: str = "firing"
    muted_by: tuple[str, ...] = ()
    job_wide: str | None = None
    """The job on most of whose parts the same alert fired together (:mod:`.jobwide`): a symptom
    of that job's trouble, not direct evidence about this part; None otherwise."""


@dataclass(frozen=True)
class Impact:
    """What an incident cost: the jobs, GPUs and SLAs behind its root and the GPU-hours it lost
    (None where the jobs' healthy pace is unknown)."""

    jobs: tuple[str, ...] = ()
    gpus: int = 0
    sla_ids: tuple[str, ...] = ()
    lost_gpu_hours: float | None = None
    lost_cost: float | None = None


@dataclass(frozen=True)
class ActionDecision:
    """One action on one target and what became of it (``dry_run``, ``blocked_by_guard`` ...;
    ``scheduled`` with the time it is due, ``not_before``)."""

    action: str
    target: str
    status: str
    not_before: float | None = None


@dataclass
class Incident:
    """One fault: where it is, what it is, what went off because of it, what it cost."""

    category: str
    root_kind: str
    root_id: str
    confidence: float
    start: float
    detected_at: float | None
    end: float | None
    signals: list[Signal] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    impact: Impact = field(default_factory=Impact)
    actions: list[ActionDecision] = field(default_factory=list)
    state: str = "open"
    symptom_ids: set[str] = field(default_factory=set)
    """Entities the incident's findings name as where their fault shows."""
    pinned_id: str | None = None
    """The id a tracker gave this fault when it first opened (serve): a later pass that places the
    onset earlier must not make it a new incident."""

    @property
    def id(self) -> str:
        """``pinned_id``, else ``inc-`` and a digest of category, root and start (to the second)."""
        if self.pinned_id is not None:
            return self.pinned_id
        digest = hashlib.sha1(f"{self.category}|{self.root_id}|{round(self.start)}".encode()).hexdigest()
        return f"inc-{digest[:6]}"

    @property
    def muted(self) -> int:
        """Signals of this incident an inhibit rule muted (counted, never lost)."""
        return sum(1 for s in self.signals if s.muted_by)

    @property
    def alert_count(self) -> int:
        """Distinct (name, entity) alerts this incident stands for, its own finding included."""
        return len({(s.name, s.entity_id) for s in self.signals})
