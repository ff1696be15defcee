"""The diagnosis as the JSON object of spec/diagnosis.md (keys may be added; these keep their meaning)."""

from __future__ import annotations

from typing import Any

from suanli.analysis.decisions import Decided, Savings, actions_json, decision_json, savings
from suanli.incidents.model import Impact, Incident, Signal
from suanli.pipeline import Diagnosis
from suanli.timefmt import to_rfc3339

__all__ = ["diagnosis_json", "economics_json", "impact_json"]

UNEXPLAINED_SHOWN = 50
"""Signals no incident explains are all counted; this many are listed."""


def diagnosis_json(diag: Diagnosis) -> dict[str, Any]:
    health, ledger = diag.results.health, diag.results.ledger
    return {
        "cluster": diag.cluster,
        "window": {"start": to_rfc3339(diag.window[0]), "end": to_rfc3339(diag.window[1])},
        "missing": diag.missing,
        "incidents": [_incident_json(i, diag.decided.get(i.id)) for i in diag.incidents],
        "predictions": health.predictions_json() if health is not None else [],
        "efficiency": ledger.efficiency_json() if ledger is not None else {"jobs": []},
        "alerts": {
            "total": sum(i.alert_count for i in diag.incidents) + len(diag.unexplained),
            "incidents": len(diag.incidents),
            "unexplained": [_signal_json(s) for s in diag.unexplained[:UNEXPLAINED_SHOWN]],
            "unexplained_count": len(diag.unexplained),
        },
        "economics": economics_json(savings((d.decision for d in diag.decided.values()), diag.currency)),
        "analysis_errors": diag.analysis_errors,
    }


def economics_json(s: Savings) -> dict[str, Any]:
    """Per incident the chosen action's saving against doing nothing, and the window's totals."""
    return {"currency": s.currency, "horizon_s": s.horizon_s, "stay_cost": s.total_stay,
            "chosen_cost": s.total_chosen, "saving": s.total_saving,
            "incidents": [{"id": r.incident_id, "category": r.category, "chosen": r.chosen, "stay_cost": r.stay_cost,
                           "chosen_cost": r.chosen_cost, "saving": r.saving} for r in s.incidents],
            "other_currencies": list(s.mixed_currencies)}


def _signal_json(s: Signal) -> dict[str, Any]:
    return {"source": s.source, "name": s.name, "kind": s.entity_kind, "id": s.entity_id,
            "start": to_rfc3339(s.start), "category": s.category, "muted_by": list(s.muted_by)}


def impact_json(imp: Impact) -> dict[str, Any]:
    return {"jobs": list(imp.jobs), "gpus": imp.gpus, "sla_ids": list(imp.sla_ids),
            "lost_gpu_hours": imp.lost_gpu_hours, "lost_cost": imp.lost_cost}


def _incident_json(inc: Incident, decided: Decided | None) -> dict[str, Any]:
    n = inc.alert_count
    planned = [{"action": a.action, "target": a.target, "status": a.status,
                **({"not_before": to_rfc3339(a.not_before)} if a.not_before is not None else {})} for a in inc.actions]
    return {
        "id": inc.id,
        "category": inc.category,
        "root_cause": {"kind": inc.root_kind, "id": inc.root_id},
        "confidence": round(inc.confidence, 3),
        "start": to_rfc3339(inc.start),
        "detected_at": to_rfc3339(inc.detected_at),
        "end": to_rfc3339(inc.end),
        "alerts": n,
        "suppressed": max(n - 1, 0),
        "muted_by_inhibition": inc.muted,
        "impact": impact_json(inc.impact),
        "evidence": inc.evidence,
        "actions": planned if decided is None else actions_json(decided.decision, decided.facts, planned),
        "decision": None if decided is None else decision_json(decided.decision, decided.superseded_by),
    }
