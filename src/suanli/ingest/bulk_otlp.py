"""Bulk read of an OTLP/JSON-lines trace file, parsed by DuckDB, written through a sink.

DuckDB (an in-memory connection of its own: it is only the parser here) reads the file a chunk of
whole lines at a time (``CHUNK_BYTES``, read straight into an Arrow string array, so memory stays
bounded whatever the file's size), and ``json_transform`` turns each line (one
``ExportTraceServiceRequest``) into typed lists that are flattened to one row per span, in file
order, into a temporary stage table. Python sees only the distinct values: each resource's
attribute list (a handful per chunk) and each distinct span attribute list (a few thousand: the
same ``train.step`` repeats across ranks), which it decodes with the exact helpers of
:mod:`suanli.ingest.otlp` and resolves with the same :func:`~suanli.ingest.otlp.span_ident`; the
results go back as small mapping tables that SQL joins. Each chunk's spans then stream to the
transaction as Arrow batches, each with its position in the chunk. Merged attributes are written
as ``{resource keys not overridden, span keys}``. Phase spans inherit job / rank / step / GPU /
node by walking ``parentSpanId`` hops inside their line (one join per hop, at most
``max_parent_depth``), then from a step span of an earlier line (of this chunk or, carried over,
of an earlier one) that the Python path's bounded FIFO parent cache still holds, as
:class:`~suanli.ingest.otlp.OtlpParser` does.

Exactness guard: whatever the fast path does not model exactly sends the whole file through
:func:`~suanli.ingest.otlp.read_otlp` (which reports each bad line as ``file:LINE: what``):
gzip, a BOM or a pretty-printed document, a line DuckDB cannot parse or without a
``resourceSpans`` list, snake_case or legacy field names, a span whose ``traceId`` / ``spanId`` /
``parentSpanId`` is not a plain 16/32-character string or whose ``name`` is not a plain non-empty
string, start/end times that are not canonical integers or end before start, a step or rank no
int64 holds (``OutOfBounds`` while decoding), a parent id found
twice in one line, a step span id remembered twice within the parent cache's reach (its dict would
then hold fewer entries than the FIFO model), a parent in an earlier line that got its own ident
through that cache, a 64-bit hash collision between two distinct attribute lists, invalid UTF-8.
Attribute values need no guard: every distinct list is decoded by the Python path's own functions.
Chunks are appended as they pass; a fallback in a later chunk aborts the transaction, so nothing
of the fast path's is kept.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from suanli.ingest import otlp as _otlp
from suanli.ingest.files import GZIP_MAGIC
from suanli.ingest.records import IngestReport
from suanli.ingest.sink import POS_FIELD, SPAN_SCHEMA, SpanBatch, Transaction, attrs_encoder
from suanli.inventory import Resolver

__all__ = ["BATCH_ROWS", "PLAIN_IDS", "Decode", "Fallback", "bulk_eligible", "join_stage", "load_otlp_jsonl",
           "span_counts", "span_rows"]

BATCH_ROWS = 1 << 18
"""Span rows per Arrow record batch handed to the sink."""

_ID_KEYS = ("job.id", "host.name", "resource.gpu.id", "framework.pytorch.rank")
_SPAN_SCHEMA = {"traceId": "JSON", "spanId": "JSON", "parentSpanId": "JSON", "name": "JSON",
                "startTimeUnixNano": "VARCHAR", "endTimeUnixNano": "VARCHAR", "attributes": "JSON",
                "parent_span_id": "JSON"}
# snake_case names the Python path reads only when the camelCase one is absent: a missing
# resourceSpans, traceId or spanId already falls back; these would be silently empty here
_SCHEMA = json.dumps({"resourceSpans": [{"resource": {"attributes": "JSON"},
                                         "scopeSpans": [{"spans": [_SPAN_SCHEMA]}],
                                         "scope_spans": "JSON", "instrumentationLibrarySpans": "JSON"}]})


class _Fallback(Exception):
    """The file needs the exact Python parser."""


Fallback = _Fallback

def bulk_eligible(path: Path) -> bool:
    """An uncompressed JSON-lines trace file that does not start with a BOM or a pretty-printed
    document (those go through :func:`read_otlp` directly)."""
    name = path.name.lower()
    if not name.endswith((".jsonl", ".ndjson", ".json")):
        return False
    try:
        with path.open("rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    first = head.lstrip(b" \t\r\n").split(b"\n", 1)[0].strip()
    return not head.startswith((GZIP_MAGIC, b"\xef\xbb\xbf")) and bool(first) and first not in (b"{", b"[")


CHUNK_BYTES = 1 << 28
"""Bytes of whole lines staged at a time: the stage holds about twice this, whatever the file's size."""


