"""The pipeline as an incremental step over a sliding window (what ``suanli serve`` calls).

``Pipeline.step(now)`` analyses ``[now - LiveConfig.window_s, now]`` (never reaching before the
data's first record), advances the rule evaluator on its evaluation grid up to ``now`` (its
pending / firing state carries over, exactly as in a batch run), runs inhibition, correlation,
impact, costs and actions on that pass, and folds the pass into the incident tracker, which opens,
updates, reopens and resolves incidents. Actions are decided once per alert, when it has fired, as
that step's costs say to carry them out; one the costs defer (after the next checkpoint, after a
timeout) is scheduled then and carried out at the first step that reaches its time, or cancelled if
its alert has stopped firing (rules/schedule.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from suanli.analysis.decisions import Decided
from suanli.analysis.result import EntityValues
from suanli.analysis.window import Window
from suanli.config import Config
from suanli.incidents.model import Incident, Signal
from suanli.incidents.reach import Reach
from suanli.incidents.tracker import IncidentTracker
from suanli.inventory import Inventory
from suanli.pipeline import stages
from suanli.pipeline.deliveries import Hows, deliveries
from suanli.pipeline.inputs import Inputs
from suanli.pipeline.model import Diagnosis, RuleAlerts
from suanli.rules import ActionRunner, AuditLog, EntityIndex, Evaluator, RuleSet, build_executors, load_rules
from suanli.rules.audit import default_audit_path
from suanli.store.api import Store

__all__ = ["Pipeline", "Step"]


@dataclass(frozen=True)
class Step:
    """One step: this pass's diagnosis, and what it changed in the tracked incidents."""

    now: float
    diagnosis: Diagnosis
    changes: list[tuple[str, Incident]]
    """``(opened | updated | reopened | resolved, incident)``."""


def _runner(rs: RuleSet, index: EntityIndex, mode: str, audit_path: Path | None) -> ActionRunner:
    if mode == "dry_run":
        return ActionRunner.from_ruleset(rs, index, dry_run=True, audit_path=audit_path)
    audit = AuditLog(audit_path if audit_path is not None else default_audit_path(rs.actions.audit_log, None))
    return ActionRunner(rs.actions, index, build_executors(rs.executors), audit, None, mode)


class Pipeline:
    """The stages of :mod:`.stages` with the state that carries from one step to the next: the rule
    evaluator, the action runner (deduplication, the drain guard) and the incident tracker."""

    def __init__(self, store: Store, inventory: Inventory, config: Config | None = None,
                 inputs: Inputs | None = None, *, action_mode: str = "dry_run",
                 audit_path: Path | None = None) -> None:
        """``action_mode``: ``dry_run`` (the default: plan and audit, touch nothing), ``shadow`` or
        ``live``, whose audit log is ``audit_path`` (else the rule file's ``actions.audit_log``)."""
        self.store, self.inventory = store, inventory
        self.config = config if config is not None else Config()
        self.inputs = inputs if inputs is not None else Inputs(load_rules(None))
        self.index, self.reach = EntityIndex.from_inventory(inventory), Reach(inventory)
        rs = self.inputs.ruleset
        self.evaluator = Evaluator(rs, self.index, self.config.rules) if rs is not None else None
        self.runner = _runner(rs, self.index, action_mode, audit_path) if rs is not None else None
        self.tracker = IncidentTracker(self.config.tracker)
        self.decisions: stages.Decisions = {}
        self._decided: set[str] = set()

    def window(self, now: float) -> Window:
        extent = self.store.time_range()
        first = extent[0] if extent is not None else now
        return Window(min(max(now - self.config.live.window_s, first), now), now)

    def step(self, now: float) -> Step:
        win = self.window(now)
        results = stages.analyses(self.store, self.inventory, win, self.config)
        alerts = self._rule_alerts(win, results.values())
        sigs = stages.signals(results, alerts, self.inputs.alert_payloads, self.inventory, self.index)
        sigs = stages.inhibition(sigs, self.inputs.ruleset, self.reach)
        found = stages.correlation(sigs, self.reach, self.config.correlation)
        stages.impact(found.incidents, self.store, self.inventory, now, self.config.impact)
        stages.actions(found.incidents, {**stages.planned_actions(alerts.alerts, sigs), **self.decisions})
        changes = self.tracker.update(now, found.incidents)     # the same objects: act() sets their statuses
        errors = [*results.errors, *([alerts.error] if alerts.error else [])]
        timings = {**results.timings_s, "rules": alerts.seconds}

        def act(decided: dict[str, Decided]) -> None:
            self._decide(alerts, sigs, deliveries(found.incidents, decided), now)
            stages.actions(found.incidents, self.decisions)

        # the costed choice, the actions carried out as it says, and the history it writes (a
        # read-write store: serve's), which a later step or a read-only `diagnose --db` reads back
        decided = stages.decide_and_record(found.incidents, self.store, self.inventory, now, self.config.decisions,
                                           errors, timings, act)
        extent = self.store.time_range()
        has_data = extent is not None and win.overlaps(*extent)
        diag = Diagnosis(self.inventory.cluster, win, [], found.incidents, found.unexplained, results, errors,
                         timings, has_data, decided, self.inventory.currency)
        return Step(now, diag, changes)

    def incidents(self) -> list[Incident]:
        """Every incident tracked so far, open and resolved."""
        return self.tracker.incidents()

    def _rule_alerts(self, win: Window, values: EntityValues) -> RuleAlerts:
        """Evaluate from the next point of the evaluation grid up to ``now``; the alerts that fired
        and are still firing or resolved inside the window."""
        if self.evaluator is None:
            return RuleAlerts()
        last = self.evaluator.last_eval_s
        start = win.start if last is None else last + self.config.rules.eval_interval_s
        if start <= win.end:        # else no point of the grid is due yet: nothing to evaluate
            done = stages.rule_alerts(self.evaluator, self.store, Window(start, win.end), values)
        else:
            fired = tuple(a for a in self.evaluator.alerts() if a.fired_at is not None)
            done = RuleAlerts(fired, stages.indirect_rules(self.evaluator.ruleset))
        kept = tuple(a for a in done.alerts if a.resolved_at is None or a.resolved_at >= win.start)
        return RuleAlerts(kept, done.indirect_rules, done.error, done.seconds)

    def _decide(self, alerts: RuleAlerts, sigs: list[Signal], how: Hows, now: float) -> None:
        """Alerts firing and not muted now that the runner has not decided on yet go through it
        (once each, as ``how`` says); then the scheduled actions due at ``now``."""
        if self.runner is None:
            return
        muted = {s.ref for s in sigs if s.muted_by}
        skip = self._decided | muted
        new = [a for a in alerts.alerts if a.state == "firing" and a.key not in skip]
        for key, records in stages.action_decisions(self.runner, new, sigs, how).items():
            self.decisions.setdefault(key, []).extend(records)
        self._decided.update(a.key for a in new)
        for record in self.runner.due(alerts.alerts, now):
            self.decisions.setdefault(str(record["alert"]), []).append(record)
