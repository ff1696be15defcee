"""Bulk read of an OTLP protobuf trace file (one ``ExportTraceServiceRequest`` or a varint-length-
delimited stream of them) into the same ``spans`` rows and report as :func:`~suanli.ingest.otlp.read_otlp`.

Each request is parsed twice by upb, both in C: once with the real ``opentelemetry.proto`` classes
(which validates it exactly as the Python path does, UTF-8 included, and gives the resources), and
once with a wire-compatible schema of our own whose ``ScopeSpans.spans`` is ``repeated bytes``, so
each span comes out as its raw bytes without a Python object per field. The spans of up to
``CHUNK_SPANS`` spans are joined into one buffer and their fields are located by a vectorised
(numpy) walk of the protobuf wire format, all spans in lock step, one field per step: trace, span
and parent ids (hex in bulk through a lookup table), name, start and end times, and the byte range
of the attribute entries. Arrow arrays are cut from that buffer by offsets, and the rows go into the
stage table of :mod:`suanli.ingest.bulk_otlp`, ``STAGE_SPANS`` spans at a time (the parent cache
carried from stage to stage as for JSON lines, each stage's spans appended before the next is
staged; the file's bytes themselves are read whole), whose SQL does the rest as for JSON lines: each
distinct resource and each distinct span attribute list is decoded once, by the Python path's own
``_attrs_proto`` (the attribute bytes parse as a ``Span`` holding only those attributes), ids are
resolved once per distinct list, phases inherit from their step span within the request, then
across requests.

Spans the Python path drops (no span id or name, end before start) are dropped here with the same
``file:WHERE: span I: ...`` reasons. Exactness guard: anything else sends the whole file through
:func:`~suanli.ingest.otlp.read_otlp`: a file (or one message of a stream) upb will not parse, a
stream whose lengths do not chain, an empty file, a known span field in an unexpected wire type or a
group, a start or end time of 2^63 ns or more, and whatever :mod:`suanli.ingest.bulk_otlp`'s own
guard catches (a parent id twice in one request, a step or rank no int64 holds, ...).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import numpy.typing as npt
import pyarrow as pa

from suanli.ingest import bulk_otlp
from suanli.ingest import otlp as _otlp
from suanli.ingest.files import open_bytes
from suanli.ingest.otlp_decode import _attrs_proto, split_delimited
from suanli.ingest.records import IngestReport
from suanli.ingest.sink import SpanBatch, Transaction
from suanli.inventory import Resolver

__all__ = ["CHUNK_SPANS", "load_otlp_proto", "proto_eligible"]

CHUNK_SPANS = 1 << 18
"""Spans walked at a time (bounds the temporary arrays: a few dozen bytes per span)."""
STAGE_SPANS = 1 << 21
"""Spans staged and joined at a time (the DuckDB stage of :mod:`bulk_otlp`; the spans go to the
transaction before the next group is staged)."""

I64 = npt.NDArray[np.int64]
_HEX = np.frombuffer(b"0123456789abcdef", np.uint8)
_BAD = "span_id/name missing or end before start"
# (field number, wire type) of the Span fields read; any other wire type for them falls back
_TID, _SID, _PID, _NAME, _START, _END, _ATTRS = 1, 2, 4, 5, 7, 8, 9
_EXPECT = {_TID: 2, _SID: 2, _PID: 2, _NAME: 2, _START: 1, _END: 1, _ATTRS: 2}


class _Fallback(Exception):
    """The file needs the exact Python parser."""


def proto_eligible(path: Path) -> bool:
    """A trace file ``read_otlp`` reads as protobuf (by extension, else by content)."""
    name = path.name.removesuffix(".gz").lower()
    try:
        with open_bytes(path) as reader:
            return _otlp._is_proto(name, reader)
    except (OSError, EOFError, zlib.error):
        return False


def _classes() -> tuple[Any, Any, Any, Any]:
    """(real request, raw request, Span, Resource) message classes."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
    from opentelemetry.proto.resource.v1 import resource_pb2
    from opentelemetry.proto.trace.v1 import trace_pb2

    global _CLASSES
    if _CLASSES is None:
        f = descriptor_pb2.FieldDescriptorProto
        fdp = descriptor_pb2.FileDescriptorProto(name="suanli_otlp_raw.proto", package="suanli_raw", syntax="proto3")
        for msg, field, number, kind in (("Scope", "spans", 2, None), ("Resource", "scope_spans", 2, "Scope"),
                                         ("Request", "resource_spans", 1, "Resource")):
            m = fdp.message_type.add(name=msg)
            if kind is None:
                m.field.add(name=field, number=number, label=f.LABEL_REPEATED, type=f.TYPE_BYTES)
            else:
                m.field.add(name=field, number=number, label=f.LABEL_REPEATED, type=f.TYPE_MESSAGE,
                            type_name=f".suanli_raw.{kind}")
        pool = descriptor_pool.DescriptorPool()
        pool.Add(fdp)
        raw = message_factory.GetMessageClass(pool.FindMessageTypeByName("suanli_raw.Request"))
        _CLASSES = (trace_service_pb2.ExportTraceServiceRequest, raw, trace_pb2.Span, resource_pb2.Resource)
    return _CLASSES