def _line_chunks(path: Path, size: int) -> Iterator[tuple[pa.Array, bool]]:
    """The file as Arrow string arrays of whole lines (each with its newline), about ``size`` bytes
    each, and whether it is the last: a line longer than ``size`` is one chunk of its own. The
    lines are read straight into one buffer that the next chunk reuses: an array is valid until
    the next one is asked for (fresh memory costs a page fault per 4 KiB)."""
    buf = bytearray(size)
    with path.open("rb") as fh:
        held = 0                                    # bytes of an unfinished line at the front
        while True:
            if held == len(buf):                    # one line fills the buffer: grow it
                buf = buf + bytearray(len(buf))
            end = held + fh.readinto(memoryview(buf)[held:])
            eof = not fh.peek(1)
            cut = end if eof else buf.rfind(b"\n", 0, end) + 1
            if cut:
                yield _as_lines(memoryview(buf)[:cut]), eof
                buf[:end - cut] = buf[cut:end]
            held = end - cut
            if eof:
                return


_SCAN = 1 << 24
"""Bytes searched for newlines at a time (a small scratch array, reused)."""


def _as_lines(data: memoryview) -> pa.Array:
    """``data`` cut after each newline into one string per line, without copying; invalid UTF-8
    raises (the Python path then reports the line)."""
    raw = np.frombuffer(data, np.uint8)
    ends = np.concatenate([[0], *(np.flatnonzero(raw[i:i + _SCAN] == 10) + (i + 1) for i in range(0, len(raw), _SCAN))])
    if ends[-1] != len(raw):
        ends = np.append(ends, len(raw))
    offsets = ends.astype(np.int64)
    arr = pa.LargeStringArray.from_buffers(len(offsets) - 1, pa.py_buffer(offsets), pa.py_buffer(data))
    arr.validate(full=True)
    return arr


_NONBLANK = "SELECT l FROM _otlp_lines WHERE strlen(l) > 18 OR trim(l, ' \t\r\n') <> ''"
"""Lines that are not blank (the Python path skips blank ones). ``trim`` copies its string, so a line
longer than 18 bytes (newline included) skips it: such a line of whitespace only fails to parse and
sends the file to the Python path, which reads it exactly."""


def _count_lines(con: duckdb.DuckDBPyConnection) -> int:
    return int(con.execute(f"SELECT count(*) FROM ({_NONBLANK})").fetchall()[0][0])


