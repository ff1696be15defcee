"""Where ingest writes: the :class:`Sink` protocol and the columnar batches it takes.

A sink (the DuckDB store, later remote write) receives samples, spans and events as Arrow columns,
never one Python object per record, inside a :class:`Transaction`. A transaction carries the rows
of one file (or of one scrape, one remote-write request: then without a fingerprint) and commits
them together with the file's "loaded" mark and its ingest report, or not at all: a crash at any
point leaves either the whole file or nothing of it, and a re-run loads exactly what is missing.

>>> with sink.transaction("metrics.om", fingerprint="...") as txn:
...     txn.append_samples(SampleBatch.from_series([(key, ts, values)]))
...     txn.commit(report)                 # rows, mark and report in one commit
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from types import TracebackType
from typing import Any, NamedTuple, Protocol, TypeAlias

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from suanli.ingest.records import Event, IngestReport, SeriesKey, Span

__all__ = ["EVENT_SCHEMA", "POS_FIELD", "SAMPLE_SCHEMA", "SPAN_SCHEMA", "EventBatch", "KeptInventory", "Rows", "SampleBatch",
           "Sink", "SpanBatch", "Transaction", "attrs_encoder", "batched", "labels_json", "series_id"]

F64 = npt.NDArray[np.float64]
Rows: TypeAlias = "pa.Table | pa.RecordBatchReader"
"""A batch's columns: a table, or a stream of record batches (a bulk reader's, read once)."""

_S, _F, _I = pa.string(), pa.float64(), pa.int64()
SAMPLE_SCHEMA = pa.schema([("series_id", pa.uint64()), ("ts", _F), ("value", _F)])
SPAN_SCHEMA = pa.schema([("trace_id", _S), ("span_id", _S), ("parent_id", _S), ("name", _S), ("start_s", _F),
                         ("end_s", _F), ("job_id", _S), ("rank", _I), ("step", _I), ("gpu_id", _S),
                         ("node_id", _S), ("attrs", _S)])
"""``records.Span`` as columns, ``attrs`` as JSON text."""
EVENT_SCHEMA = pa.schema([("ts", _F), ("host", _S), ("entity_kind", _S), ("entity_id", _S), ("kind", _S),
                          ("message", _S), ("code", _I), ("severity", _S), ("source", _S), ("count", _I),
                          ("last_ts", _F), ("attrs", _S)])
"""``records.Event`` as columns, ``attrs`` as JSON text."""
POS_FIELD = pa.field("pos", _I)
"""Optional last column of span and event rows that do not come in read order: each row's
position in read order, 0 to n - 1 over all the rows of one append."""


_NEEDS_ESCAPE = re.compile(r'[^\x20\x21\x23-\x5b\x5d-\x7e]')
"""A character ``json.dumps`` writes other than as itself: quote, backslash, control, non-ASCII."""


def labels_json(key: SeriesKey) -> str:
    """A key's labels as JSON text (a list of [name, value] pairs), exactly as ``json.dumps``
    writes it (series ids hash this text); joined directly when no character needs escaping."""
    pairs = key.labels
    if _NEEDS_ESCAPE.search("".join(k + v for k, v in pairs)) is None:
        return "[" + ",".join(f'["{k}","{v}"]' for k, v in pairs) + "]"
    return json.dumps([list(p) for p in pairs], separators=(",", ":"))


@functools.lru_cache(maxsize=1 << 20)
def series_id(key: SeriesKey) -> int:
    """A stable 64-bit id of a series key (BLAKE2b of its name, labels and entity ids). Cached
    for a million keys: serve scrapes the same keys every round, and at 10,240 GPUs (317,433
    series) a cache of 65,536 missed on every sample."""
    text = "\0".join((key.metric, labels_json(key), key.entity_kind or "", key.entity_id or "", key.peer_id or ""))
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


def _unique_id(key: SeriesKey, taken: dict[int, SeriesKey]) -> int:
    """The key's id in ``taken`` (added when new); the next free one if another key holds it."""
    sid = series_id(key)
    while taken.get(sid, key) != key:                 # never in practice: 64-bit ids
        sid = (sid + 1) % 2**64
    taken[sid] = key
    return sid


def _json_default(obj: Any) -> Any:
    if isinstance(obj, bytes):
        return obj.hex()
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    return str(obj)


def attrs_encoder() -> Callable[[dict[str, Any]], str]:
    """JSON text of an attribute dict (NaN/Infinity as Python's json writes them, so they round-trip;
    bytes as hex, sets as lists, anything else as its text). Build once per batch."""
    return json.JSONEncoder(default=_json_default, separators=(",", ":")).encode


