"""Bulk read of an OpenMetrics / Prometheus text file, parsed by DuckDB, written through a sink.

DuckDB (an in-memory connection of its own: it is only the parser here) splits each line at ``}``
with its parallel CSV reader (three columns: label text, the `` value [ts]`` rest, anything after
a second ``}``); SQL turns the rest into numbers. Two passes over the file:

A. group by a 64-bit hash of the series text: the distinct series (a few thousand) with their
   line counts, and the comment lines (no number parsing in this pass);
B. stream (hash, ts, value) of every sample line in file order as Arrow record batches into the
   transaction (``SampleBatch``); the hash is the series id (each series resolved once in Python,
   exactly as the streaming parser does). No join and no filter on parsed numbers: line order is
   kept, so the last line of a repeated (series, ts) is the last write and wins; a line that is
   not a plain sample gets a NULL value or ts, which the stream checks batch by batch.

When anything is not a plain sample line (a series text that does not parse, an exemplar, a
``_created`` series of a counter family, content after ``# EOF``, a last line without its
newline in a file not ending in ``# EOF``, or pass B inserting fewer lines than pass A counted:
a bad value, a timestamp outside the config's range) or DuckDB cannot read the file (invalid
UTF-8, a corrupt ``.gz``), :func:`load_openmetrics` returns False: the caller aborts the
transaction and streams the whole file through the parser instead, which reports each bad line
with its exact number. Both paths give the same samples and rejects.
Series texts are told apart by ``hash()`` (64-bit): a collision among a file's distinct series
has a probability around n²/2⁶⁵ (1e-11 for 20,000 series); the sink maps an id it already gives
to another series to one of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

from suanli.ingest.files import tail_bytes
from suanli.ingest.openmetrics import OpenMetricsConfig, OpenMetricsParser
from suanli.ingest.openmetrics_file import eof_in_tail, file_format, file_mtime
from suanli.ingest.records import IngestReport, SeriesKey
from suanli.ingest.sink import SAMPLE_SCHEMA, SampleBatch, Transaction
from suanli.inventory import Resolver
from suanli.metric_catalog import DCGM_BLANK

__all__ = ["BATCH_ROWS", "load_openmetrics"]

BATCH_ROWS = 1 << 20
"""Sample rows per Arrow record batch handed to the sink."""


def _csv(path: Path) -> str:
    quoted = str(path).replace("'", "''")
    return (f"read_csv('{quoted}', columns={{'a': 'VARCHAR', 'b': 'VARCHAR', 'c': 'VARCHAR'}}, "
            "header=false, delim='}', quote='', escape='', auto_detect=false, strict_mode=false, "
            "null_padding=true, nullstr='\x02', new_line='\\n', compression='auto')")


def _sample_rows(path: Path, ts_scale: float, stamp: float, cfg: OpenMetricsConfig) -> str:
    """(series_id, ts, value) for every line pass A calls a sample; a line that is not a plain
    sample gets a NULL value or ts (checked as the rows stream by: cheaper than a filter, which
    DuckDB would inline and so parse every number twice). The rest after the series is split once
    at its spaces, each check a column of the projection below the numbers (a check written inside
    the CASE of a number is evaluated again there)."""
    b = DCGM_BLANK
    prefix = cfg.dcgm_prefix.replace("'", "''")
    rows = f"""
      SELECT CASE WHEN b IS NOT NULL THEN a ELSE a[1:strpos(a, ' ') - 1] END AS st,
             CASE WHEN b IS NOT NULL THEN b ELSE a[strpos(a, ' '):] END AS rest, c
      FROM {_csv(path)}
      WHERE NOT (a IS NOT NULL AND starts_with(a, '#')) AND (b IS NOT NULL OR strpos(a, ' ') > 0)"""
    split = f"""
      SELECT st, parts, len(parts) AS n,
             st <> '' AND c IS NULL AND len(parts) IN (2, 3) AND parts[1] = '' AND NOT contains(rest, '_')
             AND NOT contains(rest, chr(9)) AS plain
      FROM (SELECT st, rest, c, string_split(rest, ' ') AS parts FROM ({rows}))"""
    nums = f"""
      SELECT st, CASE WHEN plain THEN TRY_CAST(parts[2] AS DOUBLE) END AS v,
             CASE WHEN n = 2 THEN {stamp!r} ELSE TRY_CAST(parts[3] AS DOUBLE) * {ts_scale!r} END AS ts
      FROM ({split})"""
    return f"""
      SELECT hash(st) AS series_id, ts,
             CASE WHEN starts_with(st, '{prefix}') AND (v >= {b.float_min!r}
                  OR (v >= {b.int32_min!r} AND v <= {b.int32_max!r})) THEN 'NaN'::DOUBLE ELSE v END AS value
      FROM ({nums})"""


Group = tuple[str, int | None, str | None, str | None, int]
"""One line kind of pass A: (kind, series hash, comment text, series text, lines)."""


def _pass_a(con: duckdb.DuckDBPyConnection, path: Path) -> list[Group]:
    """The file's lines grouped: a sample line by the hash of its series text (pass B's series
    id), a comment by its text, any other line by its text before the first space (no number
    parsing here: pass B counts the lines it could not take). The key is cheap for the common
    line, ``name{labels} rest``, whose columns past the first ``}`` are not read here: a comment
    with a ``}`` is known by its text before it (enough for a HELP, the only one that may hold
    one). What a group is, is told from one of its lines."""
    groups = con.execute(f"""
      SELECT b IS NULL AS single,
             CASE WHEN b IS NOT NULL OR starts_with(a, '#') THEN hash(a)
                  WHEN strpos(a, ' ') > 0 THEN hash(a[1:strpos(a, ' ') - 1])
                  ELSE hash(a) END AS h,
             any_value(a), count(*)
      FROM {_csv(path)} GROUP BY ALL""").fetchall()
    return [_group(*g) for g in groups]


def _group(single: bool, h: int, a: str | None, n: int) -> Group:
    if a is not None and a.startswith("#"):
        if not single and a.split(None, 2)[1:2] != ["HELP"]:
            return "bad", None, None, None, n          # a TYPE or UNIT holding a "}": the parser says
        return "comment", None, a, None, n
    if not single:
        return "ok", h, None, a, n
    if a is None or not a.strip(" "):                   # DuckDB's trim: spaces only
        return "blank", None, None, None, n
    space = a.find(" ")
    if space < 0 or "{" in a[:space]:                   # no value, or a label set never closed
        return "bad", None, None, None, n
    return "ok", h, None, a[:space], n


def load_openmetrics(path: Path, txn: Transaction, resolver: Resolver | None, report: IngestReport,
                     *, arrival_ts: float | None = None, config: OpenMetricsConfig | None = None) -> bool:
    """Append one metrics file's samples to ``txn`` and count them in ``report``; False (``report``
    untouched, ``txn`` to be aborted) when the file needs the streaming parser."""
    cfg = config or OpenMetricsConfig()
    tail = tail_bytes(path)
    fmt = file_format(path, cfg, tail=tail)
    stamp = arrival_ts if arrival_ts is not None else file_mtime(path)
    if tail is None or _cut(tail) or not cfg.min_ts_s <= stamp <= cfg.max_ts_s:
        return False                                   # only explicit timestamps are range-checked
    con = duckdb.connect(":memory:")
    try:
        con.execute("SET enable_progress_bar = false")
        groups = _pass_a(con, path)
        plan = _plan(groups, path, fmt, resolver, stamp, cfg, tail)
        if plan is None:
            return False
        keys, eof_seen = plan
        rows = con.sql(_sample_rows(path, 1.0 if fmt == "openmetrics" else 1e-3, stamp, cfg))
        stream = _Checked(rows.to_arrow_reader(BATCH_ROWS), cfg)
        txn.append_samples(SampleBatch({h: key for h, (key, _) in keys.items()}, stream.reader()))
    except (duckdb.Error, UnicodeDecodeError):          # not UTF-8, a corrupt .gz: the parser says where
        return False
    finally:
        con.close()
    if not stream.clean or stream.rows != sum(n for _, n in keys.values()):
        return False                                   # some line was not a plain sample
    _count(report, keys, path, fmt == "openmetrics" and not eof_seen)
    return True


def _count(report: IngestReport, keys: dict[int, tuple[SeriesKey, int]], path: Path, no_eof: bool) -> None:
    report.add("samples", sum(n for _, n in keys.values()))
    report.add("series", len(keys))
    unresolved = sum(1 for k, _ in keys.values() if k.entity_id is None)
    if unresolved:
        report.add_unresolved("series", unresolved)
    if no_eof and keys:
        report.reject(f"{path.name}: OpenMetrics input does not end in # EOF")


class _Checked:
    """Pass-B record batches on their way to the sink, each checked: a NULL value or timestamp (a
    line that was not a plain sample), a timestamp out of range, or a read error ends the stream
    early with ``clean`` False (the caller then streams the file instead)."""

    def __init__(self, batches: pa.RecordBatchReader, cfg: OpenMetricsConfig) -> None:
        self.batches, self.cfg = batches, cfg
        self.rows = 0
        self.clean = True

    def reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(SAMPLE_SCHEMA, self._batches())

    def _batches(self) -> Iterator[pa.RecordBatch]:
        try:
            for batch in self.batches:
                if not self._plain(batch):
                    self.clean = False
                    return
                self.rows += batch.num_rows
                yield batch.cast(SAMPLE_SCHEMA)
        except (duckdb.Error, pa.ArrowException, UnicodeDecodeError):
            self.clean = False

    def _plain(self, batch: pa.RecordBatch) -> bool:
        ts = batch.column("ts")
        if batch.column("value").null_count or ts.null_count:
            return False
        t = ts.to_numpy()
        return bool(np.all(np.isfinite(t) & (t >= self.cfg.min_ts_s) & (t <= self.cfg.max_ts_s)))


Plan = tuple[dict[int, tuple[SeriesKey, int]], bool]   # series by hash, whether # EOF was seen


def _plan(groups: list[Group], path: Path, fmt: str, resolver: Resolver | None,
          stamp: float, cfg: OpenMetricsConfig, tail: bytes) -> Plan | None:
    """Series keys by hash, or None when the file needs the streaming parser."""
    scratch = IngestReport()
    parser = OpenMetricsParser(source=path.name, resolver=resolver, report=scratch,
                               fmt="openmetrics" if fmt == "openmetrics" else "prometheus",
                               arrival_ts=stamp, config=cfg)
    eof = 0
    for kind, _, comment, _, n in groups:
        if kind == "bad":
            return None
        if kind == "comment" and comment is not None:
            if comment.rstrip() == "# EOF":
                eof += n
            else:
                list(parser.feed([(0, comment)]))
    if eof > 1 or (eof == 1 and eof_in_tail(tail) != "last") or scratch.rejected:
        return None
    keys: dict[int, tuple[SeriesKey, int]] = {}
    for kind, h, _, st, n in groups:
        if kind != "ok" or h is None or st is None:
            continue
        text = st if st.find("{") < 0 else st + "}"
        key = parser.series_for_text(text)
        if key is None:             # a bad series text, or a _created series: whether a line is
            return None             # one depends on where its # TYPE stands, which only streaming sees
        keys[int(h)] = (key, int(n))
    return keys, eof == 1


def _cut(tail: bytes) -> bool:
    """The last line has no newline and is neither blank nor ``# EOF`` (the streaming parser
    rejects it as truncated)."""
    last = tail.rsplit(b"\n", 1)[-1]
    return bool(last.strip()) and last.strip() != b"# EOF"


