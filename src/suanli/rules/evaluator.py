"""The rule evaluator: Prometheus' alerting-rule state machine, vectorised over entities.

At each evaluation time ``t`` (every ``eval_interval_s``, like Prometheus' rule manager; the times
are multiples of the interval since the epoch, so an alert fires at the same instant whatever
window is asked for, as Prometheus aligns its group evaluations to absolute time):

- a condition ``c`` is *true* at t when its value satisfies the comparison (absent data or NaN:
  false); it *holds* when it has been true at every evaluation since ``t - for`` (its run of
  consecutive true evaluations started at least ``for`` ago); the rule's raw condition is
  all/any of the conditions being true, its held condition all/any of them holding;
- inactive -> pending when the raw condition becomes true (``active_at = t``);
- pending -> firing when the held condition is true (``fired_at = t``); with a single condition this
  is exactly Prometheus' ``t - active_at >= for``;
- pending and the raw condition false: the alert is dropped (Prometheus forgets it; counted in
  ``dropped_pending``), a later true starts a new pending alert;
- firing and the raw condition false: resolved at t, unless ``keep_firing_for`` keeps it firing
  until the condition has been false for that long.

A gap in the data shorter than the lookback (5 m) keeps a gauge's last value, so it neither breaks
nor extends a ``for``; a longer gap makes the series absent, which breaks it (pending dropped,
firing resolved); a NaN sample is false and breaks it. Counter rates need two samples in the
range, handle resets, and are NaN (false) when the first or last sample is NaN.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from suanli.rules.alerts import Alert, PlannedAction
from suanli.rules.condition_data import ConditionData, RulesConfig, RuleStore
from suanli.rules.conditions import value_unit
from suanli.rules.entities import EntityIndex
from suanli.rules.language import Rule, RuleSet

__all__ = ["Evaluator", "RulesConfig", "aligned_times", "evaluate_window"]

F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]


@dataclass
class _RuleState:
    rule: Rule
    entities: list[str]
    run_start: list[F64]
    active: B
    firing: B
    active_at: F64
    keep_since: F64
    current: dict[int, Alert] = field(default_factory=dict)

    @classmethod
    def new(cls, rule: Rule, entities: list[str]) -> _RuleState:
        n = len(entities)
        return cls(rule, entities, [np.full(n, np.nan) for _ in rule.conditions], np.zeros(n, bool),
                   np.zeros(n, bool), np.full(n, np.nan), np.full(n, np.nan))


def plan_actions(rule: Rule, entity: str, index: EntityIndex) -> tuple[PlannedAction, ...]:
    """Concrete targets of a rule's actions for one entity."""
    out: list[PlannedAction] = []
    for spec in rule.actions:
        if spec.name in ("drain_node", "reboot_node"):
            node = index.node_of(rule.scope, entity)
            targets = [("node", node)] if node else []
        elif spec.name == "reschedule_job":
            jobs = index.project(rule.scope, entity, None, "job") if rule.scope != "switch_port" else []
            if not jobs:
                jobs = sorted(j for j in index.dependents(entity) if j in set(index.jobs))
            targets = [("job", j) for j in jobs]
        elif spec.name in ("retire_gpu", "reset_gpu"):
            targets = [("gpu", entity)] if rule.scope == "gpu" else []
        else:
            targets = [(rule.scope, entity)]
        out.extend(PlannedAction(spec.name, k, t, dict(spec.params)) for k, t in targets)
    return tuple(out)


def aligned_times(start: float, end: float, interval_s: float) -> npt.NDArray[np.float64]:
    """The evaluation times in ``[start, end]``: the multiples of ``interval_s`` since the epoch."""
    first = np.ceil(start / interval_s - 1e-9) * interval_s
    return np.arange(first, end + 1e-9, interval_s, dtype=np.float64)


