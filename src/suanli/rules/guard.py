"""The blast-radius guard: how much of the fleet actions may take out, counted by effect.

Two limits, both over :class:`~suanli.rules.effects.Effect` (nodes out of service, GPUs removed,
jobs requeued), never over action names:

- **at once** (``max_drain_fraction``, ``max_job_drain_fraction``): nodes out of service now, from
  the cluster where the executor can tell (Slurm ``sinfo``, the Kubernetes API), else from what
  suanli itself took out, may not exceed a share of all nodes, or of one job's nodes. Such an
  action is ``blocked_by_guard``; later ones may pass when nodes come back.
- **the circuit breaker** (``breaker_*``): the distinct nodes, GPUs and jobs that actions asked to
  take out within a sliding window (``breaker_window_s``, default 5 minutes) may not exceed a share
  of the fleet (50 %) nor absolute caps. The request that would cross one *trips* it: from then on
  every action with an effect is refused (``breaker_open``) until a person resets it with the trip's
  id as confirmation (:func:`reset_breaker`). Nothing refused is queued, and after a reset actions of
  alerts that fired before it are not replayed (``not_replayed``); the window starts empty.

The guard's state is a fold over the audit log (:meth:`Guard.observe`), so a restarted runner
resumes from the log, not from zero.
"""

from __future__ import annotations

import math
import secrets
import time
from collections import deque
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from suanli.errors import InputError
from suanli.rules.action_config import ActionsConfig
from suanli.rules.audit import AuditLog, read_audit
from suanli.rules.effects import Effect
from suanli.timefmt import to_rfc3339

__all__ = ["HOLDING", "Guard", "open_trips", "reset_breaker", "reset_record"]

HOLDING = frozenset({"executing", "dry_run", "shadow"})
"""Decisions after which the action's effect holds (for a live action: from just before it runs)."""


def _ts(rec: Mapping[str, Any]) -> float | None:
    t = rec.get("ts")
    return float(t) if isinstance(t, int | float) and not isinstance(t, bool) and math.isfinite(t) else None


class Guard:
    """Both limits, and the state they need, folded from audit records."""

    def __init__(self, config: ActionsConfig, nodes: Iterable[str], job_nodes: Mapping[str, set[str]]) -> None:
        self.config = config
        self.nodes = frozenset(nodes)
        self.job_nodes = dict(job_nodes)
        self.trip: dict[str, Any] | None = None
        self.reset_at: float | None = None
        self._window: deque[tuple[float, Effect]] = deque()
        self._latest = -math.inf
        self._holds: dict[str, set[str]] = {}

    @property
    def drained(self) -> set[str]:
        """Nodes suanli took out of service and has not seen released."""
        return {n for n, ids in self._holds.items() if ids}

    def observe(self, rec: Mapping[str, Any]) -> None:
        """Fold one audit record (of this runner's mode) into the state."""
        event, t = rec.get("event"), _ts(rec)
        if event == "trip":
            self.trip = dict(rec)
        elif event == "reset" and self.trip is not None and rec.get("trip_id") == self.trip.get("trip_id"):
            self.trip, self.reset_at = None, t
            self._window.clear()
        elif event == "release":
            self._holds.pop(str(rec.get("target")), None)
        elif event == "decision":
            effect = Effect.from_json(rec.get("effect"))
            if rec.get("counted") and t is not None and effect:
                self._window.append((t, effect))
                self._latest = max(self._latest, t)
                while self._window and self._window[0][0] <= self._latest - self.config.breaker_window_s:
                    self._window.popleft()
            if rec.get("decision") in HOLDING:
                for n in effect.nodes:
                    self._holds.setdefault(n, set()).add(str(rec.get("id")))
            elif rec.get("decision") == "failed" and rec.get("ref"):
                for n in effect.nodes:
                    self._holds.get(n, set()).discard(str(rec.get("ref")))

    def open_detail(self) -> str | None:
        """Why actions are refused while the breaker is open (None when closed)."""
        if self.trip is None:
            return None
        tid = self.trip.get("trip_id")
        return (f"circuit breaker open since {self.trip.get('time')} (trip {tid}): {self.trip.get('reason')}; "
                f"a person resets it with the trip id as confirmation (reset_breaker(..., confirm={tid!r}))")

    def breaker_check(self, effect: Effect, t: float) -> str | None:
        """Why this request would trip the breaker (None: it stays closed)."""
        cfg = self.config
        while self._window and self._window[0][0] <= max(t, self._latest) - cfg.breaker_window_s:
            self._window.popleft()
        recent = [e for ts, e in self._window if ts > t - cfg.breaker_window_s]
        nodes = set(effect.nodes).union(*(e.nodes for e in recent))
        gpus = set(effect.gpus).union(*(e.gpus for e in recent))
        jobs = set(effect.jobs).union(*(e.jobs for e in recent))
        within = f"within {cfg.breaker_window_s:.0f} s"
        share = max(1, math.floor(cfg.breaker_fleet_fraction * len(self.nodes)))
        if len(nodes) > share:
            return (f"actions {within} would take out {len(nodes)} of {len(self.nodes)} nodes, more than "
                    f"breaker_fleet_fraction {cfg.breaker_fleet_fraction} allows ({share})")
        for what, have, cap in (("nodes", nodes, cfg.breaker_max_nodes), ("GPUs", gpus, cfg.breaker_max_gpus),
                                ("jobs", jobs, cfg.breaker_max_jobs)):
            if len(have) > cap:
                return f"actions {within} would take out {len(have)} {what}, more than the cap of {cap}"
        return None

    def state_check(self, effect: Effect, out_now: set[str], source: str) -> str | None:
        """Why taking out ``effect.nodes`` now would leave too much of the fleet or a job out."""
        new = effect.nodes - out_now
        if not new:
            return None
        after = out_now | new
        total = len(self.nodes)
        allowed = max(1, int(self.config.max_drain_fraction * total))
        if len(after) > allowed:
            return (f"would have {len(after)} of {total} nodes out of service ({len(out_now)} already, "
                    f"{source}); the guard allows {allowed} (max_drain_fraction {self.config.max_drain_fraction})")
        for job, nodes in self.job_nodes.items():
            if not new & nodes:
                continue
            allowed_j = max(1, int(self.config.max_job_drain_fraction * len(nodes)))
            if len(after & nodes) > allowed_j:
                return (f"would have {len(after & nodes)} of job {job}'s {len(nodes)} nodes out of service; "
                        f"the guard allows {allowed_j} (max_job_drain_fraction "
                        f"{self.config.max_job_drain_fraction})")
        return None

    def trip_record(self, mode: str, reason: str, t: float, about: Mapping[str, Any]) -> dict[str, Any]:
        """The audit record that opens the breaker (its ``trip_id`` is what a reset must confirm)."""
        return {"event": "trip", "mode": mode, "trip_id": secrets.token_hex(4), "ts": t, "time": to_rfc3339(t),
                "reason": reason, **{k: about[k] for k in ("rule", "alert", "action", "target") if k in about}}


