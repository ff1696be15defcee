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

__all__ = ["DELIVERY_MODES", "Alert", "Delivery", "PlannedAction", "alerts_timeline"]

DELIVERY_MODES: tuple[str, ...] = ("immediate", "after_checkpoint", "after_timeout")


@dataclass(frozen=True)
class Delivery:
    """How and when the cost decision (docs/decisions.md) says to carry out one planned action:
    ``mode`` (immediate, after_checkpoint, after_timeout), ``delay_s`` after ``decided_at`` (the
    time the decision was made; None: when the runner decides), and ``scope`` (gpu, node, job,
    none); a per-GPU drain names the ``gpu``, its ``uuid`` and the ``pods`` on it (``name`` or
    ``namespace/name``, as the inventory's ranks write them)."""

    mode: str = "immediate"
    delay_s: float = 0.0
    scope: str = "node"
    gpu: str | None = None
    uuid: str | None = None
    pods: tuple[str, ...] = ()
    decided_at: float | None = None

    @property
    def deferred(self) -> bool:
        return self.mode != "immediate" and math.isfinite(self.delay_s) and self.delay_s > 0

    @property
    def per_gpu(self) -> bool:
        """A per-GPU scope with the GPU named (an executor may still lack the pods to do it)."""
        return self.scope == "gpu" and self.gpu is not None

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "delay_s": self.delay_s, "scope": self.scope, "gpu": self.gpu,
                "uuid": self.uuid, "pods": list(self.pods), "decided_at": self.decided_at}

    @classmethod
    def from_json(cls, data: Any) -> Delivery | None:
        """From an audit record's ``how`` (None when absent or not an object)."""
        if not isinstance(data, dict):
            return None
        pods = data.get("pods")
        return cls(str(data.get("mode", "immediate")), _opt_float(data.get("delay_s")) or 0.0,
                   str(data.get("scope", "node")), _opt_str(data.get("gpu")), _opt_str(data.get("uuid")),
                   tuple(x for x in pods if isinstance(x, str)) if isinstance(pods, list) else (),
                   _opt_float(data.get("decided_at")))


def _opt_str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _opt_float(v: Any) -> float | None:
    ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    return float(v) if ok else None


@dataclass(frozen=True)
class PlannedAction:
    """An action a firing alert asks for, on a concrete target (a node for drain_node ...), and
    how the cost decision says to carry it out (``how``; None: now, on the target as it is)."""

    action: str
    target_kind: str
    target: str
    params: dict[str, Any] = field(default_factory=dict)
    how: Delivery | None = None


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
