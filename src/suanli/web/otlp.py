"""OTLP/HTTP trace receiver: ``POST /v1/traces`` (the OTLP specification, "OTLP/HTTP").

Binary protobuf (``application/x-protobuf``) and JSON (``application/json``) bodies, optionally
``Content-Encoding: gzip``, decoded by suanli's own OTLP reader (:mod:`suanli.ingest.otlp`). The
answer is encoded like the request:

* 200 with an empty ``ExportTraceServiceResponse`` when every span was taken;
* 200 with ``partial_success`` (``rejected_spans``, ``error_message``) when some spans were
  unusable (no span id, end before start ...): the good ones are taken, the sender must not retry;
* 400 (undecodable), 401 (no token), 413 (too large), 415 (other content type or encoding), each
  with a ``google.rpc.Status`` body; 429 (the queue is full) and 503 (not started or stopping)
  with ``Retry-After``, which OTLP senders retry.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request, Response
from google.protobuf import any_pb2, json_format
from google.rpc import code_pb2, error_details_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from suanli.ingest.otlp import OtlpParser
from suanli.ingest.otlp_decode import decode_request
from suanli.ingest.records import IngestReport, Span
from suanli.inventory import Resolver
from suanli.web.auth import Auth
from suanli.web.body import BodyError, decode_content, read_body
from suanli.web.queue import Admission, IngestQueue
from suanli.web.settings import ReceiverLimits

__all__ = ["ParserSlot", "otlp_router"]

PROTOBUF, JSON = "application/x-protobuf", "application/json"
_CODES = {400: code_pb2.INVALID_ARGUMENT, 401: code_pb2.UNAUTHENTICATED, 413: code_pb2.RESOURCE_EXHAUSTED,
          415: code_pb2.INVALID_ARGUMENT, 429: code_pb2.RESOURCE_EXHAUSTED, 503: code_pb2.UNAVAILABLE}


def _encode(msg: Any, ctype: str) -> bytes:
    if ctype == JSON:
        return json.dumps(json_format.MessageToDict(msg)).encode()
    return bytes(msg.SerializeToString())


def _failure(status: int, message: str, ctype: str, retry_after_s: float | None = None) -> Response:
    st = status_pb2.Status(code=_CODES.get(status, code_pb2.UNKNOWN), message=message)
    if status == 400:
        detail = any_pb2.Any()
        detail.Pack(error_details_pb2.BadRequest(field_violations=[
            error_details_pb2.BadRequest.FieldViolation(field="body", description=message)]))
        st.details.append(detail)
    headers = {"Retry-After": str(max(1, round(retry_after_s)))} if retry_after_s is not None else {}
    if status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    return Response(_encode(st, ctype), status, headers=headers, media_type=ctype)


class _Decoded:
    def __init__(self, spans: list[Span], report: IngestReport) -> None:
        self.spans, self.report = spans, report


def _decode(parser: OtlpParser, data: bytes, ctype: str) -> _Decoded:
    """Spans of one request; BodyError(400) when the request as a whole cannot be read."""
    report = IngestReport()
    parser.report = report                     # per request: its rejects make the partial success
    if ctype == PROTOBUF:
        try:
            batch, bad = decode_request(data)
        except Exception as exc:  # protobuf raises DecodeError (and others) on garbage
            raise BodyError(400, f"not a protobuf ExportTraceServiceRequest ({str(exc)[:100]})") from None
        for reason in bad:
            report.reject(f"otlp: {reason}")
        return _Decoded(parser.build(batch, "otlp"), report)
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise BodyError(400, f"not JSON ({str(exc)[:100]})") from None
    if not isinstance(doc, dict):
        raise BodyError(400, "not an ExportTraceServiceRequest (expected a JSON object)")
    if "resourceSpans" not in doc and "resource_spans" not in doc:
        return _Decoded([], report)            # no data: an empty request succeeds (OTLP)
    spans = parser.json_doc(doc, "otlp")
    if not isinstance(doc.get("resourceSpans", doc.get("resource_spans")), list):
        raise BodyError(400, "resourceSpans is not a list")
    return _Decoded(spans, report)


def _success(decoded: _Decoded, ctype: str) -> Response:
    resp = trace_service_pb2.ExportTraceServiceResponse()
    rejected = decoded.report.rejected
    if rejected:
        resp.partial_success.rejected_spans = rejected
        resp.partial_success.error_message = "; ".join(decoded.report.reasons[:3])[:1000]
    return Response(_encode(resp, ctype), 200, media_type=ctype)


class ParserSlot:
    """The OTLP parser all requests share (its parent cache spans requests); :meth:`use` swaps in a
    parser over a reloaded inventory."""

    def __init__(self, resolver: Resolver | None) -> None:
        self.use(resolver)

    def use(self, resolver: Resolver | None) -> None:
        self.parser = OtlpParser(resolver, IngestReport(), source="otlp")


def otlp_router(auth: Auth, limits: ReceiverLimits, queue: IngestQueue[Span], slot: ParserSlot,
                retry_after_s: float) -> APIRouter:
    """The ``/v1/traces`` route over ``queue``."""
    router = APIRouter()

    @router.post("/v1/traces", include_in_schema=True, summary="OTLP/HTTP trace export")
    async def traces(request: Request) -> Response:
        ctype = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        answer = ctype if ctype in (PROTOBUF, JSON) else PROTOBUF
        if ctype not in (PROTOBUF, JSON):
            return _failure(415, "unsupported Content-Type (expected application/x-protobuf or application/json)",
                            answer)
        if not auth.allows(request.headers.get("authorization")):
            return _failure(401, "sending spans needs the token (Authorization: Bearer ...)", answer)
        refused = queue.would_refuse()
        if refused is not None:
            return _pressure(refused, answer, retry_after_s)
        try:
            data = decode_content(await read_body(request, limits.max_body_bytes),
                                  request.headers.get("content-encoding"), limits.max_decompressed_bytes)
            decoded = _decode(slot.parser, data, ctype)
        except BodyError as exc:
            return _failure(exc.status, exc.message, answer)
        admission = queue.offer(decoded.spans)
        if admission is not Admission.ACCEPTED:
            return _pressure(admission, answer, retry_after_s)
        return _success(decoded, answer)

    return router


def _pressure(admission: Admission, ctype: str, retry_after_s: float) -> Response:
    if admission is Admission.FULL:
        return _failure(429, "the span queue is full; retry later", ctype, retry_after_s)
    return _failure(503, "the receiver is not running (starting or stopping); retry later", ctype, retry_after_s)
