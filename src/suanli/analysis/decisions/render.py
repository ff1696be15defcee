"""A decision as the diagnosis JSON holds it, and the economics view over a window's decisions.

``actions_json`` keeps every key the incident's planned actions had (``action``, ``target``,
``status``, a ticket's ``text``) and adds, in rank order, ``expected_cost``, ``horizon_s``,
``rank``, ``mode`` (immediate / after_checkpoint / after_timeout), ``delay_s``, ``scope``,
``chosen`` and, for a per-GPU drain, ``gpu``, ``uuid`` and ``pods``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from suanli.analysis.decisions.escalate import Plan, supersede
from suanli.analysis.decisions.model import Decided, Decision, IncidentFacts, RankedAction

__all__ = ["IncidentSaving", "Savings", "actions_json", "decision_json", "mark_superseded", "plan_of", "savings"]


def _c(x: float) -> float:
    return round(x, 2)


def _action(r: RankedAction, rank: int, d: Decision, facts: IncidentFacts,
            planned: Mapping[tuple[str, str], Mapping[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = dict(planned.get((r.allowed.action, r.allowed.target), {}))
    out.setdefault("action", r.allowed.action)
    out.setdefault("target", r.allowed.target)
    out.setdefault("status", "dry_run")
    out.update({"expected_cost": _c(r.expected_cost), "horizon_s": d.horizon_s, "rank": rank,
                "mode": r.best.mode, "delay_s": round(r.best.delay_s, 1), "scope": r.best.scope,
                "chosen": d.chosen is r})
    if r.best.scope == "gpu" and r.allowed.action == "drain_node":
        out.update({"gpu": facts.suspect.gpu_id, "uuid": facts.suspect.gpu_uuid, "pods": list(facts.suspect.pods)})
    return out


def actions_json(decision: Decision, facts: IncidentFacts,
                 planned: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """The incident's ``actions[]`` in rank order, each with its expected cost (module docstring)."""
    by_key = {(str(p.get("action")), str(p.get("target"))): p for p in planned}
    return [_action(r, i, decision, facts, by_key) for i, r in enumerate(decision.ranked, 1)]


def decision_json(d: Decision, superseded_by: str | None = None) -> dict[str, Any]:
    """The incident's ``decision`` object: baseline, choice, saving, the posteriors used, and the
    other incident's remediation that makes this choice unnecessary (``superseded_by``)."""
    p = d.probabilities
    return {
        "currency": d.currency, "horizon_s": d.horizon_s, "stay_cost": _c(d.stay_cost),
        "stay_rate_per_h": _c(d.stay_rate_per_h),
        "chosen": None if d.chosen is None else {"action": d.chosen.allowed.action, "target": d.chosen.allowed.target,
                                                  "mode": d.chosen.best.mode, "delay_s": round(d.chosen.best.delay_s, 1)},
        "chosen_cost": _c(d.chosen_cost), "saving": _c(d.saving),
        "probabilities": {"clear": round(p.clear, 4), "clear_mean_s": round(p.clear_mean_s, 1),
                          "escalate": round(p.escalate, 4), "reset_fix": round(p.reset_fix, 4),
                          "restart_fix": round(p.restart_fix, 4), "may_clear": p.may_clear},
        "escalation": None if d.escalation is None else {"level": d.escalation.level,
                                                         "points_at": d.escalation.points_at,
                                                         "reason": d.escalation.reason},
        "assumptions": list(d.assumptions),
        "superseded_by": superseded_by,
    }


def plan_of(d: Decision, facts: IncidentFacts) -> Plan | None:
    """The chosen remediation as a :class:`Plan`, for :func:`supersede` across incidents (None: stay)."""
    if d.chosen is None:
        return None
    a, scope = d.chosen.allowed, d.chosen.best.scope
    node = facts.suspect.nodes[0] if facts.suspect.nodes else None
    gpu = facts.suspect.gpu_id if scope == "gpu" or a.action in ("reset_gpu", "retire_gpu") else None
    return Plan(a.action, a.target, a.target if a.action == "drain_node" else node, gpu,
                "gpu" if gpu is not None else "node")


def mark_superseded(decided: Mapping[str, Decided]) -> dict[str, Decided]:
    """Across one window's incidents: a chosen remediation that a wider one of another incident
    contains (a GPU reset under a reboot of its node) is marked with what supersedes it."""
    plans = {iid: p for iid, d in decided.items() if (p := plan_of(d.decision, d.facts)) is not None}
    _, dropped = supersede(list(plans.values()))
    by = {p: f"{q.kind} {q.target}" for p, q in dropped}
    return {iid: replace(d, superseded_by=by.get(plans[iid])) if iid in plans else d
            for iid, d in decided.items()}


@dataclass(frozen=True)
class IncidentSaving:
    incident_id: str
    category: str
    chosen: str
    """``action target (mode)`` or ``stay``."""
    stay_cost: float
    chosen_cost: float
    saving: float


@dataclass(frozen=True)
class Savings:
    """The economics view: per incident the chosen action's saving against doing nothing, and the total."""

    currency: str
    horizon_s: float
    incidents: tuple[IncidentSaving, ...]
    total_stay: float
    total_chosen: float
    total_saving: float
    mixed_currencies: tuple[str, ...] = ()
    """Decisions in another currency than ``currency``: left out of the totals, named here."""


def savings(decisions: Iterable[Decision], currency: str) -> Savings:
    """Per incident and in total, in the cluster's ``currency`` (others are named, not summed)."""
    rows, other = [], []
    horizon = 0.0
    for d in decisions:
        if d.currency != currency:
            other.append(f"{d.incident_id} ({d.currency})")
            continue
        horizon = max(horizon, d.horizon_s)
        chosen = "stay" if d.chosen is None else f"{d.chosen.allowed.action} {d.chosen.allowed.target} ({d.chosen.best.mode})"
        rows.append(IncidentSaving(d.incident_id, d.category, chosen, _c(d.stay_cost), _c(d.chosen_cost), _c(d.saving)))
    return Savings(currency, horizon, tuple(rows), _c(sum(r.stay_cost for r in rows)),
                   _c(sum(r.chosen_cost for r in rows)), _c(sum(r.saving for r in rows)), tuple(other))