_CLASSES: tuple[Any, Any, Any, Any] | None = None


def _varint(buf: npt.NDArray[np.uint8], p: I64) -> tuple[npt.NDArray[np.uint64], I64]:
    """Varints at positions ``p`` (all spans at once) and the positions after them."""
    b = buf[p]
    v = (b & 0x7F).astype(np.uint64)
    p = p + 1
    more = np.flatnonzero(b >= 0x80)
    shift = 7
    while more.size:
        if shift > 63:
            raise _Fallback("an overlong varint")
        b = buf[p[more]]
        v[more] |= (b & 0x7F).astype(np.uint64) << np.uint64(shift)
        p[more] += 1
        more = more[b >= 0x80]
        shift += 7
    return v, p


class _Fields:
    """Where each span's fields lie in the chunk buffer (offset and length; -1 / 0 when absent)."""

    def __init__(self, n: int, starts: I64) -> None:
        self.off = {k: starts.copy() for k in _EXPECT}
        self.len = {k: np.zeros(n, np.int64) for k in _EXPECT}
        self.attr_first = np.full(n, -1, np.int64)
        self.attr_end = starts.copy()


def _walk_fields(buf: npt.NDArray[np.uint8], starts: I64, stops: I64) -> _Fields:
    """One step per field, every span whose bytes are not used up advancing at once. Later
    occurrences of a field overwrite earlier ones (protobuf's last-one-wins)."""
    n = len(starts)
    out = _Fields(n, starts)
    pos = starts.copy()
    act = np.flatnonzero(pos < stops)
    while act.size:
        tag_at = pos[act]
        tag, p = _varint(buf, tag_at)
        fn, wt = (tag >> np.uint64(3)).astype(np.int64), (tag & np.uint64(7)).astype(np.int64)
        vlen = np.zeros(len(act), np.int64)
        nxt = p.copy()
        is_len = np.flatnonzero(wt == 2)
        if is_len.size:
            ln, q = _varint(buf, p[is_len])
            p[is_len] = q
            vlen[is_len] = ln.astype(np.int64)
            nxt[is_len] = q + vlen[is_len]
        is_var = np.flatnonzero(wt == 0)
        if is_var.size:
            nxt[is_var] = _varint(buf, p[is_var])[1]
        nxt[wt == 1] += 8
        nxt[wt == 5] += 4
        if np.any((wt == 3) | (wt == 4) | (wt > 5)) or np.any(nxt > stops[act]) or np.any(vlen < 0):
            raise _Fallback("a span outside the modelled wire shape")
        for field, want in _EXPECT.items():
            hit = np.flatnonzero(fn == field)
            if not hit.size:
                continue
            if np.any(wt[hit] != want):
                raise _Fallback("a span field in an unexpected wire type")
            rows = act[hit]
            if field == _ATTRS:
                first = out.attr_first[rows]
                out.attr_first[rows] = np.where(first < 0, tag_at[hit], first)
                out.attr_end[rows] = nxt[hit]
            else:
                out.off[field][rows] = p[hit]
                out.len[field][rows] = vlen[hit] if want == 2 else 8
        pos[act] = nxt
        act = act[nxt < stops[act]]
    return out


def _cut(data: pa.Buffer, off: I64, length: I64) -> pa.LargeBinaryArray:
    """The byte ranges ``[off, off + length)`` of ``data`` (ascending, not overlapping) as an array."""
    n = len(off)
    if not n:
        return pa.array([], pa.large_binary())
    bounds = np.empty(2 * n, np.int64)
    bounds[0::2], bounds[1::2] = off, off + length
    spread = pa.LargeBinaryArray.from_buffers(pa.large_binary(), 2 * n - 1, [None, pa.py_buffer(bounds), data])
    return spread.take(pa.array(np.arange(0, 2 * n - 1, 2)))


def _hex(data: pa.Buffer, off: I64, length: I64, valid: npt.NDArray[np.bool_] | None = None) -> pa.Array:
    """Lower-case hex of each range (``bytes.hex()``), null where not ``valid``."""
    raw = _cut(data, off, length)
    if not len(raw):
        return pa.array([], pa.large_string())
    offsets = np.frombuffer(raw.buffers()[1], np.int64, len(raw) + 1)
    body = np.frombuffer(raw.buffers()[2], np.uint8, int(offsets[-1])) if offsets[-1] else np.empty(0, np.uint8)
    text = np.empty(2 * len(body), np.uint8)
    text[0::2], text[1::2] = _HEX[body >> 4], _HEX[body & 15]
    mask = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.LargeStringArray.from_buffers(len(raw), pa.py_buffer(offsets * 2), pa.py_buffer(text), mask)


