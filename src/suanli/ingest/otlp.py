"""OTLP training spans -> :class:`~suanli.ingest.records.Span` (spec/telemetry.md, "Training spans").

Reads the OpenTelemetry Collector file-exporter format (one ``ExportTraceServiceRequest`` as
OTLP/JSON per line: hex ids, 64-bit integers as strings) and binary protobuf requests (one message
per file, or a stream of length-delimited messages). Resource and span attributes are merged, the
span's own win; phase spans (``forward``, ``allreduce``, ...) inherit job, rank, step, GPU and node
from their ``train_step`` parent, which may come after them in the batch.

Parsing never raises on bad input: a bad line or span is ``report.reject("file:LINE: what")`` and
the rest is kept; a span whose job, GPU or host does not resolve (or that has no job at all) is
kept with None ids and counted in ``report.unresolved["spans"]``.
"""

from __future__ import annotations

import gzip
import io
import json
import math
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from suanli.ingest.bounded import OutOfBounds, bounded_int
from suanli.ingest.files import open_bytes
from suanli.ingest.otlp_decode import (
    Batch,
    RawSpan,
    any_value_json,
    decode_request,
    span_id_json,
    split_delimited,
)
from suanli.ingest.records import IngestReport, Span
from suanli.ingest.resolve import gpu_of, job_of, node_of
from suanli.inventory import Resolver

__all__ = ["IDENTITY_KEYS", "Ident", "OtlpConfig", "OtlpParser", "normalise_attrs", "parse_otlp_json_line",
           "parse_otlp_proto", "read_otlp", "span_ident", "to_int"]

_PROTO_SUFFIXES = (".pb", ".bin", ".binpb", ".protobuf")
_JSON_SUFFIXES = (".json", ".jsonl", ".ndjson")
_ALIASES = {"nccl_group_id": "nccl.group_id", "nccl_rank": "nccl.rank"}
IDENTITY_KEYS = ("job.id", "framework.pytorch.rank", "resource.gpu.id", "host.name", "nccl_group_id",
                  "nccl_rank")


@dataclass(frozen=True)
class OtlpConfig:
    """Settings of the OTLP reader."""

    parent_cache_size: int = 200_000
    """Identities of step-carrying spans remembered across batches, so a phase span whose parent
    came in an earlier line still inherits (bounded: oldest forgotten first)."""

    max_parent_depth: int = 16
    """How many ``parentSpanId`` hops a span may climb to find job / rank / step."""

    whole_file_json_max_bytes: int = 512 * 1024 * 1024
    """A file that is one pretty-printed JSON request (not JSON lines) is read whole up to this size."""


class Ident(NamedTuple):
    job: str | None
    rank: int | None
    step: int | None
    gpu: str | None
    node: str | None
    unresolved: bool          # an alias was given but names nothing in the inventory


