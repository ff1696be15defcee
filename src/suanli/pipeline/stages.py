"""The stages of the pipeline, each a function from typed input to typed output:

analyses -> rule alerts -> (signals) -> inhibition -> correlation -> impact -> actions

Batch (:mod:`.batch`) runs them once over a window; the live pipeline (:mod:`.live`) runs them at
each step over a sliding window, keeping the rule evaluator's state and the incident tracker.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from suanli.analysis import fabric, health, jobs, ledger, nvswitch
from suanli.analysis.categories import policy
from suanli.analysis.result import EntityValues
from suanli.analysis.window import Window
from suanli.config import Config
from suanli.incidents.correlate import CorrelationConfig, correlate
from suanli.incidents.impact import ImpactConfig, measure_impact
from suanli.incidents.inhibit import inhibit
from suanli.incidents.model import ActionDecision, Incident, Signal
from suanli.incidents.reach import Reach
from suanli.incidents.signals import alertmanager_signals, finding_signals, signals_from_alerts
from suanli.inventory import Inventory
from suanli.pipeline.model import AnalysisResults, Correlated, RuleAlerts
from suanli.rules import ActionRunner, Alert, EntityIndex, Evaluator, RuleSet
from suanli.store.api import Store

__all__ = ["Decisions", "action_decisions", "actions", "analyses", "correlation", "impact", "indirect_rules",
           "inhibition", "rule_alerts", "signals"]

log = logging.getLogger(__name__)
T = TypeVar("T")
Decisions = dict[str, list[dict[str, Any]]]
"""The action runner's audit records per rule alert key."""


def _timed(name: str, fn: Callable[[], T], errors: list[str], timings: dict[str, float]) -> T | None:
    """Run one part; an internal error is named in ``errors`` and must not hide the others."""
    t0 = time.perf_counter()
    try:
        return fn()
    except Exception as exc:
        log.debug("%s failed", name, exc_info=True)
        errors.append(f"{name}: {type(exc).__name__}: {exc}")
        return None
    finally:
        timings[name] = round(time.perf_counter() - t0, 3)


def analyses(store: Store, inventory: Inventory, window: Window, config: Config) -> AnalysisResults:
    """Every analysis over the window, each on its own (one that raises is named in ``errors``)."""
    errors: list[str] = []
    timings: dict[str, float] = {}
    return AnalysisResults(
        ledger=_timed("ledger", lambda: ledger.analyze(store, inventory, window, config.ledger), errors, timings),
        health=_timed("health", lambda: health.analyze(store, inventory, window, config.health), errors, timings),
        fabric=_timed("fabric", lambda: fabric.analyze(store, inventory, window, config.fabric), errors, timings),
        job_events=_timed("job_events", lambda: jobs.analyze(store, inventory, window, config.job_events),
                          errors, timings),
        nvswitch=_timed("nvswitch", lambda: nvswitch.analyze(store, inventory, window, config.nvswitch),
                        errors, timings),
        errors=tuple(errors), timings_s=timings)


def indirect_rules(ruleset: RuleSet) -> frozenset[str]:
    """Rules that only read analysis outputs: their alerts restate an analysis, never seed an incident."""
    return frozenset(r.name for r in ruleset.rules if all(c.kind == "analysis" for c in r.conditions))


def rule_alerts(evaluator: Evaluator, store: Store, window: Window, values: EntityValues) -> RuleAlerts:
    """Advance the evaluator over ``window`` (every evaluation interval; its state carries over
    between calls) and return every alert that fired so far, by firing time."""
    errors: list[str] = []
    timings: dict[str, float] = {}
    done = _timed("rules", lambda: evaluator.run(store, window.start, window.end, values), errors, timings)
    fired = sorted((a for a in done or [] if a.fired_at is not None), key=lambda a: (a.fired_at or 0.0, a.key))
    return RuleAlerts(tuple(fired), indirect_rules(evaluator.ruleset), errors[0] if errors else None,
                      timings["rules"])


def signals(results: AnalysisResults, alerts: RuleAlerts, payloads: Sequence[Mapping[str, Any]],
            inventory: Inventory, index: EntityIndex) -> list[Signal]:
    """Findings, rule alerts and Alertmanager webhooks as signals, each with its labels."""
    out = finding_signals(results.findings(), index.labels)
    out.extend(signals_from_alerts(alerts.alerts, alerts.indirect_rules))
    for payload in payloads:
        out.extend(alertmanager_signals(payload, inventory))
    return out


def inhibition(sigs: Sequence[Signal], ruleset: RuleSet | None, reach: Reach) -> list[Signal]:
    """The rule pack's inhibit rules over every signal; muted ones say who muted them."""
    return inhibit(sigs, ruleset.inhibit_rules if ruleset else (), reach.downstream)


def correlation(sigs: Iterable[Signal], reach: Reach, config: CorrelationConfig) -> Correlated:
    incidents, left = correlate(sigs, reach, config)
    return Correlated(incidents, left)


def impact(incidents: list[Incident], store: Store, inventory: Inventory, window_end: float,
           config: ImpactConfig) -> list[Incident]:
    """Each incident's jobs, SLAs, GPUs and lost GPU-hours (set on the incident)."""
    for inc in incidents:
        inc.impact = measure_impact(inc, store, inventory, window_end, config)
    return incidents


def action_decisions(runner: ActionRunner, alerts: Iterable[Alert], sigs: Iterable[Signal]) -> Decisions:
    """The rules' planned actions of the alerts no inhibit rule muted, through the action runner
    (dry run in ``diagnose``: the guard's and the deduplication's decisions become each action's
    status), in firing order."""
    muted = {s.ref for s in sigs if s.source == "rule" and s.muted_by}
    out: Decisions = {}
    for record in runner.handle([a for a in alerts if a.key not in muted]):
        out.setdefault(str(record["alert"]), []).append(record)
    return out


def actions(incidents: list[Incident], decisions: Mapping[str, list[dict[str, Any]]]) -> list[Incident]:
    """Each incident's actions: the decided actions of its own rule alerts, else the category's
    defaults (dry run)."""
    for inc in incidents:
        inc.actions = _planned(inc, decisions) or _defaults(inc)
    return incidents


def _planned(inc: Incident, decisions: Mapping[str, list[dict[str, Any]]]) -> list[ActionDecision]:
    out: list[ActionDecision] = []
    seen: set[tuple[str, str]] = set()
    for sig in inc.signals:
        if sig.source != "rule" or not sig.direct or (sig.entity_id != inc.root_id and sig.category != inc.category):
            continue        # a dependant's alert: its own actions would act on the victim
        for record in decisions.get(sig.ref, []):
            key = (str(record["action"]), str(record["target"]))
            if key not in seen:
                seen.add(key)
                out.append(ActionDecision(key[0], key[1], str(record["decision"])))
    return out


def _defaults(inc: Incident) -> list[ActionDecision]:
    out: list[ActionDecision] = []
    for action in policy(inc.category).default_actions:
        if action == "reschedule_job":
            out.extend(ActionDecision(action, j, "dry_run") for j in inc.impact.jobs)
        elif action == "drain_node" and inc.root_kind in ("gpu", "nic", "nvswitch"):
            out.append(ActionDecision(action, inc.root_id.split("/")[0], "dry_run"))
        else:
            out.append(ActionDecision(action, inc.root_id, "dry_run"))
    return out
