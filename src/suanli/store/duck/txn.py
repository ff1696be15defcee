"""One DuckDB transaction of :class:`~suanli.store.duck.DuckStore`: the ``ingest.sink.Transaction``.

Everything a transaction appends (samples, spans, events, new series), the file's fingerprint
and its report are written between one ``BEGIN`` and one ``COMMIT`` on the store's connection, so
a crash or ``kill -9`` at any point leaves the whole file or nothing of it (DuckDB's write-ahead
log makes the commit atomic). Spans and events are deduplicated inside it, before the commit.
The store's lock is held from the start of a transaction to its end: one at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import TracebackType
from typing import TYPE_CHECKING

import duckdb
import numpy as np
import pyarrow as pa

from suanli.ingest.records import IngestReport, SeriesKey
from suanli.ingest.sink import POS_FIELD, EventBatch, Rows, SampleBatch, SpanBatch
from suanli.store.duck import schema as sc

if TYPE_CHECKING:
    from suanli.store.duck.store import DuckStore

__all__ = ["DuckTransaction"]


class DuckTransaction:
    """Open one with ``DuckStore.transaction(source, fingerprint)``, as a context manager."""

    def __init__(self, store: DuckStore, source: str, fingerprint: str | None) -> None:
        self.store, self.source, self.fingerprint = store, source, fingerprint
        self.con = store.con
        self._staged: dict[int, SeriesKey] = {}
        self._parts: list[pa.Table] = []
        self._buffered = 0
        self._touched: set[str] = set()
        self._seq0 = store.seq
        self._open = True
        store.lock.acquire()
        try:
            self.con.execute("BEGIN TRANSACTION").fetchall()
        except BaseException:
            store.lock.release()
            raise

    # -- appending --------------------------------------------------------------------------
    def append_samples(self, batch: SampleBatch) -> None:
        self._check_open()
        remap = self.store.ids.stage(batch.series, self._staged)
        if isinstance(batch.rows, pa.Table) and not remap:
            self._parts.append(batch.rows)
            self._buffered += batch.rows.num_rows
            if self._buffered >= self.store.config.flush_rows:
                self._flush_samples()
            return
        self._flush_samples()                        # keep write order: what is buffered goes first
        self._insert_samples(batch.rows, remap)

    def _flush_samples(self) -> None:
        if self._parts:
            parts, self._parts, self._buffered = self._parts, [], 0
            self._insert_samples(pa.concat_tables(parts), {})

    def _insert_samples(self, rows: Rows, remap: dict[int, int]) -> None:
        """Append in the order given; ids in ``remap`` are written as their new id."""
        sid = "series_id"
        if remap:
            whens = " ".join(f"WHEN {int(a)}::UBIGINT THEN {int(b)}::UBIGINT" for a, b in remap.items())
            sid = f"CASE series_id {whens} ELSE series_id END"
        self._insert("samples", rows, f"{sid}, ts, value", "series_id, ts, value")

    def append_spans(self, batch: SpanBatch) -> None:
        self._check_open()
        self._append_numbered("spans", batch.rows, sc.SPAN_COLUMNS)

    def append_events(self, batch: EventBatch) -> None:
        self._check_open()
        self._append_numbered("events", batch.rows, sc.EVENT_COLUMNS)

    def _append_numbered(self, table: str, rows: Rows, columns: tuple[str, ...]) -> None:
        """Append rows with the store's write sequence numbers: in the order given, or by their
        ``pos`` column (``ingest.sink.POS_FIELD``)."""
        names = ", ".join((*columns, "seq"))
        if POS_FIELD.name in rows.schema.names:
            first = self.store.seq + 1
            self.store.seq += self._insert(table, rows, f"{', '.join(columns)}, {first} + pos", names)
        else:
            self._insert(table, _numbered(rows, self.store), names, names)
        self._touched.add(table)

    def _insert(self, table: str, rows: Rows | pa.RecordBatchReader, select: str, into: str) -> int:
        """Rows inserted."""
        name = f"_new_{table}"
        self.con.register(name, rows)
        try:
            return int(self.con.execute(f"INSERT INTO {table} ({into}) SELECT {select} FROM {name}").fetchall()[0][0])
        finally:
            self.con.unregister(name)

    # -- ending -----------------------------------------------------------------------------
    def commit(self, report: IngestReport | None = None) -> None:
        self._check_open()
        try:
            self._flush_samples()
            self.store.ids.commit(self.con, self._staged)
            if report is not None:
                self.con.execute("INSERT INTO reports VALUES (?, ?, ?)",
                                 [self.store.next_seq(1), self.source, sc.report_to_json(report)]).fetchall()
            if self.fingerprint is not None:
                self.con.execute("INSERT INTO files VALUES (?, ?, ?)",
                                 [self.fingerprint, self.source, self.store.next_seq(1)]).fetchall()
            self._dedupe()
            self.con.execute("COMMIT").fetchall()
        except BaseException:
            self.abort()
            raise
        self.store.commits += 1
        self.store.ids.apply(self._staged)
        self._close()

    def _dedupe(self) -> None:
        """Drop all but the last write (highest ``seq``) of each span and event identity, in the
        tables this transaction wrote to (``schema.DEDUPE``); a grouped count first, which is half
        the work of the window and usually finds nothing."""
        for table, key, where in sc.DEDUPE:
            if table not in self._touched:
                continue
            repeated = self.con.execute(f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {where} "
                                        f"GROUP BY {key} HAVING count(*) > 1)").fetchall()[0][0]
            if repeated:
                self.con.execute(
                    f"DELETE FROM {table} WHERE seq IN (SELECT seq FROM (SELECT seq, row_number() OVER "
                    f"(PARTITION BY {key} ORDER BY seq DESC) AS rn FROM {table} WHERE {where}) WHERE rn > 1)"
                ).fetchall()

    def abort(self) -> None:
        if not self._open:
            return
        try:
            self.con.execute("ROLLBACK").fetchall()
        except duckdb.Error:             # a failed COMMIT has rolled back already
            pass
        finally:
            self.store.seq = self._seq0
            self._close()

    def _close(self) -> None:
        self._open = False
        self._parts, self._staged = [], {}
        self.store.end_transaction(self)
        self.store.lock.release()

    def _check_open(self) -> None:
        if not self._open:
            raise RuntimeError(f"the transaction of {self.source!r} is closed")

    def __enter__(self) -> DuckTransaction:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.abort()                                 # a no-op after commit


def _numbered(rows: Rows, store: DuckStore) -> pa.RecordBatchReader:
    """The rows with a ``seq`` column taken from the store's write sequence, batch by batch."""
    reader = rows.to_reader() if isinstance(rows, pa.Table) else rows
    schema = reader.schema.append(pa.field("seq", pa.int64()))

    def batches() -> Iterator[pa.RecordBatch]:
        for batch in reader:
            first = store.next_seq(batch.num_rows)
            seq = pa.array(np.arange(first, first + batch.num_rows, dtype=np.int64))
            yield pa.RecordBatch.from_arrays([*batch.columns, seq], schema=schema)

    return pa.RecordBatchReader.from_batches(schema, batches())
