"""The file exporter's OTLP/JSON, checked field for field against the protobuf route: the SDK's own
OTLP encoder, then protobuf's JSON mapping with OTLP's hex ids and integer enums."""

from __future__ import annotations

import base64
import json
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, TraceFlags
from opentelemetry.trace.status import Status, StatusCode

from suanli.ingest.otlp import parse_otlp_json_line
from suanli.ingest.records import IngestReport
from suanli.probe.otlp_json import otlp_json_line


def _reference(spans: list[ReadableSpan]) -> dict[str, Any]:
    doc = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for sp in ss["spans"]:
                for obj in [sp, *sp.get("links", [])]:
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if key in obj:
                            obj[key] = base64.b64decode(obj[key]).hex()
    return doc


def _spans() -> list[ReadableSpan]:
    res = Resource.create({"job.id": "j", "framework.pytorch.rank": 3, "nccl.rank": 1})
    scope = InstrumentationScope("suanli.probe")
    flags = TraceFlags(TraceFlags.SAMPLED)
    root = SpanContext(0xABC, 0x1, False, flags)
    return [
        ReadableSpan("train_step", root, None, res, {"train.step": 7, "train.model_flops": 1.5e12,
                                                     "train.tokens": 4096}, start_time=10**18,
                     end_time=10**18 + 5, instrumentation_scope=scope,
                     status=Status(StatusCode.ERROR, "the step raised")),
        ReadableSpan("allreduce", SpanContext(0xABC, 0x2, False, flags), root, res,
                     {"nccl.op": "allreduce", "nccl.bytes": 6300672, "ok": True},
                     links=(Link(SpanContext(0xABC, 0xFEED, True, flags)),), start_time=10**18 + 1,
                     end_time=10**18 + 4, instrumentation_scope=scope),
        ReadableSpan("forward", SpanContext(0xABC, 0x3, False, flags), root, res, None,
                     start_time=10**18 + 1, end_time=10**18 + 2, instrumentation_scope=scope),
    ]


def test_same_document_as_the_protobuf_route() -> None:
    spans = _spans()
    assert json.loads(otlp_json_line(spans)) == _reference(spans)


def test_suanli_ingest_reads_it() -> None:
    report = IngestReport()
    got = parse_otlp_json_line(otlp_json_line(_spans()), None, report)
    assert report.rejected == 0
    assert [(s.name, s.step, s.rank, s.trace_id) for s in got] == [
        ("train_step", 7, 3, f"{0xABC:032x}"), ("allreduce", 7, 3, f"{0xABC:032x}"),
        ("forward", 7, 3, f"{0xABC:032x}")]
    assert got[1].parent_id == got[2].parent_id == f"{1:016x}"