def _stage(con: duckdb.DuckDBPyConnection, first_line: int) -> None:
    """One row per span of ``_otlp_lines`` in file order: line (numbered on from ``first_line``),
    position, resource hash and (on the first span of a resource only) its attribute text, the raw
    span fields. A line that is not JSON, has no ``resourceSpans`` list or a non-object entry in it,
    snake_case or legacy field names, or a U+0001 (the old column splitter, kept as a guard) raises
    here."""
    con.execute(f"""
      CREATE OR REPLACE TEMP TABLE _otlp_stage AS
      SELECT line, row_number() OVER () AS pos, rh, CASE WHEN pi = 1 THEN coalesce(ra, '[]') END AS ra,
             traceId AS tid, spanId AS sid, parentSpanId AS pid, name,
             TRY_CAST(startTimeUnixNano AS BIGINT) AS start_ns, TRY_CAST(endTimeUnixNano AS BIGINT) AS end_ns,
             coalesce(CAST(start_ns AS VARCHAR) = startTimeUnixNano
                      AND CAST(end_ns AS VARCHAR) = endTimeUnixNano, false) AS canonical_ns,
             attributes AS sa, hash(attributes) AS sh, parent_span_id IS NOT NULL AS snake
      FROM (SELECT line, ri, si, generate_subscripts(s.spans, 1) AS pi, rh, ra, unnest(s.spans, recursive := true)
        FROM (SELECT line, ri, generate_subscripts(r.scopeSpans, 1) AS si, hash(r.resource.attributes) AS rh,
                     r.resource.attributes AS ra, unnest(r.scopeSpans) AS s
          FROM (SELECT line, generate_subscripts(t.resourceSpans, 1) AS ri, unnest(t.resourceSpans) AS r
            FROM (SELECT {first_line} + row_number() OVER () AS line, json_transform(l, '{_SCHEMA}') AS t,
                         contains(l, chr(1)) AS x
                  FROM ({_NONBLANK}))
            WHERE (t.resourceSpans IS NOT NULL AND NOT x)
                  OR error('not a plain ExportTraceServiceRequest line') IS NULL)
          WHERE (r IS NOT NULL AND r.scope_spans IS NULL AND r.instrumentationLibrarySpans IS NULL)
                OR error('a resourceSpans entry outside the modelled shape') IS NULL))""").fetchall()


_CHECK = """
  SELECT count(*) FILTER (WHERE snake OR sid IS NULL OR NOT starts_with(sid, '"') OR length(sid) NOT IN (18, 34)
           OR contains(sid, '\\') OR tid IS NULL OR NOT starts_with(tid, '"') OR length(tid) NOT IN (18, 34)
           OR contains(tid, '\\')
           OR (pid IS NOT NULL AND pid <> '""' AND (NOT starts_with(pid, '"') OR length(pid) NOT IN (18, 34)
               OR contains(pid, '\\')))
           OR name IS NULL OR NOT starts_with(name, '"') OR name = '""' OR contains(name, '\\')
           OR NOT canonical_ns OR end_ns < start_ns),
         count(*), max(line)
  FROM _otlp_stage"""


def _check_spans(con: duckdb.DuckDBPyConnection) -> tuple[int, int]:
    """Fallback for a span the Python path would reject or read another way; the span count and
    the highest line number."""
    bad, n, top = con.execute(_CHECK).fetchall()[0]
    if int(bad):
        raise _Fallback("a span outside the modelled shape")
    return int(n), int(top or 0)


def _decode(text: str | None) -> dict[str, Any]:
    """Normalised attributes of one OTLP/JSON attribute list, exactly as the Python path."""
    if text is None:
        return {}
    raw = json.loads(text)
    return _otlp.normalise_attrs(_otlp._json_attrs(raw)) if raw else {}


Decode = Callable[[Any], dict[str, Any]]
"""One distinct attribute list as the stage holds it (JSON text, protobuf bytes) -> normalised attributes."""


def _body(encode: Any, attrs: dict[str, Any]) -> str:
    return str(encode(attrs))[1:-1]