def to_int(v: Any, what: str = "value") -> int | None:
    """A step or rank: None when absent or not a number (``"abc"``); :class:`OutOfBounds` when it
    is a number no int64 holds (2^63, ``"Infinity"``, ``1e400``, NaN)."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, str):
        text = v.strip()
        if text.lstrip("+-").isdigit():
            return bounded_int(text, what)
        try:
            v = float(text)
        except ValueError:
            return None
    if isinstance(v, float):
        return bounded_int(float(math.trunc(v)) if math.isfinite(v) else v, what)
    return bounded_int(v, what) if isinstance(v, int) else None


def normalise_attrs(attrs: dict[str, Any]) -> dict[str, Any]:
    """``nccl_group_id``/``nccl_rank`` spelled as the dotted keys (the dotted one wins if both)."""
    for alias, key in _ALIASES.items():
        if alias in attrs:
            attrs.setdefault(key, attrs[alias])
    return attrs


class OtlpParser:
    """Parses OTLP requests of one source: keeps resolver caches and recently seen parents."""

    def __init__(self, resolver: Resolver | None, report: IngestReport, config: OtlpConfig | None = None,
                 source: str = "otlp") -> None:
        self.config = config or OtlpConfig()
        self.source = source
        self.report = report
        self.resolver = resolver
        self._recent: OrderedDict[str, Ident] = OrderedDict()
        self._res_cache: dict[int, Ident] = {}

    # -- entry points -----------------------------------------------------------------------
    def json_line(self, line: str | bytes, lineno: int = 1) -> list[Span]:
        where = f"{self.source}:{lineno}"
        try:
            doc = json.loads(line)
        except (ValueError, RecursionError) as exc:
            self.report.reject(f"{where}: not JSON ({_short(exc)})")
            return []
        return self.json_doc(doc, where)

    def json_doc(self, doc: Any, where: str) -> list[Span]:
        """One decoded request (or a list of them)."""
        if isinstance(doc, list):
            return [s for item in doc for s in self.json_doc(item, where)]
        resources = doc.get("resourceSpans", doc.get("resource_spans")) if isinstance(doc, dict) else None
        if not isinstance(resources, list):
            self.report.reject(f"{where}: not an ExportTraceServiceRequest (no resourceSpans list)")
            return []
        batch: Batch = []
        for rs in resources:
            got = self._json_resource(rs, where)
            if got is not None:
                batch.append(got)
        return self.build(batch, where)

    def proto(self, data: bytes, where: str | None = None) -> list[Span]:
        where = where or self.source
        try:
            batch, bad = decode_request(data)
        except Exception as exc:  # protobuf raises DecodeError (and others) on garbage
            self.report.reject(f"{where}: not a protobuf ExportTraceServiceRequest ({_short(exc)})")
            return []
        for reason in bad:
            self.report.reject(f"{where}: {reason}")
        return self.build(batch, where)

    # -- JSON decoding ----------------------------------------------------------------------
    def _json_resource(self, rs: Any, where: str) -> tuple[dict[str, Any], list[RawSpan]] | None:
        if not isinstance(rs, dict):
            self.report.reject(f"{where}: resourceSpans entry is not an object")
            return None
        resource = rs.get("resource")
        try:
            res_attrs = _json_attrs(resource.get("attributes") if isinstance(resource, dict) else None)
        except OutOfBounds as exc:
            self.report.reject(f"{where}: resource attributes: {exc}")
            return None
        spans: list[RawSpan] = []
        scopes = rs.get("scopeSpans", rs.get("scope_spans", rs.get("instrumentationLibrarySpans")))
        for ss in scopes if isinstance(scopes, list) else ():
            raw = ss.get("spans") if isinstance(ss, dict) else None
            for i, sp in enumerate(raw if isinstance(raw, list) else ()):
                got = _json_span(sp)
                if isinstance(got, str):
                    self.report.reject(f"{where}: span {i}: {got}")
                else:
                    spans.append(got)
        return res_attrs, spans

    # -- merging, resolving, inheriting -----------------------------------------------------
    def build(self, batch: Batch, where: str) -> list[Span]:
        """Spans of one request: attributes merged, ids resolved, phases joined to their step."""
        rows: list[tuple[RawSpan, dict[str, Any], Ident]] = []
        by_id: dict[str, tuple[Ident, str | None]] = {}
        self._res_cache.clear()
        for res_attrs, raw_spans in batch:
            res = normalise_attrs(res_attrs)
            try:
                res_ident = self._ident(res)
            except OutOfBounds as exc:
                self.report.reject(f"{where}: resource attributes: {exc} ({len(raw_spans)} spans dropped)")
                continue
            for raw in raw_spans:
                try:
                    merged, ident = self._own_ident(raw, res, res_ident)
                except OutOfBounds as exc:
                    self.report.reject(f"{where}: span {raw.name[:80]!r}: {exc}")
                    continue
                rows.append((raw, merged, ident))
                by_id[raw.span_id] = (ident, raw.parent_id)
        out: list[Span] = []
        unresolved = 0
        for raw, merged, ident in rows:
            own_step = ident.step is not None    # a step span: a parent for later batches
            if raw.parent_id and (ident.step is None or ident.job is None or ident.gpu is None):
                ident = self._inherit(ident, raw.parent_id, by_id)
            if own_step:
                self._remember(raw.span_id, ident)
            if ident.unresolved or ident.job is None:
                unresolved += 1
            out.append(Span(raw.trace_id, raw.span_id, raw.parent_id, raw.name, raw.start_ns / 1e9,
                            raw.end_ns / 1e9, ident.job, ident.rank, ident.step, ident.gpu, ident.node,
                            merged))
        self.report.add("spans", len(out))
        if unresolved:
            self.report.add_unresolved("spans", unresolved)
        return out

    def _own_ident(self, raw: RawSpan, res: dict[str, Any], res_ident: Ident) -> tuple[dict[str, Any], Ident]:
        """A span's merged attributes and own ident; OutOfBounds for a step or rank no int64 holds."""
        if not raw.attrs:
            return res, res_ident
        merged = {**res, **normalise_attrs(raw.attrs)}
        own = raw.attrs
        ident = self._ident(merged) if any(k in own for k in IDENTITY_KEYS) else res_ident
        step = to_int(own.get("train.step"), "train.step")
        return merged, (ident if step is None else ident._replace(step=step))

    def _ident(self, attrs: dict[str, Any]) -> Ident:
        key = id(attrs)
        hit = self._res_cache.get(key)
        if hit is None:
            hit = self._res_cache[key] = span_ident(self.resolver, attrs)
        return hit

    def _inherit(self, ident: Ident, parent_id: str,
                 by_id: dict[str, tuple[Ident, str | None]]) -> Ident:
        """Fill what the span lacks from its ancestors (this batch first, then earlier batches)."""
        pid: str | None = parent_id
        for _ in range(self.config.max_parent_depth):
            if pid is None:
                break
            hit = by_id.get(pid)
            if hit is not None:
                parent, pid = hit
            else:
                recent = self._recent.get(pid)
                if recent is None:
                    break
                parent, pid = recent, None
            ident = Ident(ident.job or parent.job, ident.rank if ident.rank is not None else parent.rank,
                           ident.step if ident.step is not None else parent.step, ident.gpu or parent.gpu,
                           ident.node or parent.node, ident.unresolved)
            if ident.step is not None and ident.job is not None and ident.gpu is not None:
                break
        return ident

    def _remember(self, span_id: str, ident: Ident) -> None:
        self._recent[span_id] = ident
        if len(self._recent) > self.config.parent_cache_size:
            self._recent.popitem(last=False)


