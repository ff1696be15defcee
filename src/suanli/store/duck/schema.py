"""DuckDB schema of :class:`suanli.store.duck.DuckStore` and its (de)serialising helpers.

Tables
    ``series``   one row per series id: ``id`` (64-bit: the producer's, DuckDB's ``hash()`` of the
                 exposed series text for bulk-read files, ``ingest.sink.series_id`` for streamed
                 ones; a fresh one where a producer's id already names another series),
                 ``metric``, ``entity_kind``, ``entity_id``, ``peer_id``, ``labels`` (JSON list of
                 [name, value] pairs, interned once). One key may own several ids (the same series
                 written with its labels in another order); reads merge them.
    ``samples``  ``series_id``, ``ts`` (epoch s), ``value``. Append-only, in write order (DuckDB
                 keeps insertion order), so for a repeated (series, ts) the row with the highest
                 ``rowid`` is the last write and wins (applied at query).
    ``spans``    ``ingest.sink.SPAN_SCHEMA`` (``attrs`` as JSON) and ``seq`` (write order).
    ``events``   ``ingest.sink.EVENT_SCHEMA`` (``attrs`` as JSON) and ``seq``.
    ``meta``     key/value text: ``inventory``, ``inventory_source``.
    ``reports``  one JSON ``IngestReport`` per ingest run and source.
    ``files``    the fingerprint of every file loaded (``suanli.ingest.plan.fingerprint``): a
                 file loaded again unchanged is skipped. Written in the same transaction as the
                 file's rows and report.

Spans are deduplicated on (``trace_id``, ``span_id``) and events on (``source``, ``ts``, ``kind``,
``entity_id``, ``message``), the last write (highest ``seq``) winning, in the transaction that wrote
them, so reads see each once and a repeated or overlapping load double-counts nothing.
"""

from __future__ import annotations

import json
from typing import Any

from suanli.ingest.records import IngestReport, SeriesKey
from suanli.ingest.sink import EVENT_SCHEMA, SPAN_SCHEMA

DDL = """
CREATE TABLE IF NOT EXISTS series (
    id UBIGINT, metric VARCHAR, entity_kind VARCHAR, entity_id VARCHAR, peer_id VARCHAR,
    labels VARCHAR);
CREATE TABLE IF NOT EXISTS samples (series_id UBIGINT, ts DOUBLE, value DOUBLE);
CREATE TABLE IF NOT EXISTS spans (
    trace_id VARCHAR, span_id VARCHAR, parent_id VARCHAR, name VARCHAR, start_s DOUBLE,
    end_s DOUBLE, job_id VARCHAR, rank BIGINT, step BIGINT, gpu_id VARCHAR, node_id VARCHAR,
    attrs VARCHAR, seq BIGINT);
CREATE TABLE IF NOT EXISTS events (
    ts DOUBLE, host VARCHAR, entity_kind VARCHAR, entity_id VARCHAR, kind VARCHAR,
    message VARCHAR, code BIGINT, severity VARCHAR, source VARCHAR, count BIGINT,
    last_ts DOUBLE, attrs VARCHAR, seq BIGINT);
CREATE TABLE IF NOT EXISTS meta (key VARCHAR, value VARCHAR);
CREATE TABLE IF NOT EXISTS reports (seq BIGINT, source VARCHAR, report VARCHAR);
CREATE TABLE IF NOT EXISTS files (fingerprint VARCHAR, path VARCHAR, seq BIGINT);
"""

SPAN_COLUMNS: tuple[str, ...] = tuple(SPAN_SCHEMA.names)
EVENT_COLUMNS: tuple[str, ...] = tuple(EVENT_SCHEMA.names)
DEDUPE = (("spans", "trace_id, span_id", "trace_id IS NOT NULL AND span_id IS NOT NULL"),
          ("events", "source, ts, kind, entity_id, message", "TRUE"))
"""(table, identity, which rows have one): all but the last write of an identity are dropped."""


def loads_attrs(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    out = json.loads(text)
    return out if isinstance(out, dict) else {}


def key_from_row(metric: str, kind: str | None, entity: str | None, peer: str | None,
                 labels: str, shared: dict[Any, Any] | None = None) -> SeriesKey:
    """The key of one ``series`` row. With ``shared`` (one dict for all the rows of a load), equal
    strings and label pairs are one object each: a store's keys repeat a few metric names, kinds and
    label pairs (``modelName``, ``namespace``, ``job``) across hundreds of thousands of series."""
    pairs = tuple((str(k), str(v)) for k, v in json.loads(labels))
    if shared is None:
        return SeriesKey(metric, pairs, kind, entity, peer)
    one = shared.setdefault
    return SeriesKey(one(metric, metric), tuple(one(pr, pr) for pr in pairs), kind and one(kind, kind),
                     entity and one(entity, entity), peer and one(peer, peer))


def report_to_json(report: IngestReport) -> str:
    return json.dumps({"loaded": report.loaded, "unresolved": report.unresolved,
                       "rejected": report.rejected, "reasons": report.reasons})


def report_from_json(text: str) -> IngestReport:
    raw = json.loads(text)
    return IngestReport(loaded=dict(raw.get("loaded", {})), unresolved=dict(raw.get("unresolved", {})),
                        rejected=int(raw.get("rejected", 0)), reasons=list(raw.get("reasons", [])))