class _Maps:
    """The small tables Python computes from distinct resources and span attribute lists."""

    def __init__(self, con: duckdb.DuckDBPyConnection, resolver: Resolver | None,
                 decode: Decode = _decode, decode_resource: Decode = _decode) -> None:
        self.con = con
        self.resolver = resolver
        self.decode, self.decode_resource = decode, decode_resource
        self.encode = attrs_encoder()
        self.res: dict[int, dict[str, Any]] = {}
        self.res_ident: dict[int, tuple[Any, ...]] = {}
        self.pairs = 0

    def resources(self, known: dict[int, Any] | None = None) -> None:
        """Each resource's attributes and ident: from the stage's ``rh`` / ``ra``, or ``known``
        (resource key -> its attribute list as ``decode_resource`` takes it)."""
        rows = ([(rh, 1, raw) for rh, raw in known.items()] if known is not None else
                self.con.execute("SELECT rh, count(DISTINCT ra), any_value(ra) FROM _otlp_stage "
                                 "WHERE ra IS NOT NULL GROUP BY rh").fetchall())
        if any(int(n) != 1 for _, n, _ in rows):
            raise _Fallback("a resource hash collision")
        for rh, _, text in rows:
            attrs = self.res[int(rh)] = self.decode_resource(text)
            self.res_ident[int(rh)] = _otlp.span_ident(self.resolver, attrs)

    def span_attrs(self) -> None:
        """Per distinct span attribute list: its key set, body text and step; per (resource, key
        set) the resource body without the overridden keys; per (resource, list) with own identity
        keys the ident of the merged attributes."""
        rows = self.con.execute("SELECT sh, count(DISTINCT sa), any_value(sa) FROM _otlp_stage "
                                "WHERE sa IS NOT NULL GROUP BY sh").fetchall()
        if any(int(n) != 1 for _, n, _ in rows):
            raise _Fallback("a span attribute hash collision")
        ksets: dict[frozenset[str], int] = {frozenset(): 0}
        cols: dict[str, list[Any]] = {k: [] for k in ("sh", "kset", "body", "own_id", "own_step", "res_step")}
        own_id_texts: dict[int, dict[str, Any]] = {}
        for sh, _, text in rows:
            own = self.decode(text)
            kset = ksets.setdefault(frozenset(own), len(ksets))
            step = _otlp.to_int(own.get("train.step"))
            has_ident = any(k in own for k in _otlp.IDENTITY_KEYS)
            own_id = any(k in own for k in _ID_KEYS)
            if own_id:
                own_id_texts[int(sh)] = own
            for k, v in zip(cols, (int(sh), kset, _body(self.encode, own), own_id, step,
                                   ("train.step" not in own) if has_ident else step is None), strict=True):
                cols[k].append(v)
        self._register("_otlp_sattr", cols, {"sh": pa.uint64(), "own_step": pa.int64(), "kset": pa.int64()})
        self._bodies(ksets)
        self._pairs(own_id_texts)

    def _bodies(self, ksets: dict[frozenset[str], int]) -> None:
        """Per (resource, key set): the resource ident and its attributes less the overridden keys."""
        names = ("rh", "kset", "body", "job", "rank", "step", "gpu", "node", "bad")
        cols: dict[str, list[Any]] = {k: [] for k in names}
        for rh, res in self.res.items():
            ident = self.res_ident[rh]
            for keys, kid in ksets.items():
                body = _body(self.encode, {k: v for k, v in res.items() if k not in keys})
                for k, v in zip(names, (rh, kid, body, *ident), strict=True):
                    cols[k].append(v)
        self._register("_otlp_rbody", cols, {"rh": pa.uint64(), "kset": pa.int64(), "rank": pa.int64(),
                                             "step": pa.int64()})

    def _pairs(self, own_id_texts: dict[int, dict[str, Any]]) -> None:
        cols: dict[str, list[Any]] = {k: [] for k in ("rh", "sh", "job", "rank", "gpu", "node", "bad")}
        if own_id_texts:
            self.con.register("_otlp_ownid", pa.table({"sh": pa.array(list(own_id_texts), pa.uint64())}))
            pairs = self.con.execute("SELECT DISTINCT s.rh, s.sh FROM _otlp_stage s JOIN _otlp_ownid o "
                                     "ON o.sh = s.sh").fetchall()
            self.con.unregister("_otlp_ownid")
            self.pairs = len(pairs)
            for rh, sh in pairs:
                job, rank, _, gpu, node, bad = _otlp.span_ident(self.resolver, {**self.res[int(rh)], **own_id_texts[int(sh)]})
                for k, v in zip(cols, (int(rh), int(sh), job, rank, gpu, node, bad), strict=True):
                    cols[k].append(v)
        self._register("_otlp_pair", cols, {"rh": pa.uint64(), "sh": pa.uint64(), "rank": pa.int64()})

    def _register(self, name: str, cols: dict[str, list[Any]], types: dict[str, pa.DataType]) -> None:
        table = pa.table({k: pa.array(v, types.get(k, pa.bool_() if k in ("bad", "own_id", "res_step")
                                                    else pa.string())) for k, v in cols.items()})
        self.con.register(f"{name}_arrow", table)
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT * FROM {name}_arrow").fetchall()
        self.con.unregister(f"{name}_arrow")


