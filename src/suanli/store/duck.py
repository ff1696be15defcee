"""The DuckDB store (the default backend of :class:`suanli.store.api.Store`).

Writes are buffered in Python lists and appended through Arrow in large batches (``flush_rows``).
Last write wins for a repeated (series, ts): every sample carries a global write sequence
``seq`` and reads keep the row with the highest ``seq`` per (series, ts) (dedupe at query: loads
stay append-only and fast). Spans and events are deduplicated once after writes (``flush``: the
last write of a (trace_id, span_id) or of an identical event wins), so a repeated load double-counts
nothing. Out-of-order input is fine: reads sort by time. Reopening a file finds
everything (series keys are reloaded into memory on open: one row per series, not per sample).
Schema: ``suanli.store._schema``.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from suanli.errors import InputError
from suanli.ingest.records import Event, IngestReport, SeriesKey, Span
from suanli.inventory import Resolver
from suanli.store import _schema as sc
from suanli.store._reads import DuckReads
from suanli.store.api import F64

__all__ = ["DuckStore", "DuckStoreConfig"]


@dataclass(frozen=True)
class DuckStoreConfig:
    """Buffering and engine settings of :class:`DuckStore`."""

    flush_rows: int = 2_000_000
    """Buffered samples (or spans/events x 20) that trigger an automatic flush."""
    threads: int | None = None
    """DuckDB worker threads; None keeps DuckDB's default (all cores)."""
    memory_limit: str | None = "2GB"
    """DuckDB memory limit (it spills to disk beyond it); None keeps DuckDB's default."""