class _Reader:
    """Requests -> stage chunks (Arrow tables), bad-span reasons, resources by serialized key."""

    def __init__(self, stage: Callable[[list[pa.Table], bool], None]) -> None:
        self.real, self.raw, _, _ = _classes()
        self.stage = stage
        self.resources: dict[bytes, int] = {}
        self.reasons: list[str] = []
        self.chunks: list[pa.Table] = []
        self.held: list[pa.Table] | None = None         # a full group, staged once the next one fills
        self.spans: list[bytes] = []
        self.scopes: list[tuple[int, int, int]] = []       # (line, resource id, spans) per scope
        self.where: dict[int, str] = {}
        self.pos = 0

    def request(self, data: bytes, line: int, where: str) -> None:
        try:
            real = self.real.FromString(data)
            raw = self.raw.FromString(data)
        except Exception as exc:                        # DecodeError and the like: the Python path rejects it
            raise _Fallback("a message upb will not parse") from exc
        if len(raw.resource_spans) != len(real.resource_spans):
            raise _Fallback("resource lists differ")
        self.where[line] = where
        for rs_real, rs_raw in zip(real.resource_spans, raw.resource_spans, strict=True):
            rid = self.resources.setdefault(rs_real.resource.SerializeToString(), len(self.resources))
            for ss in rs_raw.scope_spans:
                spans = list(ss.spans)
                self.scopes.append((line, rid, len(spans)))
                self.spans.extend(spans)
        if len(self.spans) >= CHUNK_SPANS:
            self.flush()
            if sum(t.num_rows for t in self.chunks) >= STAGE_SPANS:
                if self.held is not None:
                    self.stage(self.held, False)
                self.held, self.chunks = self.chunks, []

    def finish(self) -> None:
        """Stage what is left: the held group, then the last one."""
        self.flush()
        if self.held is not None and self.chunks:
            self.stage(self.held, False)
        elif self.held is not None:
            self.chunks = self.held
        self.held = None
        self.stage(self.chunks, True)
        self.chunks = []

    def flush(self) -> None:
        if not self.spans:
            self.scopes = []
            return
        spans, scopes, self.spans, self.scopes = self.spans, self.scopes, [], []
        lens = np.fromiter(map(len, spans), np.int64, len(spans))
        data = b"".join(spans) + bytes(16)               # padding: a varint read past a span stays inside
        stops = np.cumsum(lens)
        starts = stops - lens
        u8 = np.frombuffer(data, np.uint8)
        f = _walk_fields(u8, starts, stops)
        start_ns, end_ns = (np.where(f.len[k] > 0, _u64(u8, f.off[k]), np.uint64(0)) for k in (_START, _END))
        if np.any(start_ns >= np.uint64(2**63)) or np.any(end_ns >= np.uint64(2**63)):
            raise _Fallback("a time no int64 holds")
        per = np.array([m[2] for m in scopes], np.int64)
        scope_of = np.repeat(np.arange(len(scopes)), per)
        bad = (f.len[_SID] == 0) | (f.len[_NAME] == 0) | (end_ns < start_ns)
        if bad.any():
            index = np.arange(len(spans)) - (np.cumsum(per) - per)[scope_of]
            for i in np.flatnonzero(bad):
                self.reasons.append(f"{self.where[scopes[scope_of[i]][0]]}: span {index[i]}: {_BAD}")
        keep = np.flatnonzero(~bad)
        kept_scope = scope_of[keep]
        buf = pa.py_buffer(data)
        has_attrs = f.attr_first[keep] >= 0
        a0 = np.where(has_attrs, f.attr_first[keep], starts[keep])
        sa = _cut(buf, a0, np.where(has_attrs, f.attr_end[keep] - a0, 0))
        off, ln = {k: v[keep] for k, v in f.off.items()}, {k: v[keep] for k, v in f.len.items()}
        self.chunks.append(pa.table({
            "line": pa.array(np.array([m[0] for m in scopes], np.int64)[kept_scope]),
            "pos": pa.array(np.arange(self.pos + 1, self.pos + 1 + len(keep), dtype=np.int64)),
            "rh": pa.array(np.array([m[1] for m in scopes], np.uint64)[kept_scope]),
            "tid": _hex(buf, off[_TID], ln[_TID]),
            "sid": _hex(buf, off[_SID], ln[_SID]),
            "pid": _hex(buf, off[_PID], ln[_PID], ln[_PID] > 0),
            "name": _cut(buf, off[_NAME], ln[_NAME]).cast(pa.large_string()),
            "start_ns": pa.array(start_ns[keep].astype(np.int64)),
            "end_ns": pa.array(end_ns[keep].astype(np.int64)),
            "sa": pa.compute.if_else(pa.array(has_attrs), sa, pa.scalar(None, pa.large_binary())),
        }))
        self.pos += len(keep)