_OWN = """
  CREATE OR REPLACE TEMP TABLE _otlp_own AS
  SELECT s.line, s.pos, {tid} AS trace_id, {sid} AS span_id, {pid} AS parent_id, {name} AS name, s.start_ns / 1e9 AS start_s, s.end_ns / 1e9 AS end_s,
         {job} AS job, {rank} AS rank,
         CASE WHEN m.sh IS NULL OR m.res_step THEN r.step ELSE m.own_step END AS step,
         {gpu} AS gpu, {node} AS node, {bad} AS bad, s.rh, coalesce(m.kset, 0) AS kset, s.sh
  FROM _otlp_stage s LEFT JOIN _otlp_sattr m ON m.sh = s.sh
  JOIN _otlp_rbody r ON r.rh = s.rh AND r.kset = coalesce(m.kset, 0) {pair}"""


JSON_IDS = {"tid": "lower(s.tid[2:-2])", "sid": "lower(s.sid[2:-2])", "name": "s.name[2:-2]",
            "pid": """CASE WHEN s.pid IS NULL OR s.pid = '""' THEN NULL ELSE lower(s.pid[2:-2]) END"""}
"""How ``_otlp_own`` reads ids and name from the stage: JSON tokens (quoted, checked by ``_CHECK``)."""
PLAIN_IDS = {"tid": "s.tid", "sid": "s.sid", "name": "s.name", "pid": "s.pid"}
"""... or plain text (lower-case hex, the parent NULL when absent)."""


def _own(con: duckdb.DuckDBPyConnection, with_pairs: bool, ids: dict[str, str] | None = None) -> None:
    """``_otlp_own``: each span with its own ident (before inheritance) and merged attributes."""
    cols = ("job", "rank", "gpu", "node", "bad")
    if with_pairs:
        fill = {c: f"CASE WHEN m.own_id THEN p.{c} ELSE r.{c} END" for c in cols}
        pair = "LEFT JOIN _otlp_pair p ON m.own_id AND p.rh = s.rh AND p.sh = s.sh"
    else:
        fill, pair = {c: f"r.{c}" for c in cols}, ""
    con.execute(_OWN.format(pair=pair, **fill, **(ids or JSON_IDS))).fetchall()
    con.execute("DROP TABLE _otlp_stage").fetchall()


_FILL = ("coalesce(w.job, p.job) AS job, coalesce(w.rank, p.rank) AS rank, coalesce(w.step, p.step) AS step, "
         "coalesce(w.gpu, p.gpu) AS gpu, coalesce(w.node, p.node) AS node")
_COMPLETE = "(coalesce(w.job, p.job) IS NOT NULL AND coalesce(w.step, p.step) IS NOT NULL AND coalesce(w.gpu, p.gpu) IS NOT NULL)"


def _walk(con: duckdb.DuckDBPyConnection, max_depth: int) -> None:
    """``_otlp_walk``: the inherited ident of each span that lacks job, step or GPU and has a parent.
    state: 'open' (keep climbing), 'done', 'cross' (the parent is not in the line)."""
    con.execute("""
      CREATE OR REPLACE TEMP TABLE _otlp_walk AS
      SELECT line, pos, parent_id AS pid, job, rank, step, gpu, node, bad, 'open' AS state FROM _otlp_own
      WHERE parent_id IS NOT NULL AND (step IS NULL OR job IS NULL OR gpu IS NULL)""").fetchall()
    total = None
    for _ in range(max_depth):
        rows, open_rows = con.execute("SELECT count(*), count(*) FILTER (WHERE state = 'open') "
                                      "FROM _otlp_walk").fetchall()[0]
        if total is not None and rows != total:      # a parent id twice in one line
            raise _Fallback("a duplicate span id in a line")
        total = rows
        if not open_rows:
            break
        con.execute(f"""
          CREATE OR REPLACE TEMP TABLE _otlp_walk AS
          SELECT w.line, w.pos, CASE WHEN p.span_id IS NULL THEN w.pid ELSE p.parent_id END AS pid, {_FILL}, w.bad,
                 CASE WHEN p.span_id IS NULL THEN 'cross' WHEN {_COMPLETE} OR p.parent_id IS NULL THEN 'done'
                      ELSE 'open' END AS state
          FROM _otlp_walk w LEFT JOIN _otlp_own p ON p.line = w.line AND p.span_id = w.pid
          WHERE w.state = 'open'
          UNION ALL SELECT * FROM _otlp_walk WHERE state <> 'open'""").fetchall()
    con.execute("UPDATE _otlp_walk SET state = 'done' WHERE state = 'open'").fetchall()


