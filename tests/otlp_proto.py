"""OTLP/JSON trace requests (the Collector's file-exporter shape: hex ids) as protobuf messages."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from google.protobuf.internal.encoder import _VarintBytes  # type: ignore[attr-defined]
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.resource.v1 import resource_pb2
from opentelemetry.proto.trace.v1 import trace_pb2


def any_value(v: dict[str, Any]) -> common_pb2.AnyValue:
    if "stringValue" in v:
        return common_pb2.AnyValue(string_value=v["stringValue"])
    if "intValue" in v:
        return common_pb2.AnyValue(int_value=int(v["intValue"]))
    if "doubleValue" in v:
        return common_pb2.AnyValue(double_value=float(v["doubleValue"]))
    if "boolValue" in v:
        return common_pb2.AnyValue(bool_value=bool(v["boolValue"]))
    if "arrayValue" in v:
        return common_pb2.AnyValue(array_value=common_pb2.ArrayValue(
            values=[any_value(x) for x in v["arrayValue"].get("values", [])]))
    if "kvlistValue" in v:
        return common_pb2.AnyValue(kvlist_value=common_pb2.KeyValueList(values=attrs(v["kvlistValue"].get("values"))))
    if "bytesValue" in v:
        return common_pb2.AnyValue(bytes_value=v["bytesValue"])
    return common_pb2.AnyValue()


def attrs(kvs: Iterable[dict[str, Any]] | None) -> list[common_pb2.KeyValue]:
    return [common_pb2.KeyValue(key=kv["key"], value=any_value(kv["value"])) for kv in kvs or ()]


def request(doc: dict[str, Any]) -> trace_service_pb2.ExportTraceServiceRequest:
    """One decoded OTLP/JSON request line as the protobuf message."""
    out = []
    for rs in doc["resourceSpans"]:
        scopes = []
        for ss in rs.get("scopeSpans", []):
            spans = [trace_pb2.Span(
                trace_id=bytes.fromhex(sp.get("traceId", "")), span_id=bytes.fromhex(sp.get("spanId", "")),
                parent_span_id=bytes.fromhex(sp.get("parentSpanId", "")), name=sp.get("name", ""),
                kind=sp.get("kind", 0), start_time_unix_nano=int(sp.get("startTimeUnixNano", 0)),
                end_time_unix_nano=int(sp.get("endTimeUnixNano", 0)), attributes=attrs(sp.get("attributes")))
                for sp in ss.get("spans", [])]
            scope = ss.get("scope", {})
            scopes.append(trace_pb2.ScopeSpans(
                scope=common_pb2.InstrumentationScope(name=scope.get("name", ""), version=scope.get("version", "")),
                spans=spans))
        out.append(trace_pb2.ResourceSpans(
            resource=resource_pb2.Resource(attributes=attrs(rs.get("resource", {}).get("attributes"))),
            scope_spans=scopes))
    return trace_service_pb2.ExportTraceServiceRequest(resource_spans=out)


def delimited(messages: Iterable[bytes]) -> bytes:
    """A varint-length-delimited stream (what Java's ``writeDelimitedTo`` writes)."""
    return b"".join(_VarintBytes(len(m)) + m for m in messages)


def jsonl_to_pb(src: Path, dst: Path) -> int:
    """A JSON-lines trace file as a delimited protobuf stream; the number of messages."""
    n = 0
    with src.open("rb") as f, dst.open("wb") as out:
        for line in f:
            if line.strip():
                out.write(delimited([request(json.loads(line)).SerializeToString()]))
                n += 1
    return n
