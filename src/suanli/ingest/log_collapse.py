"""Streaming collapse of repeated log events (an Xid storm of 800,000 lines is a few dozen events).

Two events are the same when host, entity, kind, code, PCI device and message (volatile parts such as pid,
process name and embedded timestamps stripped) are equal. A run of the same event continues while
each repeat comes within ``gap_s`` of the previous one; a longer silence starts a new event. Memory
is bounded: at most ``max_pending`` runs are open, the least recently extended is closed first,
and a run is closed as soon as the stream has moved ``gap_s`` past its last repeat.
"""

from __future__ import annotations

import dataclasses
import math
from collections import OrderedDict
from dataclasses import dataclass

from suanli.ingest.log_classify import collapse_text
from suanli.ingest.records import Event

__all__ = ["Collapser"]

_Key = tuple[str | None, str | None, str, int | None, str, str]


@dataclass
class _Run:
    first: Event
    count: int
    last_ts: float
    last_clock: float | None


def _clock(ev: Event) -> float | None:
    """The event's time for gap decisions: epoch seconds, else seconds since boot, else unknown."""
    if math.isfinite(ev.ts):
        return ev.ts
    up = ev.attrs.get("uptime_s")
    return float(up) if isinstance(up, int | float) else None


class Collapser:
    """Feed events in stream order with :meth:`push`; :meth:`flush` at the end of the stream."""

    def __init__(self, gap_s: float, max_pending: int) -> None:
        self.gap_s = gap_s
        self.max_pending = max(1, max_pending)
        self._runs: OrderedDict[_Key, _Run] = OrderedDict()
        self._now: float | None = None
        self._pending_ready: list[Event] = []

    def _advance(self, clock: float | None, ready: list[Event]) -> None:
        if clock is not None and (self._now is None or clock > self._now):
            self._now = clock
            self._expire(ready)

    @staticmethod
    def key_of(ev: Event) -> _Key:
        """What makes two events the same."""
        text = ev.attrs.get("text") if ev.kind in ("xid", "sxid") and "\n" not in ev.message else None
        return (ev.host, ev.entity_id, ev.kind, ev.code, str(ev.attrs.get("pci_bus_id")),
                text if isinstance(text, str) else collapse_text(ev.message))

    def extend(self, key: _Key, ts: float, clock: float | None, count: int = 1) -> list[Event] | None:
        """One more repeat of the open run ``key`` (the events that closed meanwhile), or None when
        no open run of that key continues at this time: then :meth:`push` the event instead."""
        ready: list[Event] = []
        self._advance(clock, ready)
        run = self._runs.get(key)
        if run is None or not self._continues(run, clock):
            self._pending_ready.extend(ready)       # handed out by the next push
            return None
        run.count += count
        if not math.isfinite(run.last_ts) or (math.isfinite(ts) and ts >= run.last_ts):
            run.last_ts = ts
        if clock is not None:
            run.last_clock = clock if run.last_clock is None else max(run.last_clock, clock)
        self._runs.move_to_end(key)
        return ready

    def push(self, ev: Event) -> list[Event]:
        """Add one event; returns the events whose runs closed."""
        ready: list[Event] = self._pending_ready
        self._pending_ready = []
        clock = _clock(ev)
        key = self.key_of(ev)
        got = self.extend(key, ev.ts, clock, ev.count)
        if got is not None:
            return ready + got
        ready += self._pending_ready
        self._pending_ready = []
        run = self._runs.get(key)
        if run is not None:
            ready.append(self._close(self._runs.pop(key)))
        self._runs[key] = _Run(ev, ev.count, ev.last_ts if ev.last_ts is not None else ev.ts, clock)
        while len(self._runs) > self.max_pending:
            ready.append(self._close(self._runs.popitem(last=False)[1]))
        return ready

    def flush(self) -> list[Event]:
        out = self._pending_ready + [self._close(run) for run in self._runs.values()]
        self._pending_ready = []
        self._runs.clear()
        return out

    def _continues(self, run: _Run, clock: float | None) -> bool:
        if clock is None or run.last_clock is None:
            return True
        return abs(clock - run.last_clock) <= self.gap_s

    def _expire(self, ready: list[Event]) -> None:
        """Close runs the stream has left behind (checked from the least recently extended)."""
        assert self._now is not None
        while self._runs:
            key, run = next(iter(self._runs.items()))
            if run.last_clock is None or self._now - run.last_clock <= self.gap_s:
                break
            del self._runs[key]
            ready.append(self._close(run))

    @staticmethod
    def _close(run: _Run) -> Event:
        return dataclasses.replace(run.first, count=run.count, last_ts=run.last_ts)