class Carry:
    """What the stages of one file hand on, chunk to chunk: the highest line number so far, the
    spans so far (file positions go on from there) and, in ``_otlp_prev``, at least the last
    ``parent_cache_size`` step spans (a contiguous run, the latest ones) with what they inherited:
    the Python path's parent cache, or more of it, as it stands after the chunk."""

    def __init__(self) -> None:
        self.lines = 0
        self.spans = 0
        self.kept = 0

    def candidates(self) -> str:
        """SQL of the earlier chunks' step spans, as ``_otlp_steps`` has them."""
        return " UNION ALL SELECT *, 'done' AS state FROM _otlp_prev" if self.kept else ""


_STEP_COLS = "o.line, {base} + o.pos AS gpos, o.span_id"
_IDENT = ("coalesce(w.job, o.job) AS job, coalesce(w.rank, o.rank) AS rank, coalesce(w.step, o.step) AS step, "
          "coalesce(w.gpu, o.gpu) AS gpu, coalesce(w.node, o.node) AS node")


def _step_spans(base: int, with_state: bool) -> str:
    """SQL of this chunk's step spans (the ones the Python path remembers) with their file position
    and the ident they have after the walk in their line: a span complete on its own needs no join
    (most step spans), the others take what ``_otlp_walk`` found."""
    cols = _STEP_COLS.format(base=int(base))
    own = "o.job, o.rank, o.step, o.gpu, o.node"
    state = (", 'done' AS state", ", w.state") if with_state else ("", "")
    return f"""
      SELECT {cols}, {own}{state[0]} FROM _otlp_own o
      WHERE o.step IS NOT NULL AND NOT (o.parent_id IS NOT NULL AND (o.job IS NULL OR o.gpu IS NULL))
      UNION ALL
      SELECT {cols}, {_IDENT}{state[1]} FROM _otlp_own o JOIN _otlp_walk w USING (pos)
      WHERE o.step IS NOT NULL AND o.parent_id IS NOT NULL AND (o.job IS NULL OR o.gpu IS NULL)"""


def _no_close_repeats(con: duckdb.DuckDBPyConnection, carry: Carry) -> None:
    """The cache model below is a plain FIFO of the last ``parent_cache_size`` step spans; a span
    id remembered twice within that many would make the Python path's dict hold one entry fewer
    (checked over everything carried, so a repeat a little further apart falls back too)."""
    prev = " UNION ALL SELECT span_id FROM _otlp_prev" if carry.kept else ""
    dup = con.execute(f"SELECT count(*) - count(DISTINCT span_id) FROM (SELECT span_id FROM _otlp_own "
                      f"WHERE step IS NOT NULL{prev})").fetchall()[0][0]
    if int(dup):
        raise _Fallback("a step span id repeated within the parent cache")