def open_trips(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Trips not yet reset, per mode (the last trip of a mode is the open one)."""
    out: dict[str, dict[str, Any]] = {}
    for rec in records:
        mode = str(rec.get("mode"))
        if rec.get("event") == "trip":
            out[mode] = dict(rec)
        elif rec.get("event") == "reset" and out.get(mode, {}).get("trip_id") == rec.get("trip_id"):
            out.pop(mode)
    return out


def reset_record(trips: Mapping[str, Mapping[str, Any]], confirm: str, by: str, reason: str,
                 t: float) -> dict[str, Any]:
    """The audit record that closes the open trip ``confirm`` names; InputError when none does or
    when who and why are missing."""
    if not math.isfinite(t):
        raise InputError(f"resetting the breaker needs a finite time, got {t!r}")
    if not by.strip() or not reason.strip():
        raise InputError("resetting the breaker needs who resets it and why (by, reason)")
    match = [m for m, tr in trips.items() if tr.get("trip_id") == confirm]
    if not match:
        known = ", ".join(f"{tr.get('trip_id')} ({m}, {tr.get('time')})" for m, tr in trips.items()) or "none"
        raise InputError(f"no open breaker trip {confirm!r} to reset; open trips: {known}")
    return {"event": "reset", "mode": match[0], "trip_id": confirm, "by": by.strip(), "reason": reason.strip(),
            "ts": t, "time": to_rfc3339(t)}


def reset_breaker(audit_path: Path | str, confirm: str, by: str, reason: str,
                  now: float | None = None) -> dict[str, Any]:
    """A person closes the tripped breaker recorded in ``audit_path``: ``confirm`` must be the
    open trip's id (printed in every ``breaker_open`` detail and in the trip record), ``by`` and
    ``reason`` say who and why. The reset is appended to the audit log; a running runner reads it
    at its next step. Returns the reset record."""
    records, _ = read_audit(audit_path)
    rec = reset_record(open_trips(records), confirm, by, reason, time.time() if now is None else now)
    return AuditLog(audit_path).append(rec)
