"""suanli's main job: every analysis, the rules, correlation and impact -> spec/diagnosis.md JSON.

Each analysis runs on its own: one that fails (an internal error) is named in
``analysis_errors`` and the others still report, so a bug in one never hides another's finding.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from suanli.analysis import fabric, health, jobs, ledger
from suanli.analysis.fabric import FabricConfig
from suanli.analysis.findings import Finding
from suanli.analysis.health import HealthConfig
from suanli.analysis.jobs import JobEventsConfig
from suanli.analysis.ledger import LedgerConfig
from suanli.analysis.window import Window
from suanli.incidents.correlate import CorrelationConfig, correlate
from suanli.incidents.impact import ImpactConfig, measure_impact
from suanli.incidents.model import Incident, Signal
from suanli.incidents.signals import alertmanager_signals, finding_signals, rule_signals
from suanli.inventory import Inventory
from suanli.rules import RulesConfig
from suanli.store.api import Store
from suanli.timefmt import to_rfc3339

__all__ = ["DiagnoseConfig", "Diagnosis", "diagnose"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DiagnoseConfig:
    """Every threshold of a diagnosis in one object (``suanli.config.Config``): each analysis's
    config with its documented defaults, the rules' evaluation settings, correlation and impact."""

    ledger: LedgerConfig = field(default_factory=LedgerConfig)
    health: HealthConfig = field(default_factory=HealthConfig)
    fabric: FabricConfig = field(default_factory=FabricConfig)
    job_events: JobEventsConfig = field(default_factory=JobEventsConfig)
    rules: RulesConfig = field(default_factory=RulesConfig)
    correlation: CorrelationConfig = field(default_factory=CorrelationConfig)
    impact: ImpactConfig = field(default_factory=ImpactConfig)
    rules_path: Path | None = None
    """Rule file; None = the shipped default pack."""
    run_rules: bool = True
    """Evaluate the rule pack (its alerts join the incidents)."""
    alert_payloads: tuple[dict[str, Any], ...] = ()
    """Alertmanager webhook payloads (version 4) to correlate with the findings and rule alerts."""


@dataclass
class Diagnosis:
    cluster: str
    window: tuple[float, float]
    missing: list[str]
    incidents: list[Incident]
    unexplained: list[Signal]
    predictions: list[dict[str, Any]]
    efficiency: dict[str, Any]
    analysis_errors: list[str] = field(default_factory=list)
    results: dict[str, Any] = field(default_factory=dict)
    timings_s: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "window": {"start": to_rfc3339(self.window[0]), "end": to_rfc3339(self.window[1])},
            "missing": self.missing,
            "incidents": [_incident_json(i) for i in self.incidents],
            "predictions": self.predictions,
            "efficiency": self.efficiency,
            "alerts": {
                "total": sum(i.alert_count for i in self.incidents) + len(self.unexplained),
                "incidents": len(self.incidents),
                "unexplained": [_signal_json(s) for s in self.unexplained[:50]],
                "unexplained_count": len(self.unexplained),
            },
            "analysis_errors": self.analysis_errors,
        }


def _signal_json(s: Signal) -> dict[str, Any]:
    return {"source": s.source, "name": s.name, "kind": s.entity_kind, "id": s.entity_id,
            "start": to_rfc3339(s.start), "category": s.category}


def _incident_json(inc: Incident) -> dict[str, Any]:
    n = inc.alert_count
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
        "impact": inc.impact,
        "evidence": inc.evidence,
        "actions": inc.actions,
    }


def _timed(name: str, fn: Callable[[], Any], errors: list[str], timings: dict[str, float]) -> Any:
    t0 = time.perf_counter()
    try:
        return fn()
    except Exception as exc:  # one analysis failing must not hide the others
        log.debug("analysis %s failed", name, exc_info=True)
        errors.append(f"{name}: {type(exc).__name__}: {exc}")
        return None
    finally:
        timings[name] = round(time.perf_counter() - t0, 3)


def _run_analyses(store: Store, inv: Inventory, window: Window, cfg: DiagnoseConfig,
                  errors: list[str], timings: dict[str, float]) -> dict[str, Any]:
    return {
        "ledger": _timed("ledger", lambda: ledger.analyze(store, inv, window, cfg.ledger), errors, timings),
        "health": _timed("health", lambda: health.analyze(store, inv, window, cfg.health), errors, timings),
        "fabric": _timed("fabric", lambda: fabric.analyze(store, inv, window, cfg.fabric), errors, timings),
        "job_events": _timed("job_events", lambda: jobs.analyze(store, inv, window, cfg.job_events),
                             errors, timings),
    }


