"""The export thread: resolved records in, OpenTelemetry spans out (off the training thread).

The training thread only appends to a bounded deque (a record that would overflow it is dropped
and its spans counted). Every ``interval_s`` this thread turns records into SDK spans with the
recorded times: the ``train_step`` root first (its trace id derived from (job, step)), then its
children, so a batch never holds a child whose parent comes in a later batch.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from opentelemetry.context import Context
from opentelemetry.trace import Link, SpanContext, TraceFlags, set_span_in_context
from opentelemetry.trace.status import Status, StatusCode

from suanli.probe.export import Pipeline
from suanli.probe.ids import step_trace_id
from suanli.probe.metrics import StepMetrics, mfu_of_step
from suanli.probe.records import SpanRecord, StepRecord

__all__ = ["SpanWriter"]

Item = StepRecord | SpanRecord


def _step_attrs(rec: StepRecord) -> dict[str, Any]:
    attrs: dict[str, Any] = {"train.step": rec.step}
    if rec.tokens is not None:
        attrs["train.tokens"] = int(rec.tokens) if float(rec.tokens).is_integer() else rec.tokens
    if rec.model_flops is not None:
        attrs["train.model_flops"] = float(rec.model_flops)
    return attrs


class SpanWriter:
    """Owns the queue and the thread that empties it."""

    def __init__(self, pipeline: Pipeline, job_id: str, capacity_spans: int, interval_s: float = 0.2,
                 metrics: StepMetrics | None = None, peak_flops: float | None = None) -> None:
        self.pipeline = pipeline
        self.job_id = job_id
        self.capacity = capacity_spans
        self.interval_s = interval_s
        self.metrics = metrics
        self.peak_flops = peak_flops
        self.put_spans = 0          # written by the training thread only
        self.taken_spans = 0        # written by the export thread only
        self.dropped = 0
        self.emitted = 0
        self.errors = 0
        self._queue: deque[tuple[Item, int]] = deque()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="suanli-probe-writer", daemon=True)
        self._thread.start()

    # -- training thread -------------------------------------------------------------------
    def put(self, item: Item, n_spans: int) -> None:
        if self.put_spans - self.taken_spans + n_spans > self.capacity:
            self.dropped += n_spans
            return
        self.put_spans += n_spans
        self._queue.append((item, n_spans))

    # -- export thread ---------------------------------------------------------------------
    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.drain()
        self.drain()

    def drain(self) -> None:
        while self._queue:
            item, n = self._queue.popleft()
            self.taken_spans += n
            try:
                if isinstance(item, StepRecord):
                    self._emit_step(item)
                else:
                    self._emit_span(item)
                self.emitted += n
            except Exception:  # a bad record is lost, the thread goes on
                self.errors += 1

    def _emit_span(self, rec: SpanRecord) -> None:
        self.pipeline.ids.next_root(None)
        span = self.pipeline.tracer.start_span(rec.name, context=Context(), start_time=rec.start_ns,
                                               attributes=rec.attrs)
        span.end(end_time=rec.end_ns)

    def _emit_step(self, rec: StepRecord) -> None:
        tracer = self.pipeline.tracer
        trace_id = step_trace_id(self.job_id, rec.step)
        self.pipeline.ids.next_root(trace_id)
        root = tracer.start_span("train_step", context=Context(), start_time=rec.start_ns,
                                 attributes=_step_attrs(rec))
        ctx = set_span_in_context(root)
        children = []
        for p in rec.phases:
            links = ([Link(SpanContext(trace_id, p.link, True, TraceFlags(TraceFlags.SAMPLED)))]
                     if p.link else None)
            children.append((tracer.start_span(p.name, context=ctx, start_time=p.start_ns,
                                               attributes=p.attrs, links=links), p.end_ns))
        if rec.failed:
            root.set_status(Status(StatusCode.ERROR, "the step raised"))
        root.end(end_time=rec.end_ns)
        for span, end_ns in children:
            span.end(end_time=end_ns)
        if self.metrics is not None:
            step_s = (rec.end_ns - rec.start_ns) / 1e9
            self.metrics.observe(step_s, mfu_of_step(rec.model_flops, step_s, self.peak_flops))

    def close(self, timeout_s: float) -> None:
        self._stop.set()
        self._thread.join(timeout_s)
