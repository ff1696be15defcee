"""A tiny in-memory Store (only what the rule evaluator reads: series and events)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from suanli.ingest.records import Event, SeriesKey
from suanli.store.api import Series


class FakeStore:
    def __init__(self) -> None:
        self._series: dict[SeriesKey, tuple[list[float], list[float]]] = {}
        self._events: list[Event] = []

    def add(self, metric: str, kind: str | None, entity: str | None, ts: Iterable[float],
            values: Iterable[float], labels: tuple[tuple[str, str], ...] = ()) -> SeriesKey:
        key = SeriesKey(metric, labels, kind, entity)
        t, v = self._series.setdefault(key, ([], []))
        t.extend(float(x) for x in ts)
        v.extend(float(x) for x in values)
        return key

    def add_samples(self, key: SeriesKey, ts: np.ndarray, values: np.ndarray) -> None:
        t, v = self._series.setdefault(key, ([], []))
        t.extend(ts.tolist())
        v.extend(values.tolist())

    def add_events(self, events: Iterable[Event]) -> None:
        self._events.extend(events)

    def series(self, metric: str, entity_ids: Sequence[str] | None = None,
               start: float | None = None, end: float | None = None) -> list[Series]:
        out = []
        for key, (t, v) in self._series.items():
            if key.metric != metric or (entity_ids is not None and key.entity_id not in entity_ids):
                continue
            last: dict[float, float] = {}
            for a, b in zip(t, v, strict=True):
                last[a] = b
            ts = np.array(sorted(last), dtype=np.float64)
            vals = np.array([last[x] for x in ts], dtype=np.float64)
            keep = np.ones(len(ts), bool)
            if start is not None:
                keep &= ts >= start
            if end is not None:
                keep &= ts <= end
            out.append(Series(key, ts[keep], vals[keep]))
        return out

    def events(self, entity_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None,
               start: float | None = None, end: float | None = None) -> list[Event]:
        return [e for e in self._events
                if (kinds is None or e.kind in kinds) and (entity_ids is None or e.entity_id in entity_ids)
                and (start is None or e.ts >= start) and (end is None or e.ts <= end)]
