"""The DuckDB store: the default :class:`~suanli.ingest.sink.Sink` and :class:`~suanli.store.api.Store`.

Ingest writes through transactions (``transaction(source, fingerprint)``: one file's rows, mark
and report in one commit, :mod:`suanli.store.duck.txn`). ``add_samples`` / ``add_spans`` /
``add_events`` are the same for records that belong to no file: they are buffered and committed
together by ``flush`` (every read flushes first). Last write wins for a repeated (series, ts):
samples are append-only and reads keep the latest row (dedupe at query: loads stay fast); spans
and events are deduplicated when they are committed, so a repeated load double-counts nothing.
Out-of-order input is fine: reads sort by time. Reopening a file finds everything (series keys
are reloaded into memory on open: one row per series, not per sample). Schema:
:mod:`suanli.store.duck.schema`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from suanli.errors import InputError
from suanli.ingest.records import Event, IngestReport, SeriesKey, Span
from suanli.ingest.sink import EventBatch, KeptInventory, SampleBatch, SpanBatch
from suanli.store.api import F64
from suanli.store.duck import schema as sc
from suanli.store.duck.reads import DuckReads
from suanli.store.duck.series import SeriesIds
from suanli.store.duck.txn import DuckTransaction
from suanli.store.duck.version import open_schema

__all__ = ["DuckStore", "DuckStoreConfig"]


@dataclass(frozen=True)
class DuckStoreConfig:
    """Buffering and engine settings of :class:`DuckStore`."""

    flush_rows: int = 2_000_000
    """Buffered samples (or spans/events x 20) that are written at once, inside a transaction or
    outside one (``add_samples``: then committed)."""
    threads: int | None = None
    """DuckDB worker threads; None keeps DuckDB's default (all cores)."""
    memory_limit: str | None = "2GB"
    """DuckDB memory limit (it spills to disk beyond it); None keeps DuckDB's default."""
    read_memory_limit: str | None = "1GB"
    """The limit of a file opened read-only (``diagnose``, ``check``, ``rca``), in place of
    ``memory_limit``: what DuckDB holds there is mostly blocks of the file it cached, which a
    diagnosis has no use for once a job's spans are read; on the 1,280-node hour the ledger's peak
    went from 8.2 to 6.9 GB at the same speed."""
    allocator_background_threads: bool = True
    """DuckDB's allocator hands freed memory back from background threads instead of when a later
    task ends (the 1,280-node ledger's peak: 8.2 -> 6.9 GB alone, 6.6 GB with ``read_memory_limit``)."""


def _connect(path: str | Path | None, read_only: bool) -> duckdb.DuckDBPyConnection:
    """A connection; a file another process writes (``suanli ingest``), one that is not DuckDB,
    or one that cannot be read is an InputError naming it."""
    try:
        return duckdb.connect(":memory:" if path is None else str(path), read_only=read_only)
    except duckdb.Error as err:
        first = (str(err).splitlines() or [type(err).__name__])[0]
        if "lock" in first.lower():
            raise InputError("busy: another process is writing it (a `suanli ingest`?); run this again "
                             f"when it has finished ({first})", file=str(path)) from err
        raise InputError(f"cannot open the store: {first}", file=str(path)) from err


