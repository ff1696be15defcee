"""Builders of OTLP/JSON trace requests for tests (the Collector's file-exporter shape)."""

from __future__ import annotations

import json
from typing import Any


def kv(key: str, value: Any) -> dict[str, Any]:
    """One OTLP attribute; ints are written as strings, as OTLP/JSON does."""
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": value}}


def span(trace: str, sid: str, name: str, start_ns: int, end_ns: int, parent: str | None = None,
         **attrs: Any) -> dict[str, Any]:
    """A span; attribute names use ``__`` for ``.`` (``train__step`` -> ``train.step``)."""
    sp: dict[str, Any] = {"traceId": trace, "spanId": sid, "name": name,
                          "startTimeUnixNano": str(start_ns), "endTimeUnixNano": str(end_ns)}
    if parent:
        sp["parentSpanId"] = parent
    if attrs:
        sp["attributes"] = [kv(k.replace("__", "."), v) for k, v in attrs.items()]
    return sp


def request_line(resource: dict[str, Any], spans: list[dict[str, Any]]) -> str:
    """One ExportTraceServiceRequest with one resource and one scope, as a JSON line."""
    return json.dumps({"resourceSpans": [{
        "resource": {"attributes": [kv(k, v) for k, v in resource.items()]},
        "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]})
