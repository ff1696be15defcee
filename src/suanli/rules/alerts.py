"""Alerts the evaluator produces, with Prometheus' states, and their timeline for the incident layer.

States follow Prometheus' rule manager: ``pending`` (condition true, ``for`` not yet served),
``firing``, ``resolved`` (was firing, condition no longer true). A pending alert whose condition
stops holding is dropped (Prometheus forgets it), so it never appears as resolved.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from suanli.timefmt import to_rfc3339

__all__ = ["Alert", "PlannedAction", "alerts_timeline"]


@dataclass(frozen=True)
class PlannedAction:
    """An action a firing alert asks for, on a concrete target (a node for drain_node ...)."""

    action: str
    target_kind: str
    target: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class Alert:
    name: str                       # alert name (= rule name)
    rule: str
    scope: str
    entity_kind: str
    entity_id: str
    labels: dict[str, str]
    state: str                      # pending | firing | resolved
    active_at: float                # when it became pending
    fired_at: float | None = None
    resolved_at: float | None = None
    value: float = float("nan")     # the first condition's value at the last evaluation it held
    unit: str = ""                  # that value's unit ("°C", "errors/min"; "" for a pure number)
    severity: str = "warning"
    category: str | None = None
    actions: tuple[PlannedAction, ...] = ()
    keep_firing_since: float | None = None
    last_eval_s: float | None = None

    @property
    def key(self) -> str:
        """Unique per (rule, entity) and activation: ``rule@entity_id#active_at``."""
        return f"{self.rule}@{self.entity_id}#{self.active_at:.0f}"

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "name": self.name, "rule": self.rule, "scope": self.scope,
                "entity": {"kind": self.entity_kind, "id": self.entity_id}, "labels": dict(self.labels),
                "state": self.state, "active_at": to_rfc3339(self.active_at),
                "fired_at": to_rfc3339(self.fired_at), "resolved_at": to_rfc3339(self.resolved_at),
                "value": self.value if math.isfinite(self.value) else None, "severity": self.severity, "category": self.category,
                "actions": [{"action": a.action, "target": a.target} for a in self.actions]}


def alerts_timeline(alerts: Iterable[Alert], include_pending: bool = False,
                    muted: Mapping[str, list[str]] | None = None) -> list[dict[str, Any]]:
    """One row per alert interval, sorted by start: entity, rule, category hint, when it became
    active, fired and resolved (None while still firing), and ``muted_by`` (the source alert keys
    of ``suanli.incidents.inhibit.InhibitionResult.muted``; empty when kept), for the incident layer's correlation."""
    muted = muted or {}
    rows = []
    for a in alerts:
        if a.fired_at is None and not include_pending:
            continue
        rows.append({"key": a.key, "rule": a.rule, "entity_kind": a.entity_kind, "entity_id": a.entity_id,
                     "category": a.category, "severity": a.severity, "state": a.state,
                     "active_at": a.active_at, "fired_at": a.fired_at, "resolved_at": a.resolved_at,
                     "value": a.value, "labels": dict(a.labels), "muted_by": list(muted.get(a.key, []))})
    rows.sort(key=lambda r: (r["fired_at"] if r["fired_at"] is not None else r["active_at"], r["key"]))
    return rows