def _cross(con: duckdb.DuckDBPyConnection, cache_size: int, carry: Carry, last: bool) -> None:
    """Parents in an earlier line: the Python path remembers each step span (with what it
    inherited) in a FIFO cache of ``cache_size``; a span at position p finds a parent there when
    at most ``cache_size`` step spans, the parent included, came before p from the parent on.
    Fill from the parents that cache still holds; a parent that is itself still to be filled from
    an earlier line, or two parents with one id, fall back."""
    cross = int(con.execute("SELECT count(*) FROM _otlp_walk WHERE state = 'cross'").fetchall()[0][0])
    if not cross and last:
        return
    _no_close_repeats(con, carry)
    if not cross:
        return
    base = int(carry.spans)
    con.execute(f"""
      CREATE OR REPLACE TEMP TABLE _otlp_steps AS
      SELECT *, row_number() OVER (ORDER BY gpos) AS ord FROM ({_step_spans(base, True)}{carry.candidates()})""")
    con.execute(f"""
      CREATE OR REPLACE TEMP TABLE _otlp_hits AS
      WITH seen AS (
        SELECT gpos, kind, count(*) FILTER (WHERE kind = 's') OVER (ORDER BY gpos, kind) AS seen
        FROM (SELECT gpos, 's' AS kind FROM _otlp_steps
              UNION ALL SELECT {base} + pos, 'c' FROM _otlp_walk WHERE state = 'cross'))
      SELECT w.line, w.pos, f.job, f.rank, f.step, f.gpu, f.node, f.state
      FROM _otlp_walk w JOIN seen ON seen.kind = 'c' AND seen.gpos = {base} + w.pos
      JOIN _otlp_steps f ON f.span_id = w.pid AND f.line < w.line AND seen.seen - f.ord < {int(cache_size)}
      WHERE w.state = 'cross'""").fetchall()
    hits, chained, multi = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE state = 'cross'), count(*) - count(DISTINCT (line, pos)) "
        "FROM _otlp_hits").fetchall()[0]
    if not int(hits):
        return
    if int(chained) or int(multi):
        raise _Fallback("a cross-line parent filled from another line")
    con.execute(f"""
      UPDATE _otlp_walk w SET {', '.join(f'{c} = coalesce(w.{c}, p.{c})' for c in ('job', 'rank', 'step', 'gpu', 'node'))}
      FROM _otlp_hits p WHERE p.line = w.line AND p.pos = w.pos""").fetchall()


def _remember(con: duckdb.DuckDBPyConnection, cache_size: int, carry: Carry) -> None:
    """Hand this chunk's step spans, with what they now inherit, to the next chunk; what is carried
    is cut back to the last ``cache_size`` when it grows past twice that."""
    if not carry.kept:
        con.execute(f"CREATE OR REPLACE TEMP TABLE _otlp_prev AS {_step_spans(carry.spans, False)}").fetchall()
    else:
        con.execute(f"INSERT INTO _otlp_prev {_step_spans(carry.spans, False)}").fetchall()
    carry.kept = int(con.execute("SELECT count(*) FROM _otlp_prev").fetchall()[0][0])
    if carry.kept > 2 * cache_size:
        con.execute(f"CREATE OR REPLACE TEMP TABLE _otlp_prev AS SELECT * FROM _otlp_prev "
                    f"ORDER BY gpos DESC LIMIT {int(cache_size)}").fetchall()
        carry.kept = int(cache_size)


def _counts(con: duckdb.DuckDBPyConnection) -> tuple[int, int]:
    """(spans, unresolved spans)."""
    n, own_unresolved = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE (bad OR job IS NULL) AND NOT (parent_id IS NOT NULL "
        "AND (step IS NULL OR job IS NULL OR gpu IS NULL))) FROM _otlp_own").fetchall()[0]
    walked = con.execute("SELECT count(*) FILTER (WHERE bad OR job IS NULL) FROM _otlp_walk").fetchall()[0][0]
    return int(n), int(own_unresolved) + int(walked)


_ROWS = """
  SELECT o.trace_id, o.span_id, o.parent_id, o.name, o.start_s, o.end_s,
         coalesce(w.job, o.job) AS job_id, coalesce(w.rank, o.rank) AS rank, coalesce(w.step, o.step) AS step,
         coalesce(w.gpu, o.gpu) AS gpu_id, coalesce(w.node, o.node) AS node_id,
         '{' || concat_ws(',', nullif(r.body, ''), nullif(m.body, '')) || '}' AS attrs, o.pos - 1 AS pos
  FROM _otlp_own o LEFT JOIN _otlp_walk w ON w.pos = o.pos LEFT JOIN _otlp_sattr m ON m.sh = o.sh
  JOIN _otlp_rbody r ON r.rh = o.rh AND r.kset = o.kset"""
