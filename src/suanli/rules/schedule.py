"""Deferred actions: what the cost decision said to carry out after the job's next checkpoint or
after a timeout, held until it is due.

A planned action whose ``how`` defers it (mode ``after_checkpoint`` or ``after_timeout`` with
``delay_s`` > 0) is not carried out when its alert fires: the runner records a ``scheduled``
decision with ``not_before`` (``delay_s`` after the decision was made), ``how`` and ``params``, having checked only that the
target is an id, that the executor can do it and that it is no duplicate; nothing is counted yet.
When a later call reaches ``not_before`` (:meth:`ActionRunner.due`, which ``suanli serve`` calls at
every step), the action goes through every check as if it were planned then (breaker, reset, dedup,
guard, rate limit) and is carried out, or is ``cancelled`` if its alert no longer fires (the fault
cleared, which is what waiting was for). The follow-up record names the scheduled one
(``schedule_ref``). The pending entries are a fold over the audit log, so a restarted live or
shadow runner still carries them out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from suanli.rules.alerts import Delivery, PlannedAction
from suanli.timefmt import to_rfc3339

__all__ = ["Pending", "Schedule", "scheduled_fields"]


@dataclass(frozen=True)
class Pending:
    """One scheduled action: the ``scheduled`` record's id, its alert's key and rule, the action,
    when it is due."""

    id: str
    alert: str
    action: PlannedAction
    not_before: float
    rule: str = ""


def scheduled_fields(action: PlannedAction, t: float) -> dict[str, Any]:
    """What a ``scheduled`` record carries beyond a decision's fields (``action.how`` defers it):
    due ``delay_s`` after the decision was made (else after ``t``, when the runner decides)."""
    how = action.how if action.how is not None else Delivery()
    due = (how.decided_at if how.decided_at is not None else t) + how.delay_s
    return {"not_before": due, "not_before_time": to_rfc3339(due), "how": how.to_json(), "params": dict(action.params)}


def _pending(rec: Mapping[str, Any]) -> Pending | None:
    due, rid, key = rec.get("not_before"), rec.get("id"), rec.get("alert")
    fields = [rec.get(k) for k in ("action", "target_kind", "target")]
    if not (isinstance(due, int | float) and not isinstance(due, bool) and math.isfinite(due)) or \
            not isinstance(rid, str) or not isinstance(key, str) or not all(isinstance(f, str) for f in fields):
        return None
    params = rec.get("params")
    action = PlannedAction(str(fields[0]), str(fields[1]), str(fields[2]), dict(params) if isinstance(params, dict) else {},
                           Delivery.from_json(rec.get("how")))
    return Pending(rid, key, action, float(due), str(rec.get("rule", "")))


class Schedule:
    """The scheduled actions not yet carried out or cancelled, folded from audit records."""

    def __init__(self) -> None:
        self.pending: dict[str, Pending] = {}

    def observe(self, rec: Mapping[str, Any]) -> None:
        if rec.get("event") != "decision":
            return
        ref = rec.get("schedule_ref")
        if isinstance(ref, str):
            self.pending.pop(ref, None)
        elif rec.get("decision") == "scheduled" and (p := _pending(rec)) is not None:
            self.pending[p.id] = p

    def waiting(self, action: str, target: str) -> Pending | None:
        """The pending entry for the same action on the same target, if any."""
        return next((p for p in self.pending.values() if (p.action.action, p.action.target) == (action, target)), None)

    def due(self, t: float) -> list[Pending]:
        """Entries due at ``t``, the earliest first."""
        return sorted((p for p in self.pending.values() if p.not_before <= t), key=lambda p: (p.not_before, p.id))
