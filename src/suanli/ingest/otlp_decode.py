"""Low-level OTLP decoding: OTLP/JSON attribute values and ids, protobuf requests, delimited streams.

Both encodings are turned into the same neutral shape, ``(resource attributes, [RawSpan, ...])``
per resource, which :mod:`suanli.ingest.otlp` merges, resolves and joins.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, NamedTuple

from suanli.ingest.bounded import bounded_int

__all__ = ["Batch", "RawSpan", "any_value_json", "decode_request", "span_id_json", "split_delimited"]


class RawSpan(NamedTuple):
    """A span as decoded, before attributes are merged and ids resolved."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attrs: dict[str, Any] | None


def span_id_json(value: Any) -> str | None:
    """OTLP/JSON ids are hex (the file exporter); the generic protobuf JSON mapping writes base64."""
    if not isinstance(value, str) or not value:
        return None
    if len(value) in (16, 32):
        return value.lower()
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return value.lower()
    return raw.hex() if len(raw) in (8, 16) else value.lower()


def any_value_json(v: dict[str, Any]) -> Any:
    """The Python value of an OTLP/JSON ``AnyValue`` (``intValue`` may be a string)."""
    s = v.get("stringValue")
    if s is not None:
        return s
    if "intValue" in v:
        return bounded_int(v["intValue"], "intValue")
    if "doubleValue" in v:
        return float(v["doubleValue"])
    if "boolValue" in v:
        b = v["boolValue"]
        return b if isinstance(b, bool) else str(b).lower() == "true"
    if "arrayValue" in v:
        return [any_value_json(x) for x in (v["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in v:
        return {kv["key"]: any_value_json(kv["value"]) for kv in (v["kvlistValue"] or {}).get("values", [])}
    if "bytesValue" in v:
        return v["bytesValue"]
    return None


def _any_value_proto(v: Any) -> Any:
    which = v.WhichOneof("value")
    if which == "string_value":
        return v.string_value
    if which == "int_value":
        return int(v.int_value)
    if which == "double_value":
        return float(v.double_value)
    if which == "bool_value":
        return bool(v.bool_value)
    if which == "array_value":
        return [_any_value_proto(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _any_value_proto(kv.value) for kv in v.kvlist_value.values}
    if which == "bytes_value":
        return base64.b64encode(v.bytes_value).decode("ascii")
    return None


def _attrs_proto(kvs: Any) -> dict[str, Any]:
    return {kv.key: _any_value_proto(kv.value) for kv in kvs}


Batch = list[tuple[dict[str, Any], list[RawSpan]]]


def decode_request(data: bytes) -> tuple[Batch, list[str]]:
    """One binary ``ExportTraceServiceRequest`` and the reasons its unusable spans were left out;
    raises on bytes that are not such a message."""
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

    req = trace_service_pb2.ExportTraceServiceRequest()
    req.ParseFromString(data)
    out: Batch = []
    bad: list[str] = []
    for rs in req.resource_spans:
        spans: list[RawSpan] = []
        for ss in rs.scope_spans:
            for i, sp in enumerate(ss.spans):
                if not sp.span_id or not sp.name or sp.end_time_unix_nano < sp.start_time_unix_nano:
                    bad.append(f"span {i}: span_id/name missing or end before start")
                    continue
                spans.append(RawSpan(
                    sp.trace_id.hex(), sp.span_id.hex(), sp.parent_span_id.hex() or None, sp.name,
                    int(sp.start_time_unix_nano), int(sp.end_time_unix_nano),
                    _attrs_proto(sp.attributes) if len(sp.attributes) else None,
                ))
        out.append((_attrs_proto(rs.resource.attributes), spans))
    return out, bad


def _varint(data: bytes, pos: int) -> tuple[int, int] | None:
    result = shift = 0
    while pos < len(data) and shift < 64:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
    return None


def split_delimited(data: bytes) -> list[bytes] | None:
    """Messages of a varint-length-delimited stream, or None if the lengths do not chain to the end."""
    parts: list[bytes] = []
    pos = 0
    while pos < len(data):
        got = _varint(data, pos)
        if got is None:
            return None
        size, pos = got
        if size == 0 or pos + size > len(data):
            return None
        parts.append(data[pos:pos + size])
        pos += size
    return parts or None
