"""The stages of the pipeline, each a function from typed input to typed output:

analyses -> rule alerts -> (signals) -> inhibition -> correlation -> impact -> costs -> actions

The costs stage prices each incident's allowed actions (docs/decisions.md), learning from the history
the store holds; the action runner then carries out the rules' planned actions as the costs say
(per-GPU or node, now or deferred: :mod:`.deliveries`), and this window's incidents and chosen
remediations, with what became of them, are written back to the store.

Batch (:mod:`.batch`) runs them once over a window; the live pipeline (:mod:`.live`) runs them at
each step over a sliding window, keeping the rule evaluator's state and the incident tracker.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import duckdb

from suanli.analysis import fabric, health, jobs, ledger, nvswitch
from suanli.analysis.categories import policy
from suanli.analysis.decisions import Decided, DecisionConfig, decide, mark_superseded
from suanli.analysis.decisions.inputs import code_of, incident_facts
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
from suanli.pipeline.deliveries import Hows, own_refs
from suanli.pipeline.model import AnalysisResults, Correlated, RuleAlerts
from suanli.rules import ActionRunner, Alert, EntityIndex, Evaluator, RuleSet
from suanli.store.api import Store
from suanli.store.duck import DuckStore
from suanli.store.history import (
    History,
    IncidentRecord,
    RemediationRecord,
    load_history,
    record_incident,
    record_remediation,
)
from suanli.store.promql import PromStore

__all__ = ["Decisions", "action_decisions", "actions", "analyses", "correlation", "costs", "decide_and_record",
           "history_connection", "impact", "indirect_rules", "inhibition", "planned_actions", "record_history",
           "rule_alerts", "signals"]

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


def _acting(alerts: Iterable[Alert], sigs: Iterable[Signal]) -> list[Alert]:
    muted = {s.ref for s in sigs if s.source == "rule" and s.muted_by}
    return [a for a in alerts if a.state == "firing" and a.key not in muted]


def planned_actions(alerts: Iterable[Alert], sigs: Iterable[Signal]) -> Decisions:
    """The planned actions of the firing alerts no inhibit rule muted, before the runner decides
    them (decision ``planned``): what the costs stage prices."""
    out: Decisions = {}
    for a in _acting(alerts, sigs):
        out[a.key] = [{"alert": a.key, "action": p.action, "target": p.target, "decision": "planned"}
                      for p in a.actions]
    return out


def action_decisions(runner: ActionRunner, alerts: Iterable[Alert], sigs: Iterable[Signal],
                     how: Hows | None = None) -> Decisions:
    """The rules' planned actions of the firing alerts no inhibit rule muted, through the action
    runner, each carried out as ``how`` says (:mod:`.deliveries`; dry run in ``diagnose``: the
    guard's and the deduplication's decisions become each action's status), in firing order."""
    out: Decisions = {}
    for record in runner.handle(_acting(alerts, sigs), how=how):
        out.setdefault(str(record["alert"]), []).append(record)
    return out


def actions(incidents: list[Incident], decisions: Mapping[str, list[dict[str, Any]]]) -> list[Incident]:
    """Each incident's actions: the decided actions of its own rule alerts, else the category's
    defaults (dry run)."""
    for inc in incidents:
        inc.actions = _planned(inc, decisions) or _defaults(inc)
    return incidents


def _planned(inc: Incident, decisions: Mapping[str, list[dict[str, Any]]]) -> list[ActionDecision]:
    """One entry per (action, target): the first alert's that plans it, with that alert's latest
    decision on it (``scheduled``, then what became of it when it was due)."""
    out: dict[tuple[str, str], ActionDecision] = {}
    for ref in own_refs(inc):
        latest: dict[tuple[str, str], ActionDecision] = {}
        for record in decisions.get(ref, []):
            key, due = (str(record["action"]), str(record["target"])), record.get("not_before")
            status = str(record["decision"])
            latest[key] = ActionDecision(*key, status, float(due) if status == "scheduled" and due is not None else None)
        for key, decided in latest.items():
            out.setdefault(key, decided)
    return list(out.values())


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


def history_connection(store: Store) -> tuple[duckdb.DuckDBPyConnection, threading.RLock] | None:
    """The DuckDB connection the history lives on (the store's own, a PromStore's secondary
    store's) and the lock that serialises it: serve's receivers write on the same connection from
    other threads, and a statement run outside the lock lands inside their open transaction."""
    if isinstance(store, DuckStore):
        return store.con, store.lock
    if isinstance(store, PromStore):
        return store.secondary.con, store.secondary.lock
    return None


def _node_of(kind: str, entity: str) -> str | None:
    return entity.split("/", 1)[0] if kind in ("gpu", "nic", "nvswitch") else entity if kind == "node" else None


def _record(inc: Incident) -> IncidentRecord:
    return IncidentRecord(inc.id, inc.root_kind, inc.root_id, inc.category, inc.start, inc.end,
                          code_of(inc.evidence)[0], _node_of(inc.root_kind, inc.root_id), tuple(inc.impact.jobs))


def _with_window(past: History, incidents: Iterable[Incident]) -> History:
    """The stored history with this window's incidents in it (their stored rows replaced): an
    earlier incident of the window is history for a later one."""
    now = {r.incident_id: r for r in map(_record, incidents)}
    kept = [r for r in past.incidents if r.incident_id not in now]
    return History(tuple(sorted([*kept, *now.values()], key=lambda r: (r.start_s, r.incident_id))),
                   past.remediations)


def _planned_json(inc: Incident) -> list[dict[str, Any]]:
    return [{"action": a.action, "target": a.target, "status": a.status} for a in inc.actions]


def costs(incidents: Sequence[Incident], store: Store, inventory: Inventory, now_s: float,
          config: DecisionConfig, past: History) -> dict[str, Decided]:
    """Each incident's allowed actions ranked by expected cost at ``now_s`` (incident id -> the
    decision and its input), learning from ``past`` and the window's own earlier incidents; a
    chosen remediation another incident's wider one contains is marked superseded."""
    hist = _with_window(past, incidents)
    out: dict[str, Decided] = {}
    for inc in incidents:
        facts = incident_facts(store, inventory, incident_id=inc.id, category=inc.category, root_kind=inc.root_kind,
                               root_id=inc.root_id, onset_s=inc.start, now_s=now_s, job_ids=inc.impact.jobs,
                               actions=_planned_json(inc), evidence=inc.evidence, history=hist, config=config)
        out[inc.id] = Decided(decide(facts, config), facts)
    return mark_superseded(out)


_TARGET_KIND = {"reschedule_job": "job", "drain_node": "node", "reboot_node": "node", "reset_gpu": "gpu",
                "retire_gpu": "gpu"}


def _remediation(inc: Incident, d: Decided, now_s: float) -> RemediationRecord | None:
    chosen = d.decision.chosen
    if chosen is None:
        return None
    a = chosen.allowed
    status = next((x.status for x in inc.actions if (x.action, x.target) == (a.action, a.target)), "dry_run")
    kind = _TARGET_KIND.get(a.action, inc.root_kind)
    return RemediationRecord(kind, a.target, a.action, now_s + chosen.best.delay_s, _node_of(kind, a.target) or
                             (d.facts.suspect.nodes[0] if d.facts.suspect.nodes else None), inc.id, inc.category,
                             d.facts.code, status == "executed")


def record_history(con: duckdb.DuckDBPyConnection, incidents: Iterable[Incident], decided: Mapping[str, Decided],
                   now_s: float) -> None:
    """Write the window's incidents (an incident seen again is updated) and each chosen remediation
    (a dry run is kept as not executed: it taught nothing about the fault) to the history tables."""
    for inc in incidents:
        record_incident(con, _record(inc))
        d = decided.get(inc.id)
        rem = _remediation(inc, d, now_s) if d is not None else None
        if rem is not None:
            record_remediation(con, rem)


def decide_and_record(incidents: Sequence[Incident], store: Store, inventory: Inventory, now_s: float,
                      config: DecisionConfig, errors: list[str], timings: dict[str, float],
                      act: Callable[[dict[str, Decided]], None] | None = None) -> dict[str, Decided]:
    """:func:`costs` over the history the store holds, then ``act`` (the action runner, which sets
    each incident's action statuses), then :func:`record_history`. A store that cannot hold the
    history (read-only) decides without it; a pricing failure is named in ``errors``."""
    db = history_connection(store)
    past = History()
    if db is not None:
        with db[1]:
            try:
                past = load_history(db[0], now_s - config.lookback_s, now_s)
            except duckdb.Error as exc:
                log.info("no history read: %s", exc)
    decided = _timed("decisions", lambda: costs(incidents, store, inventory, now_s, config, past), errors,
                     timings) or {}
    if act is not None:
        act(decided)
    if db is not None:
        _write_history(db[0], db[1], incidents, decided, now_s)
    return decided


def _write_history(con: duckdb.DuckDBPyConnection, lock: threading.RLock, incidents: Sequence[Incident],
                   decided: Mapping[str, Decided], now_s: float) -> None:
    """:func:`record_history` in one transaction of its own, under the store's lock (a failure rolls
    it back and leaves the connection clean for the next writer)."""
    with lock:
        try:
            con.execute("BEGIN TRANSACTION").fetchall()
            record_history(con, incidents, decided, now_s)
            con.execute("COMMIT").fetchall()
        except duckdb.Error as exc:
            log.info("history not written: %s", exc)
            with contextlib.suppress(duckdb.Error):         # a failed COMMIT has rolled back already
                con.execute("ROLLBACK").fetchall()