def span_ident(resolver: Resolver | None, attrs: dict[str, Any]) -> Ident:
    """Job, rank, step, GPU and node named by merged span attributes, resolved to canonical ids;
    ``unresolved`` when one was given but names nothing in the inventory."""
    bad = False
    job_raw, host, gpu_raw = attrs.get("job.id"), attrs.get("host.name"), attrs.get("resource.gpu.id")
    job = node = gpu = None
    if isinstance(job_raw, str) and job_raw:
        job = job_of(resolver, job_raw)
        bad |= job is None
    if isinstance(host, str) and host:
        node = node_of(resolver, host)
        bad |= node is None
    if isinstance(gpu_raw, str) and gpu_raw:
        gpu = gpu_of(resolver, gpu_raw, node or host)
        bad |= gpu is None
    if node is None and gpu is not None and "/" in gpu:
        node = gpu.split("/", 1)[0]
    return Ident(job, to_int(attrs.get("framework.pytorch.rank"), "framework.pytorch.rank"),
                 to_int(attrs.get("train.step"), "train.step"), gpu, node, bad)


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:120]


def _json_attrs(attrs: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in attrs if isinstance(attrs, list) else ():
        try:
            out[kv["key"]] = any_value_json(kv["value"])
        except OutOfBounds:
            raise                       # the span (or resource) is rejected, naming the value
        except (KeyError, TypeError, ValueError, AttributeError, RecursionError):
            continue
    return out


def _hex_id(value: Any) -> str | None:
    """Fast path of :func:`span_id_json` for the usual lower-case hex ids."""
    if type(value) is str and len(value) in (16, 32):
        return value.lower()
    return span_id_json(value)


def _json_span(sp: Any) -> RawSpan | str:
    """A raw span, or the reason it is unusable."""
    if not isinstance(sp, dict):
        return "not an object"
    sid = _hex_id(sp.get("spanId") or sp.get("span_id"))
    if not sid:
        return "spanId missing"
    name = sp.get("name")
    if not isinstance(name, str) or not name:
        return "name missing"
    try:
        start_ns = bounded_int(sp["startTimeUnixNano"], "startTimeUnixNano", lo=0)
        end_ns = bounded_int(sp["endTimeUnixNano"], "endTimeUnixNano", lo=0)
    except KeyError as exc:
        return f"{exc.args[0]} missing"
    except OutOfBounds as exc:
        return str(exc)
    if end_ns < start_ns:
        return "endTimeUnixNano before startTimeUnixNano"
    attrs = sp.get("attributes")
    try:
        own = _json_attrs(attrs) if attrs else None
    except OutOfBounds as exc:
        return str(exc)
    return RawSpan(_hex_id(sp.get("traceId") or sp.get("trace_id")) or "", sid,
                   _hex_id(sp.get("parentSpanId") or sp.get("parent_span_id")), name, start_ns, end_ns, own)


def parse_otlp_json_line(line: str | bytes, resolver: Resolver | None, report: IngestReport, *,
                         source: str = "otlp", lineno: int = 1,
                         parser: OtlpParser | None = None) -> list[Span]:
    """Spans of one OTLP/JSON ``ExportTraceServiceRequest`` (a line of the file exporter, or an
    OTLP/HTTP JSON body). Pass one ``parser`` across calls to share caches and parents."""
    p = parser or OtlpParser(resolver, report, source=source)
    return p.json_line(line, lineno)


def parse_otlp_proto(data: bytes, resolver: Resolver | None, report: IngestReport, *,
                     source: str = "otlp", parser: OtlpParser | None = None) -> list[Span]:
    """Spans of one binary protobuf ``ExportTraceServiceRequest`` (an OTLP/HTTP protobuf body)."""
    p = parser or OtlpParser(resolver, report, source=source)
    return p.proto(data)


def read_otlp(path: Path, resolver: Resolver | None, report: IngestReport,
              config: OtlpConfig | None = None) -> Iterator[Span]:
    """Spans of an OTLP file: JSON lines, one protobuf request, or length-delimited protobuf requests.

    The format comes from the extension (``.pb``/``.bin``/``.binpb`` protobuf, ``.json``/``.jsonl``
    JSON), else from the content; gzip-compressed files are decompressed.
    """
    path = Path(path)
    parser = OtlpParser(resolver, report, config, source=path.name)
    with open_bytes(path) as reader:
        name = path.name.removesuffix(".gz").lower()
        try:
            if _is_proto(name, reader):
                yield from _read_proto_stream(reader.read(), parser)
            else:
                yield from _read_json_lines(reader, parser)
        except (OSError, EOFError) as exc:       # truncated gzip and the like
            report.reject(f"{path.name}: unreadable ({_short(exc)})")


def _is_proto(name: str, fh: io.BufferedReader | gzip.GzipFile) -> bool:
    if name.endswith(_PROTO_SUFFIXES):
        return True
    if name.endswith(_JSON_SUFFIXES):
        return False
    head = fh.peek(4096)[:4096].removeprefix(b"\xef\xbb\xbf").lstrip()
    return bool(head) and head[:1] not in (b"{", b"[")


def _read_json_lines(fh: io.BufferedReader | gzip.GzipFile, parser: OtlpParser) -> Iterator[Span]:
    for lineno, line in enumerate(fh, 1):
        stripped = line.strip().removeprefix(b"\xef\xbb\xbf") if lineno == 1 else line.strip()
        if not stripped:
            continue
        if lineno == 1 and stripped in (b"{", b"["):
            yield from _read_whole_json(stripped + fh.read(), parser)
            return
        yield from parser.json_line(stripped, lineno)


def _read_whole_json(data: bytes, parser: OtlpParser) -> Iterator[Span]:
    """A file holding one pretty-printed request (or a list of them)."""
    if len(data) > parser.config.whole_file_json_max_bytes:
        parser.report.reject(f"{parser.source}:1: JSON document over the size limit")
        return
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        parser.report.reject(f"{parser.source}:1: not JSON ({_short(exc)})")
        return
    yield from parser.json_doc(doc, f"{parser.source}:1")


def _read_proto_stream(data: bytes, parser: OtlpParser) -> Iterator[Span]:
    if not data:
        return
    where = f"{parser.source}:1"
    try:
        batch, bad = decode_request(data)
    except Exception:  # not one message: maybe a length-delimited stream
        parts = split_delimited(data)
        if parts is None:
            yield from parser.proto(data, where)      # rejects it with the decoder's reason
            return
        for i, part in enumerate(parts, 1):
            yield from parser.proto(part, f"{parser.source}:message {i}")
        return
    for reason in bad:
        parser.report.reject(f"{where}: {reason}")
    yield from parser.build(batch, where)
