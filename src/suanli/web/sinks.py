"""Where ``serve``'s live records go: the DuckDB store, one committed transaction per batch.

Every receiver batch (spans, Kineto uploads) and every batch of log events is written and
committed before the next one is taken, so what was delivered survives a ``kill -9`` (DuckDB's
write-ahead log), and nothing is counted twice: spans and events are deduplicated by the store, a
repeated (series, time) sample is one sample. Scrapes, which nobody pushed and so nobody waits on,
are committed together: when ``SCRAPE_BATCH_SAMPLES`` are pending, when a scrape finds the oldest
pending one ``SCRAPE_BATCH_S`` old, before each analysis step and when serve stops
(``flush_scrapes``). A transaction per scrape cost about 6 ms of commit work, which at 2,560
targets every 15 s was most of a core. Alertmanager notifications are kept in the table
``serve_alerts`` (the pipeline reads them as webhook payloads).
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from typing import Any

from suanli.ingest.records import Event, Span
from suanli.ingest.scrape import ScrapeResult
from suanli.ingest.sink import EventBatch, SampleBatch, SpanBatch
from suanli.store.duck import DuckStore
from suanli.web.alerts import AlertNotification
from suanli.web.app import Consumers
from suanli.web.kineto import KinetoUpload

__all__ = ["StoreSinks"]

_ALERTS_DDL = "CREATE TABLE IF NOT EXISTS serve_alerts (received_at DOUBLE, payload VARCHAR);"
SCRAPE_BATCH_SAMPLES = 50_000
"""Scraped samples pending at which they are committed."""
SCRAPE_BATCH_S = 1.0
"""Age of the oldest pending scrape at which the next scrape commits them all."""


class StoreSinks:
    """Consumers that commit into ``store``; ``counts`` says how many records each kind delivered."""

    def __init__(self, store: DuckStore) -> None:
        self.store = store
        self.counts: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.last_ingest_s: float | None = None
        self._lock = threading.Lock()
        self._pending: list[ScrapeResult] = []
        self._pending_samples = 0
        self._pending_since = 0.0
        with store.lock:
            store.con.execute(_ALERTS_DDL)

    def consumers(self) -> Consumers:
        return Consumers(self.spans, self.alerts, self.kineto)

    def _done(self, kind: str, n: int) -> None:
        with self._lock:
            self.counts[kind] += n
            self.last_ingest_s = time.time()

    def spans(self, batch: list[Span]) -> None:
        self._write("spans", f"otlp:{len(batch)}", spans=batch)

    def kineto(self, uploads: list[KinetoUpload]) -> None:
        for up in uploads:
            self._write("kineto_spans", f"kineto:{up.job_id}:{up.rank}", spans=up.spans)

    def events(self, events: list[Event]) -> None:
        self._write("events", "logs", events=events)

    def scrape(self, result: ScrapeResult) -> None:
        """One scrape's samples (its ``up`` and timing series included), committed with the
        scrapes pending beside it (see the module docstring)."""
        if not result.batches:
            return
        now = time.monotonic()
        with self._lock:
            if not self._pending:
                self._pending_since = now
            self._pending.append(result)
            self._pending_samples += result.samples
            due = self._pending_samples >= SCRAPE_BATCH_SAMPLES or now - self._pending_since >= SCRAPE_BATCH_S
        if due:
            self.flush_scrapes()

    def flush_scrapes(self) -> None:
        """Commit every pending scrape now, in one transaction."""
        with self._lock:
            results, self._pending, self._pending_samples = self._pending, [], 0
        if not results:
            return
        source = f"scrape:{results[0].target.name}" + (f" and {len(results) - 1} more" if len(results) > 1 else "")
        try:
            with self.store.transaction(source) as txn:
                txn.append_samples(SampleBatch.from_series([part for r in results for part in r.batches]))
                txn.commit()
        except Exception:
            self.errors["samples"] += 1
            raise
        self._done("samples", sum(r.samples for r in results))

    def _write(self, kind: str, source: str, *, spans: list[Span] | None = None,
               events: list[Event] | None = None) -> None:
        if not spans and not events:
            return
        try:
            with self.store.transaction(source) as txn:
                if spans:
                    txn.append_spans(SpanBatch.from_spans(spans))
                if events:
                    txn.append_events(EventBatch.from_events(events))
                txn.commit()
        except Exception:
            self.errors[kind] += 1
            raise
        self._done(kind, len(spans or events or []))

    def alerts(self, notes: list[AlertNotification]) -> None:
        rows = [[n.received_at, json.dumps(n.payload)] for n in notes]
        with self.store.lock:
            self.store.con.executemany("INSERT INTO serve_alerts VALUES (?, ?)", rows)
        self._done("alerts", sum(len(n.payload.get("alerts", [])) for n in notes))

    def alert_payloads(self, since: float | None = None) -> tuple[dict[str, Any], ...]:
        """The webhook payloads kept (received at or after ``since``), in arrival order."""
        with self.store.lock:
            rows = self.store.con.execute(
                "SELECT payload FROM serve_alerts WHERE received_at >= ? ORDER BY received_at",
                [since if since is not None else float("-inf")]).fetchall()
        return tuple(json.loads(r[0]) for r in rows)
