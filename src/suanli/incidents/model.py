"""Alerts and findings in one model (:class:`Signal`), and the :class:`Incident` they make."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from suanli.analysis.findings import Finding


@dataclass(frozen=True)
class Signal:
    """One thing that went off, anchored to a canonical entity.

    ``source`` is ``finding`` (an analysis found a fault there, with direct evidence), ``rule``
    (a rule's alert fired), ``alertmanager`` (an alert posted by an Alertmanager webhook) or
    ``symptom`` (where a finding's fault shows on a dependant). ``direct`` says whether the signal
    is evidence about its own entity (a hot GPU) rather than about what it waits on (a slow rank).
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
    actions: tuple[dict[str, Any], ...] = ()
    finding: Finding | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.source, self.name, self.entity_id)


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
    impact: dict[str, Any] = field(default_factory=dict)
    actions: list[dict[str, Any]] = field(default_factory=list)
    state: str = "open"
    symptom_ids: set[str] = field(default_factory=set)
    """Entities the incident's findings name as where their fault shows."""

    @property
    def id(self) -> str:
        digest = hashlib.sha1(f"{self.category}|{self.root_id}|{round(self.start)}".encode()).hexdigest()
        return f"inc-{digest[:6]}"

    @property
    def muted(self) -> int:
        """Alerts of this incident an inhibit rule muted (counted, never lost)."""
        return sum(1 for s in self.signals if ("muted", "true") in s.labels)

    @property
    def alert_count(self) -> int:
        """Distinct (name, entity) alerts this incident stands for, its own finding included."""
        return len({(s.name, s.entity_id) for s in self.signals})