class DuckStore(DuckReads):
    """``DuckStore(path)`` opens or creates a DuckDB file; ``DuckStore(None)`` is in memory;
    ``read_only=True`` opens an existing store for reading only (``diagnose``, ``check``, ``rca``).
    A file that is not a suanli store is refused before anything is written into it
    (:mod:`suanli.store.duck.version`)."""

    def __init__(self, path: str | Path | None = None, config: DuckStoreConfig | None = None, *,
                 read_only: bool = False) -> None:
        self.path = None if path is None else Path(path)
        self.config = config or DuckStoreConfig()
        self.read_only = read_only and path is not None
        self.con = _connect(path, self.read_only)
        try:
            if self.config.threads:
                self.con.execute(f"SET threads = {int(self.config.threads)}")
            limit = self.config.read_memory_limit if self.read_only else self.config.memory_limit
            if limit:
                self.con.execute(f"SET memory_limit = '{limit}'")
            if self.config.allocator_background_threads:
                self.con.execute("SET allocator_background_threads = true")
            self.con.execute("SET enable_progress_bar = false")
            self.schema_version = open_schema(self.con, sc.DDL, str(path or ":memory:"), self.read_only)
        except BaseException:
            self.con.close()
            raise
        self.lock = threading.RLock()
        self.ids = SeriesIds()
        self.ids.load(self.con)
        self.keys_by_id = self.ids.keys_by_id
        self.seq = self._max_seq()
        self.commits = 0
        """Transactions committed through this store: what a cached read (``time_range``) checks."""
        self._time_range: tuple[int, tuple[float, float] | None] = (-1, None)
        self._txn: DuckTransaction | None = None
        self._samples: list[tuple[SeriesKey, F64, F64]] = []
        self._buffered = 0
        self._spans: list[Span] = []
        self._events: list[Event] = []

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

    def ids_of(self, key: SeriesKey) -> int | None:
        return self.ids.primary.get(key)

    def metric_ids(self, metric: str) -> Sequence[int]:
        return self.ids.by_metric.get(metric, ())

    # -- the sink -----------------------------------------------------------------------------
    def transaction(self, source: str, fingerprint: str | None = None) -> DuckTransaction:
        """A transaction for the rows of ``source`` (``ingest.sink.Transaction``); one at a time."""
        with self.lock:
            if self._txn is not None:
                raise RuntimeError(f"a transaction ({self._txn.source!r}) is open already")
            self._txn = DuckTransaction(self, source, fingerprint)
            return self._txn

    def end_transaction(self, txn: DuckTransaction) -> None:
        """Called by ``txn`` when it committed or aborted."""
        if self._txn is txn:
            self._txn = None

    def kept_inventory(self) -> KeptInventory | None:
        text = self.inventory_text()
        return None if text is None else KeptInventory(text, self.inventory_source() or "inventory.yaml")

    def put_inventory(self, text: str, source: str) -> None:
        with self.transaction(source) as txn:
            self.con.execute("DELETE FROM meta WHERE key IN ('inventory', 'inventory_source')").fetchall()
            self.con.execute("INSERT INTO meta VALUES ('inventory', ?), ('inventory_source', ?)",
                             [text, source]).fetchall()
            txn.commit()

    def re_resolve(self, rekey: Callable[[SeriesKey], SeriesKey]) -> int:
        """Resolve again the series that resolved to no entity (``rekey``: against the inventory
        just put); the ones that now resolve take their entity, in one transaction, and merge on
        read with the same series loaded resolved. Returns how many now resolve."""
        with self.lock:
            self.flush()
            changes = {sid: new for sid, key in self.keys_by_id.items()
                       if key.entity_id is None and (new := rekey(key)).entity_id is not None}
            if changes:
                with self.transaction("re-resolve against the new inventory") as txn:
                    self.ids.rekey(self.con, changes)
                    txn.commit()
                self.ids.apply_rekey(changes)
            return len(changes)

    def file_loaded(self, fingerprint: str) -> bool:
        """Whether a file with this fingerprint (``ingest.plan.fingerprint``) was committed."""
        with self.lock:
            rows = self.con.execute("SELECT count(*) FROM files WHERE fingerprint = ?", [fingerprint]).fetchall()
        return bool(rows and rows[0][0])

    def loaded_files(self) -> list[str]:
        """Paths of the files committed, in load order."""
        with self.lock:
            rows = self.con.execute("SELECT path FROM files ORDER BY seq").fetchall()
        return [str(r[0]) for r in rows]

    def inventory_text(self) -> str | None:
        with self.lock:
            rows = self.con.execute("SELECT value FROM meta WHERE key = 'inventory'").fetchall()
        return str(rows[0][0]) if rows else None

    def inventory_source(self) -> str | None:
        with self.lock:
            rows = self.con.execute("SELECT value FROM meta WHERE key = 'inventory_source'").fetchall()
        return str(rows[0][0]) if rows else None

    # -- records of no file ------------------------------------------------------------------
    def add_samples(self, key: SeriesKey, ts: F64, values: F64) -> None:
        """Buffer samples of one series (any order, duplicates allowed: last write wins)."""
        ts = np.asarray(ts, dtype=np.float64)
        values = np.asarray(values, dtype=np.float64)
        if len(ts) != len(values):
            raise ValueError(f"{key.metric}: {len(ts)} timestamps but {len(values)} values")
        if not len(ts):
            return
        with self.lock:
            self._samples.append((key, ts, values))
            self._buffered += len(ts)
            if self._buffered >= self.config.flush_rows:
                self.flush()

    def add_spans(self, spans: Iterable[Span]) -> None:
        self._buffer(spans, self._spans)

    def add_events(self, events: Iterable[Event]) -> None:
        self._buffer(events, self._events)

    def _buffer(self, records: Iterable[Span] | Iterable[Event], into: list[Any]) -> None:
        with self.lock:
            for record in records:
                into.append(record)
                if len(into) >= self.config.flush_rows // 20:
                    self.flush()

    def add_report(self, source: str, report: IngestReport) -> None:
        """Remember what one ingest run loaded, left unresolved and rejected."""
        with self.transaction(source) as txn:
            txn.commit(report)

    def flush(self) -> None:
        """Commit the buffered records of no file (a no-op inside an open transaction)."""
        with self.lock:
            if self._txn is not None or not (self._samples or self._spans or self._events):
                return
            samples, spans, events = list(self._samples), list(self._spans), list(self._events)
            for buffered in (self._samples, self._spans, self._events):
                buffered.clear()                     # in place: _buffer keeps appending to them
            self._buffered = 0
            with self.transaction("") as txn:
                if samples:
                    txn.append_samples(SampleBatch.from_series(samples))
                if spans:
                    txn.append_spans(SpanBatch.from_spans(spans))
                if events:
                    txn.append_events(EventBatch.from_events(events))
                txn.commit()

    def close(self) -> None:
        with self.lock:
            if self._txn is not None:
                self._txn.abort()
            if not self.read_only:
                self.flush()
            self.con.close()

    def __enter__(self) -> DuckStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- small reads that need the write side -------------------------------------------------
    def reports(self) -> list[tuple[str, IngestReport]]:
        with self.lock:
            self.flush()
            rows = self.con.execute("SELECT source, report FROM reports ORDER BY seq").fetchall()
        return [(str(src), sc.report_from_json(str(rep))) for src, rep in rows]

    def stats(self) -> dict[str, int]:
        """Row counts per table (after a flush)."""
        out: dict[str, int] = {}
        with self.lock:
            self.flush()
            for table in ("series", "samples", "spans", "events"):
                rows = self.con.execute(f"SELECT count(*) FROM {table}").fetchall()
                out[table] = int(rows[0][0]) if rows else 0
        return out
