"""The export thread: resolved records in, finished OpenTelemetry SDK spans out.

The training thread only appends to a bounded deque (a record that would overflow it is dropped
and its spans counted). Every ``interval_s`` this thread turns records into SDK ``ReadableSpan``
objects with the recorded times (the ``train_step`` root with the trace id derived from
(job, step), then its children, so a batch never holds a child whose parent comes in a later
batch) and hands them to the batch processor. Building the finished spans directly costs a
tenth of opening and ending them through a tracer, which matters: this thread shares the GIL
with the training loop.
"""

from __future__ import annotations

import random
import threading
from collections import deque
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import Link, SpanContext, TraceFlags
from opentelemetry.trace.status import Status, StatusCode

from suanli.probe.export import Pipeline
from suanli.probe.ids import step_trace_id
from suanli.probe.metrics import StepMetrics, mfu_of_step
from suanli.probe.records import SpanRecord, StepRecord

__all__ = ["SpanWriter"]

Item = StepRecord | SpanRecord
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_ERROR = Status(StatusCode.ERROR, "the step raised")
_UNSET = Status(StatusCode.UNSET)


def _step_attrs(rec: StepRecord) -> dict[str, Any]:
    attrs: dict[str, Any] = {"train.step": rec.step}
    if rec.tokens is not None:
        attrs["train.tokens"] = int(rec.tokens) if float(rec.tokens).is_integer() else rec.tokens
    if rec.model_flops is not None:
        attrs["train.model_flops"] = float(rec.model_flops)
    return attrs


def _span_id() -> int:
    return random.getrandbits(64) or 1


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
        self._draining = threading.Lock()
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
        with self._draining:                # the export thread, or a flush from the training thread
            self._drain()

    def _drain(self) -> None:
        while self._queue:
            item, n = self._queue.popleft()
            self.taken_spans += n
            try:
                if isinstance(item, StepRecord):
                    self._emit_step(item)
                else:
                    self._end(item.name, SpanContext(random.getrandbits(128) or 1, _span_id(), False, _SAMPLED),
                              None, item.start_ns, item.end_ns, item.attrs)
                self.emitted += n
            except Exception:  # a bad record is lost, the thread goes on
                self.errors += 1

    def _end(self, name: str, ctx: SpanContext, parent: SpanContext | None, start_ns: int, end_ns: int,
             attrs: dict[str, Any] | None, links: tuple[Link, ...] = (), status: Status | None = None) -> None:
        p = self.pipeline
        span = ReadableSpan(name, ctx, parent, p.resource, attrs, links=links, start_time=start_ns,
                            end_time=end_ns, instrumentation_scope=p.scope, status=status or _UNSET)
        p.processor.on_end(span)

    def _emit_step(self, rec: StepRecord) -> None:
        trace_id = step_trace_id(self.job_id, rec.step)
        root = SpanContext(trace_id, _span_id(), False, _SAMPLED)
        self._end("train_step", root, None, rec.start_ns, rec.end_ns, _step_attrs(rec),
                  status=_ERROR if rec.failed else None)
        for ph in rec.phases:
            links = ((Link(SpanContext(trace_id, ph.link, True, _SAMPLED)),) if ph.link else ())
            self._end(ph.name, SpanContext(trace_id, _span_id(), False, _SAMPLED), root, ph.start_ns,
                      ph.end_ns, ph.attrs, links)
        if self.metrics is not None:
            step_s = (rec.end_ns - rec.start_ns) / 1e9
            self.metrics.observe(step_s, mfu_of_step(rec.model_flops, step_s, self.peak_flops))

    def close(self, timeout_s: float) -> None:
        self._stop.set()
        self._thread.join(timeout_s)