def _analysis_values(results: dict[str, Any]) -> dict[str, dict[str, float]]:
    values: dict[str, dict[str, float]] = {}
    for res in results.values():
        getter = getattr(res, "values", None)
        if callable(getter):
            for entity, vals in getter().items():
                values.setdefault(entity, {}).update(vals)
    return values


def diagnose(store: Store, inventory: Inventory, *, window: tuple[float, float] | None = None,
             missing: list[str] | None = None, config: DiagnoseConfig = DiagnoseConfig()) -> Diagnosis:
    errors: list[str] = []
    timings: dict[str, float] = {}
    if window is None:
        window = store.time_range() or (0.0, 0.0)
    results = _run_analyses(store, inventory, Window(*window), config, errors, timings)
    findings: list[Finding] = []
    for res in results.values():
        findings.extend(getattr(res, "findings", []) or [])
    findings = [f for f in findings if f.start <= window[1] and (f.end is None or f.end >= window[0])]
    signals = finding_signals(findings)
    if config.run_rules:
        alerts = _timed("rules", lambda: rule_signals(store, inventory, _analysis_values(results), window,
                                                      config.rules_path, config.rules), errors, timings)
        signals.extend(alerts or [])
    for payload in config.alert_payloads:
        signals.extend(alertmanager_signals(payload, inventory))
    incidents, left = correlate(signals, inventory, config.correlation)
    for inc in incidents:
        inc.impact = measure_impact(inc, store, inventory, window[1], config.impact)
        inc.actions = _actions(inc)
    ledger_res = results.get("ledger")
    health_res = results.get("health")
    return Diagnosis(
        cluster=inventory.cluster, window=window, missing=list(missing or []),
        incidents=incidents, unexplained=left,
        predictions=health_res.predictions_json() if health_res is not None else [],
        efficiency=ledger_res.efficiency_json() if ledger_res is not None else {"jobs": []},
        analysis_errors=errors, results=results, timings_s=timings)


_DEFAULT_ACTIONS: dict[str, list[str]] = {
    "gpu_memory_degradation": ["mark_degraded", "open_ticket"],
    "gpu_memory_failure": ["retire_gpu", "reschedule_job"],
    "gpu_lost": ["drain_node", "reschedule_job", "open_ticket"],
    "gpu_thermal": ["mark_degraded", "open_ticket"],
    "pcie_riser": ["mark_degraded", "open_ticket", "reschedule_job"],
    "gpu_straggler": ["mark_degraded", "reschedule_job"],
    "nvlink_degradation": ["mark_degraded", "open_ticket"],
    "switch_port_errors": ["open_ticket", "reschedule_job"],
    "optical_degradation": ["open_ticket"],
    "nic_down": ["drain_node", "reschedule_job"],
    "storage_slow": ["open_ticket", "notify"],
    "collective_hang": ["reschedule_job", "notify"],
    "oom": ["notify"],
}


def _actions(inc: Incident) -> list[dict[str, Any]]:
    """The rules' planned actions of the incident's alerts; else the category's defaults. Dry run."""
    planned: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for sig in inc.signals:
        if not sig.direct or (sig.entity_id != inc.root_id and sig.category != inc.category):
            continue        # a dependant's alert: its own actions would act on the victim
        for act in sig.actions:
            key = (str(act.get("action")), str(act.get("target")))
            if key not in seen:
                seen.add(key)
                planned.append(dict(act))
    if planned:
        return planned
    jobs = [str(j) for j in inc.impact.get("jobs") or []]
    out: list[dict[str, Any]] = []
    for action in _DEFAULT_ACTIONS.get(inc.category, ["notify"]):
        if action == "reschedule_job":
            out.extend({"action": action, "target": j, "status": "dry_run"} for j in jobs)
        elif action == "drain_node" and inc.root_kind in ("gpu", "nic"):
            out.append({"action": action, "target": inc.root_id.split("/")[0], "status": "dry_run"})
        else:
            out.append({"action": action, "target": inc.root_id, "status": "dry_run"})
    return out
