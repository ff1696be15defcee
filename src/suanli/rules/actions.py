"""Carrying out the actions firing alerts plan, safely, with every decision audited.

For each firing alert and each of its planned actions, in order:

1. ``skipped_duplicate``: the same action on the same target was decided (executed or dry run)
   within ``dedup_window_s`` (idempotence);
2. ``blocked_by_guard``: a ``drain_node`` that would leave more than ``max_drain_fraction`` of all
   nodes, or of one job's nodes, drained at once (at least one node may always be drained);
3. ``rate_limited``: ``rate_limit_count`` actions were already decided within ``rate_limit_window_s``;
4. ``dry_run`` (the default: nothing runs) or ``executed`` / ``failed`` through the executor.

Dry-run decisions count for dedup, guard and rate limit, so a dry run shows what a live run would do.
Each decision is appended to the audit log as one JSON line: time, rule, alert, action, target,
decision, detail.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from suanli.rules.alerts import Alert, PlannedAction
from suanli.rules.entities import EntityIndex
from suanli.rules.executors import ActionFailed, Executor, build_executors
from suanli.rules.language import ActionsConfig, RuleSet
from suanli.timefmt import to_rfc3339

__all__ = ["DECISIONS", "ActionRunner", "AuditLog"]

DECISIONS: tuple[str, ...] = ("executed", "dry_run", "skipped_duplicate", "blocked_by_guard", "rate_limited",
                              "failed")


class AuditLog:
    """Append-only decisions: kept in memory and, with a path, appended as JSON lines."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path else None
        self.records: list[dict[str, Any]] = []

    def append(self, record: dict[str, Any]) -> None:
        self.records.append(record)
        if self.path is not None:
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(record, sort_keys=True) + "\n")


class ActionRunner:
    """Decides and (unless dry run) executes planned actions; see the module docstring."""

    def __init__(self, config: ActionsConfig, index: EntityIndex, executors: dict[str, Executor] | None = None,
                 audit: AuditLog | None = None, clock: Callable[[], float] | None = None) -> None:
        self.config, self.index = config, index
        self.executors = executors or {}
        self.audit = audit or AuditLog(config.audit_log)
        self.clock = clock
        self._last: dict[tuple[str, str], float] = {}
        self._decided_at: list[float] = []
        self.drained: set[str] = set()
        self._job_nodes = {j: {index.gpu_node[g] for g in gs if g in index.gpu_node}
                           for j, gs in index.job_gpus.items()}

    @classmethod
    def from_ruleset(cls, ruleset: RuleSet, index: EntityIndex, dry_run: bool | None = None,
                     clock: Callable[[], float] | None = None) -> ActionRunner:
        cfg = ruleset.actions
        if dry_run is not None and dry_run != cfg.dry_run:
            cfg = ActionsConfig(**{**cfg.__dict__, "dry_run": dry_run})
        return cls(cfg, index, build_executors(ruleset.executors), clock=clock)

    def release_node(self, node: str) -> None:
        """A drained node is back in service: it no longer counts against the guard."""
        self.drained.discard(node)

    def handle(self, alerts: Iterable[Alert], now: float | None = None) -> list[dict[str, Any]]:
        """Decide every planned action of the firing alerts; returns the audit records written."""
        out = []
        for alert in alerts:
            if alert.state != "firing":
                continue
            t = now if now is not None else (self.clock() if self.clock else (alert.fired_at or 0.0))
            for action in alert.actions:
                out.append(self._decide(alert, action, t))
        return out

    def _guard(self, action: PlannedAction) -> str | None:
        if action.action != "drain_node" or action.target in self.drained:
            return None
        total = len(self.index.nodes)
        allowed = max(1, int(self.config.max_drain_fraction * total))
        if len(self.drained) + 1 > allowed:
            return (f"would drain {len(self.drained) + 1} of {total} nodes; the guard allows {allowed} "
                    f"(max_drain_fraction {self.config.max_drain_fraction})")
        for job, nodes in self._job_nodes.items():
            if action.target not in nodes:
                continue
            allowed_j = max(1, int(self.config.max_job_drain_fraction * len(nodes)))
            if len(self.drained & nodes) + 1 > allowed_j:
                return (f"would drain {len(self.drained & nodes) + 1} of job {job}'s {len(nodes)} nodes; "
                        f"the guard allows {allowed_j} (max_job_drain_fraction {self.config.max_job_drain_fraction})")
        return None

    def _decide(self, alert: Alert, action: PlannedAction, t: float) -> dict[str, Any]:
        cfg = self.config
        key = (action.action, action.target)
        detail = ""
        last = self._last.get(key)
        self._decided_at = [x for x in self._decided_at if t - x < cfg.rate_limit_window_s]
        if last is not None and t - last < cfg.dedup_window_s:
            decision, detail = "skipped_duplicate", f"same action decided at {to_rfc3339(last)}"
        elif (why := self._guard(action)) is not None:
            decision, detail = "blocked_by_guard", why
        elif len(self._decided_at) >= cfg.rate_limit_count:
            decision = "rate_limited"
            detail = f"{len(self._decided_at)} actions in the last {cfg.rate_limit_window_s:.0f} s"
        else:
            decision, detail = self._execute(alert, action)
            if decision != "failed":
                self._last[key] = t
                self._decided_at.append(t)
                if action.action == "drain_node":
                    self.drained.add(action.target)
        record = {"time": to_rfc3339(t), "ts": t, "rule": alert.rule, "alert": alert.key,
                  "action": action.action, "target": action.target, "target_kind": action.target_kind,
                  "decision": decision, "detail": detail}
        self.audit.append(record)
        return record

    def _execute(self, alert: Alert, action: PlannedAction) -> tuple[str, str]:
        if self.config.dry_run:
            return "dry_run", f"would {action.action} {action.target}"
        ex = self.executors.get(action.action)
        if ex is None:
            return "failed", f"no executor configured for {action.action}"
        try:
            return "executed", ex.execute(action, alert)
        except ActionFailed as e:
            return "failed", str(e)
