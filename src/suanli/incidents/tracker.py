"""Incidents over time: open, update, resolve.

``serve`` re-correlates as data arrives; the tracker keeps one stable incident per fault across
those passes. An incident of a pass is the same as a tracked one when it names the same root
entity and category and starts before the tracked one resolved plus the reopen grace. A tracked
incident that no pass reports for ``resolve_after_s`` is resolved, at the last time it was seen.

A weak incident (confidence under ``confirm_below``, and no rule or Alertmanager alert on its root:
an analysis' inference alone, such as the latency tomography naming a link, with no counter or log
to name the part) opens only once passes have reported it for ``confirm_s``; until then it is pending,
and a pass that no longer reports it drops it unannounced. Early in a fault the latency
tomography may name a link while the port's counters have not yet crossed their bar; a pass later
the port's incident takes the latency evidence, and the link's would have been a false alarm.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from suanli.incidents.model import Incident

__all__ = ["IncidentTracker", "TrackerConfig"]


@dataclass(frozen=True)
class TrackerConfig:
    resolve_after_s: float = 300.0
    """An incident not reported again for this long is resolved."""
    reopen_grace_s: float = 600.0
    """A fault at the same root within this long after resolving reopens the incident."""
    confirm_below: float = 0.6
    """Incidents less confident than this must hold for ``confirm_s`` before they open."""
    confirm_s: float = 120.0


@dataclass
class _Tracked:
    incident: Incident
    last_seen: float
    history: list[tuple[float, str]] = field(default_factory=list)
    pending_since: float | None = None
    """When a weak incident was first reported (None once it opened)."""


class IncidentTracker:
    def __init__(self, config: TrackerConfig = TrackerConfig()) -> None:
        self.config = config
        self._items: dict[str, _Tracked] = {}

    def _match(self, inc: Incident) -> _Tracked | None:
        for item in self._items.values():
            cur = item.incident
            if cur.root_id != inc.root_id or cur.category != inc.category:
                continue
            if cur.state == "open" or (cur.end is not None and inc.start <= cur.end + self.config.reopen_grace_s):
                return item
        return None

    def update(self, now: float, incidents: list[Incident]) -> list[tuple[str, Incident]]:
        """Fold one correlation pass in; return the changes as (``opened``|``updated``|``reopened``|
        ``resolved``, incident)."""
        changes: list[tuple[str, Incident]] = []
        seen: set[int] = set()
        for inc in incidents:
            item = self._match(inc)
            if item is None:
                item = self._new(inc, now)
                seen.add(id(item))
                if item.pending_since is None:
                    changes.append(("opened", inc))
                continue
            seen.add(id(item))
            if item.pending_since is not None:
                self._hold(item, inc, now, changes)
                continue
            cur = item.incident
            what = "reopened" if cur.state == "resolved" else "updated"
            inc.pinned_id = cur.id          # one fault, one id, even when its onset moves earlier
            inc.start = min(inc.start, cur.start)
            if cur.detected_at is not None:
                inc.detected_at = cur.detected_at if inc.detected_at is None else min(inc.detected_at, cur.detected_at)
            inc.state = "open"
            inc.end = None if inc.end is None or inc.end >= now - self.config.resolve_after_s else inc.end
            item.incident, item.last_seen = inc, now
            item.history.append((now, what))
            changes.append((what, inc))
        for key in [k for k, it in self._items.items() if it.pending_since is not None and id(it) not in seen]:
            del self._items[key]                          # a weak incident that did not hold
        for item in self._items.values():
            inc = item.incident
            if item.pending_since is None and inc.state == "open" and now - item.last_seen >= self.config.resolve_after_s:
                inc.state, inc.end = "resolved", item.last_seen
                item.history.append((now, "resolved"))
                changes.append(("resolved", inc))
        return changes

    def _weak(self, inc: Incident) -> bool:
        """Inferred, not alerted: an alert (which served its own ``for``) on the root opens at once."""
        alerted = any(s.source in ("rule", "alertmanager") and s.entity_id == inc.root_id for s in inc.signals)
        return inc.confidence < self.config.confirm_below and self.config.confirm_s > 0 and not alerted

    def _new(self, inc: Incident, now: float) -> _Tracked:
        weak = self._weak(inc)
        item = _Tracked(inc, now, [] if weak else [(now, "opened")], now if weak else None)
        self._items[inc.id] = item
        return item

    def _hold(self, item: _Tracked, inc: Incident, now: float, changes: list[tuple[str, Incident]]) -> None:
        """A pending incident reported again: it opens once it held ``confirm_s`` or grew confident."""
        assert item.pending_since is not None
        inc.pinned_id = item.incident.id
        inc.start = min(inc.start, item.incident.start)
        item.incident, item.last_seen = inc, now
        if now - item.pending_since >= self.config.confirm_s or not self._weak(inc):
            item.pending_since = None
            item.history.append((now, "opened"))
            changes.append(("opened", inc))

    def restore(self, inc: Incident, last_seen: float, history: list[tuple[float, str]]) -> None:
        """Track an incident kept from an earlier run (``serve`` after a restart), as it was."""
        self._items[inc.id] = _Tracked(inc, last_seen, list(history))

    def incidents(self) -> list[Incident]:
        """The incidents that opened (pending weak ones are not incidents yet)."""
        return sorted((i.incident for i in self._items.values() if i.pending_since is None),
                      key=lambda i: (i.start, i.root_id))

    def history(self, root_id: str) -> list[tuple[float, str]]:
        return [h for i in self._items.values() if i.incident.root_id == root_id for h in i.history]
