"""Where spans go: the SDK's BatchSpanProcessor and an exporter, behind a bound that counts drops.

The exporter is OTLP/HTTP (``opentelemetry-exporter-otlp-proto-http``) or, with a file, OTLP/JSON
lines as the Collector's file exporter writes them (spec/telemetry.md ``traces.otlp.jsonl``).
Between the probe and the batch processor sits a bound: a span is handed on only while fewer
than ``queue_size`` handed spans are still unexported, so the processor's own queue never
overflows and every span left out is counted (the SDK's processor would drop silently).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from suanli.probe.config import ProbeConfig
from suanli.probe.otlp_json import otlp_json_line

__all__ = ["ExportCounts", "OtlpJsonFileExporter", "Pipeline", "build_pipeline"]

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
    """The bounded batch processor, the resource and scope every span carries, and the counts."""

    def __init__(self, processor: SpanProcessor, resource: Resource, exporter: SpanExporter,
                 counts: ExportCounts) -> None:
        self.processor = processor
        self.resource = resource
        self.scope = InstrumentationScope("suanli.probe")
        self.exporter = exporter
        self.counts = counts

    def flush(self, timeout_s: float) -> None:
        self.processor.force_flush(int(timeout_s * 1000))

    def shutdown(self, timeout_s: float) -> bool:
        """Flush and stop within ``timeout_s``; past it the exporter is cut off. True if all done."""
        t = threading.Thread(target=self.processor.shutdown, name="suanli-probe-shutdown", daemon=True)
        t.start()
        t.join(timeout_s)
        if t.is_alive():
            self.exporter.shutdown()       # aborts retries against a dead collector
            t.join(1.0)
            return False
        return True


def build_pipeline(cfg: ProbeConfig, attributes: Mapping[str, Any],
                   exporter: SpanExporter | None = None) -> Pipeline:
    """The SDK's BatchSpanProcessor and exporter behind the bound (no TracerProvider: the writer
    makes finished SDK spans itself; the application's global provider is left alone)."""
    if exporter is None:
        if cfg.file:
            exporter = OtlpJsonFileExporter(cfg.file)
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter(endpoint=cfg.endpoint, timeout=cfg.export_timeout_s)
    quiet_export_logs()
    counts = ExportCounts()
    counted = _CountingExporter(exporter, counts)
    batch = BatchSpanProcessor(counted, max_queue_size=cfg.queue_size + 1, schedule_delay_millis=500,
                               max_export_batch_size=min(512, cfg.queue_size))
    return Pipeline(_BoundedProcessor(batch, counts, cfg.queue_size), Resource.create(dict(attributes)),
                    counted, counts)


class _OncePerMinute(logging.Filter):
    """Lets one record of each logger through per minute (a dead collector logs every retry)."""

    def __init__(self) -> None:
        super().__init__()
        self._last = -1e18

    def filter(self, record: logging.LogRecord) -> bool:
        now = time.monotonic()
        if now - self._last < 60.0:
            return False
        self._last = now
        return True


_NOISY = ("opentelemetry.exporter.otlp.proto.http.trace_exporter", "opentelemetry.exporter.otlp.proto.http",
          "opentelemetry.sdk._shared_internal")


def quiet_export_logs() -> None:
    """Rate-limit the export path's warnings so a gone collector cannot flood the job's log."""
    for name in _NOISY:
        log = logging.getLogger(name)
        if not any(isinstance(f, _OncePerMinute) for f in log.filters):
            log.addFilter(_OncePerMinute())
