"""Incidents over time: open, update, resolve.

``serve`` re-correlates as data arrives; the tracker keeps one stable incident per fault across
those passes. An incident of a pass is the same as a tracked one when it names the same root
entity and category and starts before the tracked one resolved plus the reopen grace. A tracked
incident that no pass reports for ``resolve_after_s`` is resolved, at the last time it was seen.
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


@dataclass
class _Tracked:
    incident: Incident
    last_seen: float
    history: list[tuple[float, str]] = field(default_factory=list)


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
        for inc in incidents:
            item = self._match(inc)
            if item is None:
                self._items[inc.id] = _Tracked(inc, now, [(now, "opened")])
                changes.append(("opened", inc))
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
        for item in self._items.values():
            inc = item.incident
            if inc.state == "open" and now - item.last_seen >= self.config.resolve_after_s:
                inc.state, inc.end = "resolved", item.last_seen
                item.history.append((now, "resolved"))
                changes.append(("resolved", inc))
        return changes

    def restore(self, inc: Incident, last_seen: float, history: list[tuple[float, str]]) -> None:
        """Track an incident kept from an earlier run (``serve`` after a restart), as it was."""
        self._items[inc.id] = _Tracked(inc, last_seen, list(history))

    def incidents(self) -> list[Incident]:
        return sorted((i.incident for i in self._items.values()), key=lambda i: (i.start, i.root_id))

    def history(self, root_id: str) -> list[tuple[float, str]]:
        return [h for i in self._items.values() if i.incident.root_id == root_id for h in i.history]