@dataclass(frozen=True)
class SampleBatch:
    """Samples as columns (``SAMPLE_SCHEMA``). ``series`` maps every id in ``rows`` to its key; ids
    are the producer's (a key may come with several, two keys never share one within a
    transaction), the sink keeps them or maps them to its own."""

    series: Mapping[int, SeriesKey]
    rows: Rows

    @classmethod
    def from_series(cls, parts: Sequence[tuple[SeriesKey, F64, F64]]) -> SampleBatch:
        """One batch of ``(key, ts, values)`` parts (ids by :func:`series_id`, made unique)."""
        series: dict[int, SeriesKey] = {}
        ids = [_unique_id(key, series) for key, _, _ in parts]
        sids = np.concatenate([np.full(len(ts), i, dtype=np.uint64) for i, (_, ts, _) in zip(ids, parts, strict=True)]
                              or [np.empty(0, np.uint64)])
        ts = np.concatenate([np.asarray(t, dtype=np.float64) for _, t, _ in parts] or [np.empty(0)])
        values = np.concatenate([np.asarray(v, dtype=np.float64) for _, _, v in parts] or [np.empty(0)])
        table = pa.Table.from_arrays([pa.array(sids), pa.array(ts), pa.array(values)], schema=SAMPLE_SCHEMA)
        return cls(series, table)


@dataclass(frozen=True)
class SpanBatch:
    """Spans as columns (``SPAN_SCHEMA``), in the order they were read, or in any order with a
    ``POS_FIELD`` column that gives it."""

    rows: Rows

    @classmethod
    def from_spans(cls, spans: Sequence[Span]) -> SpanBatch:
        return cls(_table(spans, SPAN_SCHEMA))


@dataclass(frozen=True)
class EventBatch:
    """Events as columns (``EVENT_SCHEMA``), in the order they were read, or in any order with a
    ``POS_FIELD`` column that gives it."""

    rows: Rows

    @classmethod
    def from_events(cls, events: Sequence[Event]) -> EventBatch:
        return cls(_table(events, EVENT_SCHEMA))


def _table(records: Sequence[Span] | Sequence[Event], schema: pa.Schema) -> pa.Table:
    """Records as the columns of ``schema``, their attributes as JSON text (``{}`` when empty)."""
    encode = attrs_encoder()
    cols: dict[str, Any] = {c: list(map(attrgetter(c), records)) for c in schema.names if c != "attrs"}
    cols["attrs"] = [encode(r.attrs) if r.attrs else "{}" for r in records]
    return pa.Table.from_pydict(cols, schema=schema)


def batched(items: Iterable[Any], size: int) -> Iterable[list[Any]]:
    """Lists of up to ``size`` items."""
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


class KeptInventory(NamedTuple):
    """The inventory a sink keeps: its text and where it came from."""

    text: str
    source: str


class Transaction(Protocol):
    """The rows of one file or one live batch; use as a context manager: leaving it without
    :meth:`commit` (or by an exception) aborts, and nothing of it is kept."""

    def append_samples(self, batch: SampleBatch) -> None: ...

    def append_spans(self, batch: SpanBatch) -> None: ...

    def append_events(self, batch: EventBatch) -> None: ...

    def commit(self, report: IngestReport | None = None) -> None:
        """Keep every row appended, the file's mark (when it has a fingerprint) and ``report``
        (under the transaction's source), all at once."""

    def abort(self) -> None: ...

    def __enter__(self) -> Transaction: ...

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None: ...


class Sink(Protocol):
    """What ingest writes into (``suanli.store.duck.DuckStore``; later remote write)."""

    def kept_inventory(self) -> KeptInventory | None:
        """The inventory kept from an earlier ingest (single files are resolved against it)."""

    def put_inventory(self, text: str, source: str) -> None:
        """Keep the inventory the data is resolved against (replacing an earlier one)."""

    def re_resolve(self, rekey: Callable[[SeriesKey], SeriesKey]) -> int:
        """Apply ``rekey`` to every series kept unresolved; keep the ones that now resolve
        (after a new inventory). Returns how many now resolve."""

    def file_loaded(self, fingerprint: str) -> bool:
        """Whether a file with this fingerprint (``suanli.ingest.plan.fingerprint``) was committed."""

    def transaction(self, source: str, fingerprint: str | None = None) -> Transaction:
        """A new transaction for the rows of ``source`` (a file's path, a scrape target); with a
        ``fingerprint`` its commit marks that file loaded."""