_WITH_POS = SPAN_SCHEMA.append(POS_FIELD)


def _rows(con: duckdb.DuckDBPyConnection) -> pa.RecordBatchReader:
    """The spans as Arrow record batches of ``SPAN_SCHEMA`` and their position in the file (``pos``:
    the joins do not keep file order, and sorting would cost more than the sink numbering by it)."""
    reader = con.sql(_ROWS).to_arrow_reader(BATCH_ROWS)
    return pa.RecordBatchReader.from_batches(_WITH_POS, (b.cast(_WITH_POS) for b in reader))


def load_otlp_jsonl(path: Path, txn: Transaction, resolver: Resolver | None, report: IngestReport,
                    config: _otlp.OtlpConfig | None = None, chunk_bytes: int | None = None) -> bool:
    """Append one OTLP/JSON-lines file's spans to ``txn`` exactly as ``read_otlp`` would read
    them, and count them in ``report``; False (``report`` untouched, ``txn`` to be aborted) when
    the file needs the Python parser (see the module docstring). The file is staged
    ``chunk_bytes`` (default ``CHUNK_BYTES``) of lines at a time; each chunk's spans go to ``txn``
    before the next is read."""
    cfg = config or _otlp.OtlpConfig()
    path = Path(path)
    if not bulk_eligible(path):
        return False
    con = duckdb.connect(":memory:")
    carry = Carry()
    n = unresolved = nonblank = 0
    try:
        con.execute("SET enable_progress_bar = false")
        for lines, last in _line_chunks(path, chunk_bytes or CHUNK_BYTES):
            con.register("_otlp_lines", pa.table({"l": lines}))
            _stage(con, carry.lines)
            spans, top = _check_spans(con)
            nonblank += spans or _count_lines(con)
            con.unregister("_otlp_lines")
            del lines
            join_stage(con, resolver, cfg, carry=carry, last=last)
            carry.lines, carry.spans = max(carry.lines, top), carry.spans + spans
            got, bad = _counts(con)
            n, unresolved = n + got, unresolved + bad
            txn.append_spans(SpanBatch(_rows(con)))
    except (_Fallback, duckdb.Error, UnicodeDecodeError, ValueError, pa.ArrowException, OSError):
        return False
    finally:
        con.close()
    if nonblank:
        report.add("spans", n)
    if unresolved:
        report.add_unresolved("spans", unresolved)
    return True


def join_stage(con: duckdb.DuckDBPyConnection, resolver: Resolver | None, cfg: _otlp.OtlpConfig,
               decode: Decode = _decode, decode_resource: Decode = _decode,
               ids: dict[str, str] | None = None, resources: dict[int, Any] | None = None,
               carry: Carry | None = None, last: bool = True) -> None:
    """From ``_otlp_stage`` (one row per span: ``line`` = request, ``pos`` = file order, ``rh`` / ``ra``
    the resource's key and, on at least one of its rows, its attribute list; ids, name, times; ``sa``
    / ``sh`` the span's attribute list and its hash) to ``_otlp_own`` and ``_otlp_walk``, from which
    :func:`span_counts` and :func:`span_rows` read. ``resources`` (``rh`` -> attribute list) stands
    in for the stage's ``ra`` column. ``carry`` holds what earlier chunks of the file left (lines
    numbered after theirs); ``last``: no chunk follows."""
    carry = carry or Carry()
    maps = _Maps(con, resolver, decode, decode_resource)
    maps.resources(resources)
    maps.span_attrs()
    _own(con, maps.pairs > 0, ids)
    _walk(con, cfg.max_parent_depth)
    _cross(con, cfg.parent_cache_size, carry, last)
    if not last:
        _remember(con, cfg.parent_cache_size, carry)


span_counts = _counts
span_rows = _rows