def _read(path: Path, reader: _Reader) -> int:
    """All requests of the file into ``reader``; the number of requests (0: an empty file)."""
    with open_bytes(path) as fh:
        data = fh.read()
    if not data:
        return 0
    real = reader.real
    try:
        real.FromString(data)
        parts, wheres = [data], [f"{path.name}:1"]
    except Exception:                                   # not one message: a delimited stream?
        got = split_delimited(data)
        if got is None:
            raise _Fallback("neither a request nor a delimited stream") from None
        parts, wheres = got, [f"{path.name}:message {i}" for i in range(1, len(got) + 1)]
    del data
    for line, (part, where) in enumerate(zip(parts, wheres, strict=True), 1):
        reader.request(part, line, where)
    return len(parts)


def load_otlp_proto(path: Path, txn: Transaction, resolver: Resolver | None, report: IngestReport,
                    config: _otlp.OtlpConfig | None = None) -> bool:
    """Append one protobuf trace file's spans to ``txn`` exactly as ``read_otlp`` would read them,
    and count them (and its dropped spans) in ``report``; False (``report`` untouched, ``txn`` to be
    aborted) when the file needs the Python parser (see the module docstring)."""
    cfg = config or _otlp.OtlpConfig()
    path = Path(path)
    if not proto_eligible(path):
        return False
    _, _, span_cls, resource_cls = _classes()

    def span_attrs(raw: bytes) -> dict[str, Any]:
        return _otlp.normalise_attrs(_attrs_proto(span_cls.FromString(raw).attributes))

    def resource_attrs(raw: bytes) -> dict[str, Any]:
        return _otlp.normalise_attrs(_attrs_proto(resource_cls.FromString(raw).attributes))

    con = duckdb.connect(":memory:")
    carry = bulk_otlp.Carry()
    n = unresolved = 0

    def stage(chunks: list[pa.Table], last: bool) -> None:
        nonlocal n, unresolved
        spans = _stage(con, chunks, carry.spans)
        bulk_otlp.join_stage(con, resolver, cfg, span_attrs, resource_attrs, bulk_otlp.PLAIN_IDS,
                             {rid: key for key, rid in reader.resources.items()}, carry, last)
        carry.spans += spans
        got, bad = bulk_otlp.span_counts(con)
        n, unresolved = n + got, unresolved + bad
        txn.append_spans(SpanBatch(bulk_otlp.span_rows(con)))

    reader = _Reader(stage)
    try:
        con.execute("SET enable_progress_bar = false")
        if not _read(path, reader):
            return False
        reader.finish()
    except (_Fallback, bulk_otlp.Fallback, duckdb.Error, ValueError, pa.ArrowException, OSError, EOFError,
            zlib.error):
        return False
    finally:
        con.close()
    for reason in reader.reasons:
        report.reject(reason)
    report.add("spans", n)
    if unresolved:
        report.add_unresolved("spans", unresolved)
    return True


def _stage(con: duckdb.DuckDBPyConnection, chunks: list[pa.Table], before: int) -> int:
    """``_otlp_stage`` as :func:`bulk_otlp.join_stage` reads it (``sh``: DuckDB's hash of ``sa``;
    ``pos`` numbered from 1 in this group, ``before`` spans having been staged); its span count."""
    table = pa.concat_tables(chunks) if chunks else _EMPTY
    con.register("_otlp_chunks", table)
    con.execute(f"CREATE OR REPLACE TEMP TABLE _otlp_stage AS SELECT line, pos - {int(before)} AS pos, rh, tid, "
                "sid, pid, name, start_ns, end_ns, sa, hash(sa) AS sh FROM _otlp_chunks").fetchall()
    con.unregister("_otlp_chunks")
    return int(table.num_rows)


_EMPTY = pa.table({"line": pa.array([], pa.int64()), "pos": pa.array([], pa.int64()), "rh": pa.array([], pa.uint64()),
                   "tid": pa.array([], pa.large_string()), "sid": pa.array([], pa.large_string()),
                   "pid": pa.array([], pa.large_string()), "name": pa.array([], pa.large_string()),
                   "start_ns": pa.array([], pa.int64()), "end_ns": pa.array([], pa.int64()),
                   "sa": pa.array([], pa.large_binary())})


def _u64(buf: npt.NDArray[np.uint8], off: I64) -> npt.NDArray[np.uint64]:
    """Little-endian fixed64 values at ``off``."""
    out: npt.NDArray[np.uint64] = buf[off[:, None] + np.arange(8)].copy().view("<u8").ravel()
    return out
