"""Where spans go: an OpenTelemetry TracerProvider with a BatchSpanProcessor and an exporter.

The exporter is OTLP/HTTP (``opentelemetry-exporter-otlp-proto-http``) or, with a file, OTLP/JSON
lines as the Collector's file exporter writes them (spec/telemetry.md ``traces.otlp.jsonl``).
Between the probe and the batch processor sits a bound: a span is handed on only while fewer
than ``queue_size`` handed spans are still unexported, so the processor's own queue never
overflows and every span left out is counted (the SDK's processor would drop silently).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

from suanli.probe.config import ProbeConfig

__all__ = ["ExportCounts", "OtlpJsonFileExporter", "Pipeline", "StepIdGenerator", "build_pipeline", "otlp_json_line"]

_ID_KEYS = ("traceId", "spanId", "parentSpanId")


def _hex_ids(obj: dict[str, Any]) -> None:
    for key in _ID_KEYS:
        value = obj.get(key)
        if isinstance(value, str) and value:
            obj[key] = base64.b64decode(value).hex()


def otlp_json_line(spans: Sequence[ReadableSpan]) -> str:
    """One ``ExportTraceServiceRequest`` as OTLP/JSON: camelCase fields, hex ids, enums as integers,
    64-bit integers as strings (the OTLP/JSON encoding the Collector's file exporter writes)."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    doc = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for sp in ss.get("spans", []):
                _hex_ids(sp)
                for link in sp.get("links", []):
                    _hex_ids(link)
    return json.dumps(doc, separators=(",", ":"))


class OtlpJsonFileExporter(SpanExporter):
    """Appends one OTLP/JSON request per export to a file, each line in a single ``write``, so the
    ranks of a job may share one file (O_APPEND keeps their lines whole)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            data = (otlp_json_line(spans) + "\n").encode("utf-8")
            with self._lock:
                if self._fd is None:
                    self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                os.write(self._fd, data)
        except Exception:  # a full disk or a gone folder must not reach the trainer
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


class StepIdGenerator(RandomIdGenerator):
    """Random span ids; the trace id of the next root span is the one set by :meth:`next_root`."""

    def __init__(self) -> None:
        self._next: int | None = None

    def next_root(self, trace_id: int | None) -> None:
        """Use ``trace_id`` for the next root span (None: a random one)."""
        self._next = trace_id

    def generate_trace_id(self) -> int:
        chosen, self._next = self._next, None
        return chosen if chosen is not None else super().generate_trace_id()


class ExportCounts:
    """Span counts of one pipeline (updated from the export threads; plain ints under the GIL)."""

    def __init__(self) -> None:
        self.handed = 0
        self.exported = 0
        self.failed = 0
        self.dropped = 0
        self.export_errors = 0

    @property
    def in_flight(self) -> int:
        return self.handed - self.exported - self.failed


class _CountingExporter(SpanExporter):
    def __init__(self, inner: SpanExporter, counts: ExportCounts) -> None:
        self.inner = inner
        self.counts = counts

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception:
            result = SpanExportResult.FAILURE
        if result is SpanExportResult.SUCCESS:
            self.counts.exported += len(spans)
        else:
            self.counts.failed += len(spans)
            self.counts.export_errors += 1
        return result

    def shutdown(self) -> None:
        with contextlib.suppress(Exception):
            self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class _BoundedProcessor(SpanProcessor):
    """Hands ended spans to the batch processor while fewer than ``cap`` are unexported."""

    def __init__(self, inner: BatchSpanProcessor, counts: ExportCounts, cap: int) -> None:
        self.inner = inner
        self.counts = counts
        self.cap = cap

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        if self.counts.in_flight >= self.cap:
            self.counts.dropped += 1
            return
        self.counts.handed += 1
        self.inner.on_end(span)

    def shutdown(self) -> None:
        self.inner.shutdown()  # type: ignore[no-untyped-call]

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return bool(self.inner.force_flush(timeout_millis))


class Pipeline:
    """The provider, its tracer, the id generator the probe steers, and the counts."""

    def __init__(self, provider: TracerProvider, ids: StepIdGenerator, exporter: SpanExporter,
                 counts: ExportCounts) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer("suanli.probe")
        self.ids = ids
        self.exporter = exporter
        self.counts = counts

    def shutdown(self, timeout_s: float) -> bool:
        """Flush and stop within ``timeout_s``; past it the exporter is cut off. True if all done."""
        t = threading.Thread(target=self.provider.shutdown, name="suanli-probe-shutdown", daemon=True)
        t.start()
        t.join(timeout_s)
        if t.is_alive():
            self.exporter.shutdown()       # aborts retries against a dead collector
            t.join(1.0)
            return False
        return True


def build_pipeline(cfg: ProbeConfig, attributes: Mapping[str, Any],
                   exporter: SpanExporter | None = None) -> Pipeline:
    """A private TracerProvider (the global one is left to the application)."""
    if exporter is None:
        if cfg.file:
            exporter = OtlpJsonFileExporter(cfg.file)
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter(endpoint=cfg.endpoint, timeout=cfg.export_timeout_s)
    counts = ExportCounts()
    counted = _CountingExporter(exporter, counts)
    ids = StepIdGenerator()
    provider = TracerProvider(resource=Resource.create(dict(attributes)), id_generator=ids,
                              shutdown_on_exit=False)
    batch = BatchSpanProcessor(counted, max_queue_size=cfg.queue_size + 1, schedule_delay_millis=500,
                               max_export_batch_size=min(512, cfg.queue_size))
    provider.add_span_processor(_BoundedProcessor(batch, counts, cfg.queue_size))
    return Pipeline(provider, ids, counted, counts)