class Evaluator:
    """Evaluates a RuleSet over stored data: ``run`` (a window, batch) or ``step`` (one time, live)."""

    def __init__(self, ruleset: RuleSet, index: EntityIndex, config: RulesConfig | None = None) -> None:
        self.ruleset, self.index = ruleset, index
        self.config = config or RulesConfig()
        self.states = [_RuleState.new(r, index.held(r.scope) if r.held_only else list(index.of_scope(r.scope)))
                       for r in ruleset.rules]
        self.history: list[Alert] = []
        self.dropped_pending = 0
        self.last_eval_s: float | None = None

    def run(self, store: RuleStore, start: float, end: float,
            values: Mapping[str, Mapping[str, float]] | None = None) -> list[Alert]:
        """Evaluate every ``eval_interval_s`` from start to end; all alerts that fired (firing or
        resolved) and those still pending at the end."""
        times = aligned_times(start, end, self.config.eval_interval_s)
        data = self._data(store, start, end, values)
        last_use: dict[str, int] = {}
        for i, st in enumerate(self.states):
            for c in st.rule.conditions:
                for m in data.metrics_of(c):
                    last_use[m] = i
        for i, st in enumerate(self.states):
            mats = [data.matrix(st.rule.scope, st.entities, c, times) for c in st.rule.conditions]
            for k, t in enumerate(times):
                self._advance(st, float(t), [m[0][:, k] for m in mats], mats[0][1][:, k])
            for m in [m for m, j in last_use.items() if j == i]:
                data.drop(m)            # keep memory flat: a metric's block goes after its last rule
        self.last_eval_s = float(times[-1]) if len(times) else end
        return self.alerts()

    def step(self, now: float, store: RuleStore,
             values: Mapping[str, Mapping[str, float]] | None = None) -> list[Alert]:
        """One incremental evaluation at ``now``; returns the alerts active (pending/firing) after it
        and those resolved at it."""
        times = np.array([now], dtype=np.float64)
        data = self._data(store, now, now, values)
        changed: list[Alert] = []
        for st in self.states:
            mats = [data.matrix(st.rule.scope, st.entities, c, times) for c in st.rule.conditions]
            resolved = self._advance(st, now, [m[0][:, 0] for m in mats], mats[0][1][:, 0])
            changed.extend(resolved)
            changed.extend(st.current.values())
        self.last_eval_s = now
        return changed

    def _data(self, store: RuleStore, start: float, end: float,
              values: Mapping[str, Mapping[str, float]] | None) -> ConditionData:
        data = ConditionData(store, self.index, self.config, start, end, values)
        data.plan([c for st in self.states for c in st.rule.conditions])
        return data

    def alerts(self) -> list[Alert]:
        """Every alert that fired so far (firing or resolved), plus those pending now."""
        pending = [a for st in self.states for a in st.current.values() if a.state == "pending"]
        return [*self.history, *pending]

    def _advance(self, st: _RuleState, t: float, hits: list[B], value: F64) -> list[Alert]:
        rule = st.rule
        held_parts = []
        for c, (cond, hit) in enumerate(zip(rule.conditions, hits, strict=True)):
            rs = np.where(hit, np.where(np.isnan(st.run_start[c]), t, st.run_start[c]), np.nan)
            st.run_start[c] = rs
            with np.errstate(invalid="ignore"):
                held_parts.append(hit & (t - rs >= cond.for_s - 1e-9))
        red = np.logical_and.reduce if rule.mode == "all" else np.logical_or.reduce
        raw: B = red(np.vstack(hits), axis=0)
        held: B = red(np.vstack(held_parts), axis=0)
        resolved: list[Alert] = []
        for i in np.flatnonzero(raw & ~st.active):
            st.current[int(i)] = self._new_alert(st, int(i), t)
        st.active |= raw
        st.active_at = np.where(raw & np.isnan(st.active_at), t, st.active_at)
        st.keep_since[raw] = np.nan
        for i in np.flatnonzero(raw):
            a = st.current[int(i)]
            a.value = float(value[i])
            a.last_eval_s = t
        gone = st.active & ~raw
        if gone.any():
            resolved = self._gone(st, t, gone)
        for i in np.flatnonzero(st.active & ~st.firing & held):
            a = st.current[int(i)]
            a.state, a.fired_at = "firing", t
            st.firing[i] = True
            a.actions = plan_actions(rule, a.entity_id, self.index)
            self.history.append(a)
        return resolved

    def _gone(self, st: _RuleState, t: float, gone: B) -> list[Alert]:
        keep = st.rule.keep_firing_for_s
        resolved: list[Alert] = []
        if keep > 0:
            start_keep = gone & st.firing & np.isnan(st.keep_since)
            st.keep_since[start_keep] = t
        for i in np.flatnonzero(gone):
            ii = int(i)
            a = st.current[ii]
            if st.firing[ii] and keep > 0 and t - st.keep_since[ii] < keep:
                continue
            if st.firing[ii]:
                a.state, a.resolved_at = "resolved", t
                resolved.append(a)
            else:
                self.dropped_pending += 1
            del st.current[ii]
            st.active[ii] = st.firing[ii] = False
            st.active_at[ii] = st.keep_since[ii] = np.nan
        return resolved

    def _new_alert(self, st: _RuleState, i: int, t: float) -> Alert:
        rule, ent = st.rule, st.entities[i]
        labels = {"alertname": rule.name, "severity": rule.severity, "scope": rule.scope,
                  **({"category": rule.category} if rule.category else {}),
                  **self.index.labels(rule.scope, ent)}
        return Alert(name=rule.name, rule=rule.name, scope=rule.scope, entity_kind=rule.scope, entity_id=ent,
                     labels=labels, state="pending", active_at=t, severity=rule.severity,
                     category=rule.category, unit=value_unit(rule.conditions[0]))


def evaluate_window(ruleset: RuleSet, store: RuleStore, index: EntityIndex, start: float, end: float,
                    values: Mapping[str, Mapping[str, float]] | None = None,
                    config: RulesConfig | None = None) -> list[Alert]:
    """Batch evaluation (``suanli diagnose``): every alert that fired in [start, end], and those
    pending at the end."""
    return Evaluator(ruleset, index, config).run(store, start, end, values)
