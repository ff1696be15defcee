"""Carrying out the actions firing alerts plan, safely, with every decision audited.

A runner works in one of three modes (``ActionsConfig.mode``): ``dry_run`` (the default: touch
nothing, not even a token or ``sinfo``), ``shadow`` (everything a live run does, credentials and
cluster state included, except the change itself: the record says exactly what would have been
sent) and ``live``. For each firing alert and each of its planned actions, in order:

1. ``refused``: the target is not an id of its kind (spec/inventory.md; a node may be a Slurm
   hostlist, which counts as every node it names); ``failed``: the executor cannot do this action
   (in a dry run the decision stays ``dry_run``, its detail saying that a live run would fail and why);
2. ``breaker_open``: the circuit breaker is open (guard.py) and the action has an effect;
3. ``not_replayed``: the breaker was reset after the alert fired (nothing stale runs after a reset);
4. ``skipped_duplicate``: the same action on the same target within ``dedup_window_s``, or a GPU
   reset within it of a node reboot of that GPU's node (the reboot resets it too);
5. ``breaker_open`` (tripping it): the request would take out more of the fleet within the
   breaker window than the breaker allows;
6. ``blocked_by_guard``: it would leave too many nodes, or too many of one job's nodes, out of
   service at once (the cluster's own state where the executor can read it);
7. ``rate_limited``: ``rate_limit_count`` actions within ``rate_limit_window_s``;
8. ``dry_run``, ``shadow``, or live: an ``executing`` record (fsync'd before the executor runs),
   then ``executed`` or ``failed``.

An action the cost decision defers (``PlannedAction.how``, given to :meth:`ActionRunner.handle` as
``how``) is ``scheduled`` after step 1 (``skipped_duplicate`` if the same action on the same target
is already scheduled or done), and goes through steps 2 to 8 when :meth:`ActionRunner.due` finds
it due, or is ``cancelled`` if its alert no longer fires (schedule.py).

Every decision is appended to the audit log (audit.py). Live and shadow runners need a file and
start from it, so dedup, rate limit, the guard's count and an open breaker survive a restart; a dry
run starts from nothing each time (it plans, it is not a history).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from suanli.errors import InputError
from suanli.rules.action_config import ActionsConfig
from suanli.rules.alerts import Alert, Delivery, PlannedAction
from suanli.rules.audit import AuditLog, default_audit_path
from suanli.rules.effects import NO_EFFECT, Effect, check_target, nominal_effect
from suanli.rules.entities import EntityIndex
from suanli.rules.executors import ActionFailed, Executor, build_executors
from suanli.rules.guard import HOLDING, Guard, reset_record
from suanli.rules.language import RuleSet
from suanli.rules.schedule import Pending, Schedule, scheduled_fields
from suanli.timefmt import to_rfc3339

__all__ = ["DECISIONS", "ActionRunner", "AuditLog"]

DECISIONS: tuple[str, ...] = ("executed", "executing", "dry_run", "shadow", "scheduled", "cancelled",
                              "skipped_duplicate", "refused", "blocked_by_guard", "breaker_open", "not_replayed",
                              "rate_limited", "failed")
Hows = Mapping[tuple[str, str, str], Delivery]
"""How to carry out planned actions, by (alert key, action, target)."""
MODES: tuple[str, ...] = ("dry_run", "shadow", "live")


class _Throttle:
    """Dedup and rate limit, folded from the same audit records as the guard."""

    def __init__(self, config: ActionsConfig, gpu_node: Mapping[str, str]) -> None:
        self.config = config
        self.gpu_node = gpu_node
        self.last: dict[tuple[str, str], float] = {}
        self.decided_at: list[float] = []

    def observe(self, rec: dict[str, Any]) -> None:
        t, key = rec.get("ts"), (str(rec.get("action")), str(rec.get("target")))
        if rec.get("event") != "decision" or not isinstance(t, int | float):
            return
        if rec.get("decision") in HOLDING:
            self.last[key] = float(t)
            self.decided_at.append(float(t))
        elif rec.get("decision") == "failed" and rec.get("ref"):
            self.last.pop(key, None)  # a failed action may be tried again

    def duplicate(self, key: tuple[str, str], t: float) -> str | None:
        last = self.last.get(key)
        if last is not None and t - last < self.config.dedup_window_s:
            return f"same action decided at {to_rfc3339(last)}"
        node = self.gpu_node.get(key[1]) if key[0] == "reset_gpu" else None
        last = self.last.get(("reboot_node", node)) if node is not None else None
        if last is not None and t - last < self.config.dedup_window_s:
            return f"superseded: reboot_node {node} decided at {to_rfc3339(last)} resets this GPU too"
        return None

    def limited(self, t: float) -> str | None:
        w = self.config.rate_limit_window_s
        self.decided_at = [x for x in self.decided_at if t - x < w]
        if len(self.decided_at) >= self.config.rate_limit_count:
            return f"{len(self.decided_at)} actions in the last {w:.0f} s"
        return None


class _ClusterView:
    """Out-of-service nodes for one ``handle`` call: read once from the executors that can
    (never in a dry run), plus what this call took out since."""

    def __init__(self, runner: ActionRunner) -> None:
        self.runner = runner
        self.read: set[str] | None = None
        self.source = ""
        self.taken: set[str] = set()
        self._done = False

    def out_now(self) -> tuple[set[str], str]:
        r = self.runner
        if not self._done:
            self._done = True
            if r.mode != "dry_run":
                self._lookup()
        if self.read is None:
            return set(r.guard.drained) | self.taken, "as suanli recorded them"
        return (self.read & r.guard.nodes) | self.taken, self.source

    def _lookup(self) -> None:
        seen: set[int] = set()
        for ex in self.runner.executors.values():
            if id(ex) in seen:
                continue
            seen.add(id(ex))
            found = ex.out_of_service()  # ActionFailed: the guard cannot see the cluster
            if found is not None:
                self.read = (self.read or set()) | found
                self.source = f"as {type(ex).__name__.removesuffix('Executor').lower()} reports them"


class ActionRunner:
    """Decides and (in live mode) executes planned actions; see the module docstring."""

    def __init__(self, config: ActionsConfig, index: EntityIndex, executors: dict[str, Executor] | None = None,
                 audit: AuditLog | None = None, clock: Callable[[], float] | None = None,
                 mode: str | None = None) -> None:
        self.config, self.index = config, index
        self.mode = mode or config.mode
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        self.executors = executors or {}
        self.audit = audit if audit is not None else AuditLog(default_audit_path(config.audit_log, None))
        self.clock = clock if clock is not None or self.mode == "dry_run" else time.time
        self._node_gpus: dict[str, list[str]] = {}
        for g, n in index.gpu_node.items():
            self._node_gpus.setdefault(n, []).append(g)
        job_nodes = {j: {index.gpu_node[g] for g in gs if g in index.gpu_node} for j, gs in index.job_gpus.items()}
        self.guard = Guard(config, index.nodes, job_nodes)
        self.throttle = _Throttle(config, index.gpu_node)
        self.schedule = Schedule()
        if self.mode != "dry_run":
            if self.audit.path is None:
                raise InputError(f"{self.mode} actions need an audit log file: set actions.audit_log in the "
                                 "rule file or give a database (<db>.audit.jsonl)")
            self.audit.check_writable()
            for ex in self.executors.values():
                ex.prepare()
            self._absorb(self.audit.poll())

    @classmethod
    def from_ruleset(cls, ruleset: RuleSet, index: EntityIndex, dry_run: bool | None = None,
                     clock: Callable[[], float] | None = None, *, db: Path | str | None = None,
                     audit_path: Path | str | None = None) -> ActionRunner:
        """A runner for a rule file. ``dry_run=True`` forces a dry run (diagnose); the audit log
        is ``audit_path``, else the rule file's ``actions.audit_log``, else ``<db>.audit.jsonl``."""
        cfg = ruleset.actions
        mode = cfg.mode
        if dry_run is True:
            mode = "dry_run"
        elif dry_run is False:
            mode = "shadow" if cfg.shadow else "live"
        path = Path(audit_path) if audit_path is not None else default_audit_path(cfg.audit_log, db)
        return cls(cfg, index, build_executors(ruleset.executors), AuditLog(path), clock, mode)

    @property
    def drained(self) -> set[str]:
        return self.guard.drained

    def _absorb(self, records: Iterable[dict[str, Any]]) -> None:
        for rec in records:
            if rec.get("mode") == self.mode:
                self.guard.observe(rec)
                self.throttle.observe(rec)
                self.schedule.observe(rec)

    def _append(self, record: dict[str, Any]) -> dict[str, Any]:
        rec = self.audit.append({"mode": self.mode, **record}, sync=self.mode != "dry_run")
        self._absorb([rec])
        return rec

    def release_node(self, node: str, now: float | None = None) -> None:
        """A node suanli took out is back in service: it no longer counts against the guard."""
        t = self._now(now, None)
        self._append({"event": "release", "target": node, "ts": t, "time": to_rfc3339(t)})

    def reset_breaker(self, confirm: str, by: str, reason: str, now: float | None = None) -> dict[str, Any]:
        """A person closes this runner's open breaker (``confirm``: the trip id); see guard.reset_breaker."""
        trips = {self.mode: self.guard.trip} if self.guard.trip else {}
        return self._append(reset_record(trips, confirm, by, reason, self._now(now, None)))

    def _now(self, now: float | None, alert: Alert | None) -> float:
        for t in (now, self.clock() if self.clock else None, alert.fired_at if alert else None):
            if isinstance(t, int | float) and math.isfinite(t):
                return float(t)
        return time.time()

    def handle(self, alerts: Iterable[Alert], now: float | None = None, how: Hows | None = None) -> list[dict[str, Any]]:
        """Decide every planned action of the firing alerts, each carried out as ``how`` says for
        (alert key, action, target) (else now, on its target); returns the final audit record of each."""
        if self.mode != "dry_run":
            self._absorb(self.audit.poll())  # a person's reset, a predecessor's decisions
        view = _ClusterView(self)
        out = []
        for alert in alerts:
            if alert.state != "firing":
                continue
            t = self._now(now, alert)
            for action in alert.actions:
                d = (how or {}).get((alert.key, action.action, action.target))
                out.append(self._decide(alert, replace(action, how=d) if d is not None else action, t, view))
        if self.mode == "dry_run" and out:
            self.audit.sync()
        return out

    def due(self, alerts: Iterable[Alert], now: float | None = None) -> list[dict[str, Any]]:
        """Carry out the scheduled actions due at ``now`` whose alert (among ``alerts``) still fires;
        cancel those whose alert does not. Returns the final audit record of each."""
        if self.mode != "dry_run":
            self._absorb(self.audit.poll())
        t = self._now(now, None)
        firing = {a.key: a for a in alerts if a.state == "firing"}
        view = _ClusterView(self)
        out = []
        for p in self.schedule.due(t):
            alert = firing.get(p.alert)
            if alert is None:
                out.append(self._append({"event": "decision", "time": to_rfc3339(t), "ts": t, "rule": p.rule,
                                         "alert": p.alert, "action": p.action.action, "target": p.action.target,
                                         "target_kind": p.action.target_kind, "effect": NO_EFFECT.to_json(),
                                         "decision": "cancelled", "schedule_ref": p.id,
                                         "detail": f"alert {p.alert} no longer fires: the fault cleared before "
                                                   f"{to_rfc3339(p.not_before)}, so nothing is done"}))
            else:
                out.append(self._decide(alert, p.action, t, view, p))
        if self.mode == "dry_run" and out:
            self.audit.sync()
        return out

    def _effect(self, action: PlannedAction) -> Effect:
        check_target(action)
        ex = self.executors.get(action.action)
        eff = ex.effect(action) if ex is not None else nominal_effect(action)
        return eff.with_node_gpus(self._node_gpus)

    def _decide(self, alert: Alert, action: PlannedAction, t: float, view: _ClusterView,
                due: Pending | None = None) -> dict[str, Any]:
        base: dict[str, Any] = {"event": "decision", "time": to_rfc3339(t), "ts": t, "rule": alert.rule, "alert": alert.key,
                "action": action.action, "target": action.target, "target_kind": action.target_kind}
        if due is not None:
            base["schedule_ref"] = due.id
        try:
            effect = self._effect(action)
        except ValueError as e:
            return self._append({**base, "decision": "refused", "detail": str(e), "effect": NO_EFFECT.to_json()})
        except ActionFailed as e:
            return self._append({**base, **self._cannot(e), "effect": NO_EFFECT.to_json()})
        base["effect"] = effect.to_json()
        if due is None and action.how is not None and action.how.deferred:
            return self._defer(alert, action, base, t)
        decision, detail, counted = self._screen(alert, action, effect, t, view, base)
        if decision is not None:
            return self._append({**base, "decision": decision, "detail": detail, "counted": counted})
        return self._carry_out(alert, action, base, effect, view)

    def _defer(self, alert: Alert, action: PlannedAction, base: dict[str, Any], t: float) -> dict[str, Any]:
        """Schedule an action the cost decision defers (schedule.py), unless it duplicates one."""
        waiting = self.schedule.waiting(action.action, action.target)
        why = (f"same action already scheduled for {to_rfc3339(waiting.not_before)} ({waiting.id})" if waiting
               else self.throttle.duplicate((action.action, action.target), t))
        if why is not None:
            return self._append({**base, "decision": "skipped_duplicate", "detail": why, "counted": False})
        ex = self.executors.get(action.action)
        try:
            what = ex.describe(action, alert) if ex is not None else f"{action.action} {action.target} (no executor configured)"
        except ActionFailed as e:
            return self._append({**base, **self._cannot(e), "counted": False})
        extra = scheduled_fields(action, t)
        how = action.how if action.how is not None else Delivery()
        return self._append({**base, **extra, "decision": "scheduled", "counted": False,
                             "detail": f"{what}, not before {extra['not_before_time']} ({how.mode}: "
                                       f"{how.delay_s:.0f} s after the decision)"})

    def _screen(self, alert: Alert, action: PlannedAction, effect: Effect, t: float, view: _ClusterView,
                base: dict[str, Any]) -> tuple[str | None, str, bool]:
        """The first check that stops the action: (decision, detail, counted by the breaker)."""
        g = self.guard
        if effect and (why := g.open_detail()) is not None:
            return "breaker_open", why, False
        fired = alert.fired_at if alert.fired_at is not None else t
        if effect and g.reset_at is not None and fired < g.reset_at:
            return "not_replayed", (f"alert fired at {to_rfc3339(fired)}, before the breaker was reset at "
                                    f"{to_rfc3339(g.reset_at)}"), False
        if (why := self.throttle.duplicate((action.action, action.target), t)) is not None:
            return "skipped_duplicate", why, False
        if effect and (why := g.breaker_check(effect, t)) is not None:
            trip = self._append(g.trip_record(self.mode, why, t, base))
            return "breaker_open", f"tripped the circuit breaker (trip {trip['trip_id']}): {why}", True
        if effect.nodes:
            try:
                out_now, source = view.out_now()
            except ActionFailed as e:
                return "blocked_by_guard", f"cannot see the cluster's state, so nothing is taken out: {e}", True
            if (why := g.state_check(effect, out_now, source)) is not None:
                return "blocked_by_guard", why, True
        if (why := self.throttle.limited(t)) is not None:
            return "rate_limited", why, True
        return None, "", True

    def _cannot(self, e: ActionFailed) -> dict[str, str]:
        """An action the executor could not do: ``failed`` when acting; in a dry run the decision stays
        ``dry_run`` (nothing was attempted) and the detail says that a live run would fail, and why."""
        if self.mode == "dry_run":
            return {"decision": "dry_run", "detail": f"a live run would fail: {e}"}
        return {"decision": "failed", "detail": str(e)}

    def _carry_out(self, alert: Alert, action: PlannedAction, base: dict[str, Any], effect: Effect,
                   view: _ClusterView) -> dict[str, Any]:
        ex = self.executors.get(action.action)
        if ex is None and self.mode != "dry_run":
            return self._append({**base, "decision": "failed", "counted": True,
                                 "detail": f"no executor configured for {action.action}"})
        try:
            what = ex.describe(action, alert) if ex is not None else \
                f"{action.action} {action.target} (no executor configured: a live run would fail)"
        except ActionFailed as e:
            return self._append({**base, **self._cannot(e), "counted": True})
        view.taken |= effect.nodes
        if self.mode != "live" or ex is None:
            return self._append({**base, "decision": self.mode, "detail": f"would {what}", "counted": True})
        intent = self._append({**base, "decision": "executing", "detail": what, "counted": True})
        try:
            decision, detail = "executed", ex.execute(action, alert)
        except ActionFailed as e:
            decision, detail = "failed", str(e)
            view.taken -= effect.nodes
        return self._append({**base, "decision": decision, "detail": detail, "ref": intent["id"]})