class DuckStore(DuckReads):
    """``DuckStore(path)`` opens or creates a DuckDB file; ``DuckStore(None)`` is in memory."""

    def __init__(self, path: str | Path | None = None, config: DuckStoreConfig | None = None) -> None:
        self.path = None if path is None else Path(path)
        self.config = config or DuckStoreConfig()
        try:
            self.con = duckdb.connect(":memory:" if path is None else str(path))
        except duckdb.Error as err:                     # locked by another process, not a DuckDB file
            raise InputError(f"cannot open the store: {str(err).splitlines()[0]}", file=str(path)) from err
        if self.config.threads:
            self.con.execute(f"SET threads = {int(self.config.threads)}")
        if self.config.memory_limit:
            self.con.execute(f"SET memory_limit = '{self.config.memory_limit}'")
        self.con.execute("SET enable_progress_bar = false")
        self.con.execute(sc.DDL)
        self.lock = threading.RLock()
        self._ids: dict[SeriesKey, int] = {}
        self.keys_by_id: dict[int, SeriesKey] = {}
        self._new_keys: list[tuple[int, SeriesKey]] = []
        self._sample_parts: list[tuple[int, F64, F64]] = []
        self._buffered = 0
        self._spans: list[Span] = []
        self._events: list[Event] = []
        self._load_keys()
        self.seq = self._max_seq()
        self._deduped_seq = self.seq                      # spans/events up to here hold no duplicates

    # -- bookkeeping --------------------------------------------------------------------------
    def _load_keys(self) -> None:
        rows = self.con.execute(
            "SELECT id, metric, entity_kind, entity_id, peer_id, labels FROM series ORDER BY rowid").fetchall()
        for sid, metric, kind, entity, peer, labels in rows:
            key = sc.key_from_row(metric, kind, entity, peer, labels)
            self._ids.setdefault(key, int(sid))
            self.keys_by_id[int(sid)] = key

    def _max_seq(self) -> int:
        row = self.con.execute(
            "SELECT greatest(coalesce((SELECT max(seq) FROM spans), 0), coalesce((SELECT max(seq) FROM events), 0), "
            "coalesce((SELECT max(seq) FROM reports), 0), coalesce((SELECT max(seq) FROM files), 0))").fetchall()
        return int(row[0][0]) if row else 0

    def next_seq(self, n: int) -> int:
        """Reserve ``n`` write sequence numbers; returns the first."""
        first = self.seq + 1
        self.seq += n
        return first

    def series_id(self, key: SeriesKey) -> int:
        """The (primary) id of a series, creating it (buffered) when new."""
        sid = self._ids.get(key)
        if sid is None:
            digest = hashlib.blake2b(sc.labels_json(key).encode() + b"\0" + key.metric.encode(), digest_size=8)
            sid = int.from_bytes(digest.digest(), "little")
            while sid in self.keys_by_id:                    # never in practice: 64-bit ids
                sid = (sid + 1) % 2**64
            self.register_id(sid, key)
        return sid

    def register_id(self, sid: int, key: SeriesKey) -> bool:
        """Make ``sid`` an id of ``key`` (an alias when the key has one already); False when
        ``sid`` already belongs to another key."""
        known = self.keys_by_id.get(sid)
        if known is not None:
            return known == key
        self.keys_by_id[sid] = key
        self._ids.setdefault(key, sid)
        self._new_keys.append((sid, key))
        return True

    def ids_of(self, key: SeriesKey) -> int | None:
        return self._ids.get(key)

    # -- writing ------------------------------------------------------------------------------
    def put_inventory(self, text: str, source: str) -> None:
        with self.lock:
            self.con.execute("DELETE FROM meta WHERE key IN ('inventory', 'inventory_source')").fetchall()
            self.con.execute("INSERT INTO meta VALUES ('inventory', ?), ('inventory_source', ?)",
                             [text, source]).fetchall()

    def file_loaded(self, fingerprint: str) -> bool:
        """Whether a file with this fingerprint (``loader.fingerprint``) was loaded before."""
        rows = self.con.execute("SELECT count(*) FROM files WHERE fingerprint = ?", [fingerprint]).fetchall()
        return bool(rows and rows[0][0])

    def mark_file_loaded(self, fingerprint: str, path: str) -> None:
        with self.lock:
            self.con.execute("INSERT INTO files VALUES (?, ?, ?)", [fingerprint, path, self.next_seq(1)]).fetchall()

    def inventory_text(self) -> str | None:
        rows = self.con.execute("SELECT value FROM meta WHERE key = 'inventory'").fetchall()
        return str(rows[0][0]) if rows else None

    def inventory_source(self) -> str | None:
        rows = self.con.execute("SELECT value FROM meta WHERE key = 'inventory_source'").fetchall()
        return str(rows[0][0]) if rows else None

    def add_samples(self, key: SeriesKey, ts: F64, values: F64) -> None:
        ts = np.asarray(ts, dtype=np.float64)
        values = np.asarray(values, dtype=np.float64)
        if len(ts) != len(values):
            raise ValueError(f"{key.metric}: {len(ts)} timestamps but {len(values)} values")
        if not len(ts):
            return
        with self.lock:
            self._sample_parts.append((self.series_id(key), ts, values))
            self._buffered += len(ts)
            if self._buffered >= self.config.flush_rows:
                self._flush_samples()

    def add_spans(self, spans: Iterable[Span]) -> None:
        with self.lock:
            for span in spans:
                self._spans.append(span)
                if len(self._spans) >= self.config.flush_rows // 20:
                    self._flush_spans()

    def add_events(self, events: Iterable[Event]) -> None:
        with self.lock:
            for event in events:
                self._events.append(event)
                if len(self._events) >= self.config.flush_rows // 20:
                    self._flush_events()

    def add_report(self, source: str, report: IngestReport) -> None:
        with self.lock:
            self.con.execute("INSERT INTO reports VALUES (?, ?, ?)",
                             [self.next_seq(1), source, sc.report_to_json(report)]).fetchall()

    def flush(self) -> None:
        with self.lock:
            self._flush_keys()
            self._flush_samples()
            self._flush_spans()
            self._flush_events()
            if self.seq > self._deduped_seq:
                self._dedupe()

    def _dedupe(self) -> None:
        """Drop all but the last write (highest ``seq``) of each span and event (``_schema``), in the
        tables that got rows since the last call (whichever path wrote them: all take ``next_seq``)."""
        for table, key, where in (("spans", "trace_id, span_id", "trace_id IS NOT NULL AND span_id IS NOT NULL"),
                                  ("events", "source, ts, kind, entity_id, message", "TRUE")):
            new = self.con.execute(f"SELECT count(*) FROM {table} WHERE seq > ?", [self._deduped_seq]).fetchall()
            if new[0][0]:
                self.con.execute(
                    f"DELETE FROM {table} WHERE seq IN (SELECT seq FROM (SELECT seq, row_number() OVER "
                    f"(PARTITION BY {key} ORDER BY seq DESC) AS rn FROM {table} WHERE {where}) WHERE rn > 1)"
                ).fetchall()
        self._deduped_seq = self.seq

    def close(self) -> None:
        with self.lock:
            self.flush()
            self.con.close()

    def __enter__(self) -> DuckStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- flushing -----------------------------------------------------------------------------
    def _flush_keys(self) -> None:
        if not self._new_keys:
            return
        rows = self._new_keys
        table = pa.table({
            "id": pa.array([sid for sid, _ in rows], pa.uint64()),
            "metric": [k.metric for _, k in rows],
            "entity_kind": pa.array([k.entity_kind for _, k in rows], pa.string()),
            "entity_id": pa.array([k.entity_id for _, k in rows], pa.string()),
            "peer_id": pa.array([k.peer_id for _, k in rows], pa.string()),
            "labels": [sc.labels_json(k) for _, k in rows],
        })
        self.con.register("_new_series", table)
        self.con.execute("INSERT INTO series SELECT * FROM _new_series").fetchall()
        self.con.unregister("_new_series")
        self._new_keys = []

    def _flush_samples(self) -> None:
        self._flush_keys()
        if not self._sample_parts:
            return
        parts = self._sample_parts
        sids = np.concatenate([np.full(len(ts), sid, dtype=np.uint64) for sid, ts, _ in parts])
        table = pa.table({
            "series_id": sids,
            "ts": np.concatenate([ts for _, ts, _ in parts]),
            "value": np.concatenate([v for _, _, v in parts]),
        })
        self.append_samples(table)
        self._sample_parts = []
        self._buffered = 0

    def append_samples(self, table: pa.Table | Any) -> None:
        """Append an Arrow table of (series_id, ts, value) as is."""
        self.con.register("_new_samples", table)
        self.con.execute("INSERT INTO samples SELECT series_id, ts, value FROM _new_samples").fetchall()
        self.con.unregister("_new_samples")

    def _flush_spans(self) -> None:
        if not self._spans:
            return
        spans, self._spans = self._spans, []
        cols: dict[str, Any] = {c: list(map(attrgetter(c), spans)) for c in sc.SPAN_COLUMNS}
        dumps = sc.attrs_encoder()
        cols["attrs"] = [dumps(s.attrs) if s.attrs else "{}" for s in spans]
        first = self.next_seq(len(spans))
        cols["seq"] = np.arange(first, first + len(spans), dtype=np.int64)
        table = pa.table({
            **{c: pa.array(cols[c], pa.string()) for c in
               ("trace_id", "span_id", "parent_id", "name", "job_id", "gpu_id", "node_id", "attrs")},
            "start_s": pa.array(cols["start_s"], pa.float64()),
            "end_s": pa.array(cols["end_s"], pa.float64()),
            "rank": pa.array(cols["rank"], pa.int64()),
            "step": pa.array(cols["step"], pa.int64()),
            "seq": cols["seq"],
        })
        self.con.register("_new_spans", table)
        names = ", ".join((*sc.SPAN_COLUMNS, "attrs", "seq"))
        self.con.execute(f"INSERT INTO spans ({names}) SELECT {names} FROM _new_spans").fetchall()
        self.con.unregister("_new_spans")

    def _flush_events(self) -> None:
        if not self._events:
            return
        events, self._events = self._events, []
        first = self.next_seq(len(events))
        table = pa.table({
            **{c: pa.array(list(map(attrgetter(c), events)), pa.string()) for c in
               ("host", "entity_kind", "entity_id", "kind", "message", "severity", "source")},
            "ts": pa.array([e.ts for e in events], pa.float64()),
            "code": pa.array([e.code for e in events], pa.int64()),
            "count": pa.array([e.count for e in events], pa.int64()),
            "last_ts": pa.array([e.last_ts for e in events], pa.float64()),
            "attrs": [sc.dumps_attrs(e.attrs) for e in events],
            "seq": np.arange(first, first + len(events), dtype=np.int64),
        })
        self.con.register("_new_events", table)
        names = ", ".join((*sc.EVENT_COLUMNS, "attrs", "seq"))
        self.con.execute(f"INSERT INTO events ({names}) SELECT {names} FROM _new_events").fetchall()
        self.con.unregister("_new_events")

    # -- small reads that need the write side -------------------------------------------------
    def reports(self) -> list[tuple[str, IngestReport]]:
        self.flush()
        rows = self.con.execute("SELECT source, report FROM reports ORDER BY seq").fetchall()
        return [(str(src), sc.report_from_json(str(rep))) for src, rep in rows]

    def load_openmetrics(self, path: Path, resolver: Resolver | None, report: IngestReport,
                         *, arrival_ts: float | None = None) -> None:
        """Bulk-load a metrics file (``suanli.store.duck_om``); the loader calls this when present."""
        from suanli.store.duck_om import load_openmetrics
        load_openmetrics(self, path, resolver, report, arrival_ts=arrival_ts)

    def load_otlp_jsonl(self, path: Path, resolver: Any, report: IngestReport) -> bool:
        """Load a trace file (``suanli.store.duck_otlp``: bulk for clean OTLP JSON lines, else the
        Python parser); the loader calls this when present. True when the bulk path was taken."""
        from suanli.store.duck_otlp import load_otlp_jsonl
        return load_otlp_jsonl(self, path, resolver, report)

    def stats(self) -> dict[str, int]:
        """Row counts per table (after a flush)."""
        self.flush()
        out: dict[str, int] = {}
        for table in ("series", "samples", "spans", "events"):
            rows = self.con.execute(f"SELECT count(*) FROM {table}").fetchall()
            out[table] = int(rows[0][0]) if rows else 0
        return out

