"""``Probe``: step and phase spans from inside the training loop, never raising into it.

The hot path (``step``, ``phase``, the DDP hook's ``comm_begin``/``comm_end``) only makes timer
marks and appends to lists; a finished step waits in ``_pending`` until its timer can read it
(at once on the CPU, after its CUDA events completed on a GPU), then goes to the export thread.
Every entry point catches everything: an internal error is counted, and after
``max_errors`` of them the probe switches itself off. The training code's own exceptions pass
through untouched.
"""

from __future__ import annotations

import atexit
import functools
import math
import time
from collections import deque
from types import TracebackType
from typing import Any

from suanli.probe.config import ProbeConfig
from suanli.probe.records import PhaseRecord, SpanRecord, StepRecord, Timer, WallClock

__all__ = ["MAX_PENDING_STEPS", "MAX_PHASES_PER_STEP", "NOOP", "Probe"]

MAX_PHASES_PER_STEP = 256
"""Children kept per step (a loop opening phases without end cannot grow memory)."""
MAX_PENDING_STEPS = 8
"""Steps waiting for their timer; an older one is resolved with what it has."""
_NAME_MAX = 64


class _Noop:
    """What every annotation returns when the probe is off: a do-nothing context manager."""

    __slots__ = ()

    def __enter__(self) -> _Noop:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


NOOP = _Noop()


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        out = int(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return out if -(2**63) <= out < 2**63 else None


def _count_or_none(value: Any) -> float | None:
    """A finite non-negative number, else None (hostile tokens / FLOPs are left out)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        out = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return out if math.isfinite(out) and out >= 0 else None


class _Scope:
    """``with probe.step(...)`` / ``with probe.phase(...)``: calls back into the probe, safely."""

    __slots__ = ("_args", "_enter", "_exit", "_probe", "_token")

    def __init__(self, probe: Probe, enter: Any, exit_: Any, args: tuple[Any, ...]) -> None:
        self._probe, self._enter, self._exit, self._args = probe, enter, exit_, args
        self._token: Any = None

    def __enter__(self) -> _Scope:
        try:
            self._token = self._enter(*self._args)
        except Exception:
            self._probe._fault()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            self._exit(self._token, et is not None)
        except Exception:
            self._probe._fault()


class Probe:
    """The training-side probe. ``Probe(job_id="llama", rank=0)``; every keyword of ProbeConfig."""

    def __init__(self, job_id: str | None = None, rank: int | None = None, *, timer: Timer | None = None,
                 exporter: Any = None, **options: Any) -> None:
        self.config = ProbeConfig.from_env(job_id=job_id, rank=rank, **options)
        self.timer: Timer = timer or WallClock()
        self.errors = 0
        self.bad_inputs = 0
        self.outside_step = 0
        self._on = self.config.enabled is not False
        self._current: StepRecord | None = None
        self._pending: deque[StepRecord] = deque()
        self._last_step = -1
        self._init_sent = False
        self._closed = False
        self._writer: Any = None
        self._pipeline: Any = None
        self._metrics: Any = None
        self.resource: dict[str, Any] = {}
        if self._on:
            try:
                self._start(exporter)
            except Exception:
                self._on = False
                self.errors += 1

    def _start(self, exporter: Any) -> None:
        from opentelemetry.sdk.resources import OTELResourceDetector

        from suanli.probe.export import build_pipeline
        from suanli.probe.identity import dist_rank_world, process_start_ns, resource_attributes
        from suanli.probe.writer import SpanWriter

        self._process_start_ns = process_start_ns()
        d_rank, d_world = dist_rank_world()
        rank = self.config.rank if self.config.rank is not None else (d_rank or 0)
        world = self.config.world_size or d_world or 1
        env_attrs = dict(OTELResourceDetector().detect().attributes)
        self.resource = resource_attributes(self.config, env_attrs, rank, world)
        self.job_id = str(self.resource.get("job.id") or "unknown-job")
        self.rank = _int_or_none(self.resource.get("framework.pytorch.rank")) or 0
        self.group_id = str(self.resource.get("nccl.group_id") or f"{self.job_id}/world")
        self._pipeline = build_pipeline(self.config, self.resource, exporter)
        if self.config.metrics_port is not None and self.rank == 0:
            from suanli.probe.metrics import StepMetrics

            self._metrics = StepMetrics(self.job_id, self.config.metrics_port, self.config.metrics_addr,
                                        lambda: float(self.dropped))
        self._writer = SpanWriter(self._pipeline, self.job_id, self.config.queue_size,
                                  metrics=self._metrics, peak_flops=self.config.peak_flops)
        atexit.register(self.close)

    # -- public annotations ------------------------------------------------------------------
    @property
    def enabled(self) -> bool:
        return self._on

    def step(self, step: Any, tokens: Any = None, model_flops: Any = None) -> Any:
        """``with probe.step(i, tokens=n):`` one ``train_step`` span (``model_flops`` default:
        tokens x ``flops_per_token``)."""
        if not self._on:
            return NOOP
        return _Scope(self, self._begin_step, self._end_step, (step, tokens, model_flops))

    def phase(self, name: str) -> Any:
        """``with probe.phase("forward"):`` a child of the current step (data_load, forward,
        backward, optimizer, or a name of your own)."""
        if not self._on:
            return NOOP
        return _Scope(self, self._begin_phase, self._end_phase, (name,))

    def annotate(self, tokens: Any = None, model_flops: Any = None) -> None:
        """Set ``train.tokens`` (and ``train.model_flops``, default tokens x ``flops_per_token``) of
        the current step, when they are known only inside it. Never raises."""
        rec = self._current
        tok, flops = _count_or_none(tokens), _count_or_none(model_flops)
        if rec is None or (tok is None and flops is None):
            return
        if tok is not None:
            rec.tokens = tok
            if flops is None and self.config.flops_per_token:
                flops = tok * self.config.flops_per_token
        if flops is not None:
            rec.model_flops = flops

    def checkpoint_save(self, step: Any = None) -> Any:
        """``with probe.checkpoint_save():`` a ``checkpoint_save`` span."""
        return self._outside("checkpoint_save", step)

    def checkpoint_load(self, step: Any = None) -> Any:
        """``with probe.checkpoint_load():`` a ``checkpoint_load`` span."""
        return self._outside("checkpoint_load", step)

    # -- steps -------------------------------------------------------------------------------
    def _begin_step(self, step: Any, tokens: Any, model_flops: Any) -> None:
        if self._current is not None:            # a step never closed: close it now
            self.bad_inputs += 1
            self._end_step(None, False)
        s = _int_or_none(step)
        if s is None:
            self.bad_inputs += 1
            s = self._last_step + 1
        self._last_step = s
        mark = self.timer.mark()
        now = mark if type(mark) is int else time.time_ns()     # the wall clock's mark is the time
        if not self._init_sent:
            self._init_sent = True
            start = min(self._process_start_ns, now)
            self._writer.put(SpanRecord("init", start, now), 1)
        tok = _count_or_none(tokens)
        flops = _count_or_none(model_flops)
        if flops is None and tok is not None and self.config.flops_per_token:
            flops = tok * self.config.flops_per_token
        self._current = StepRecord(s, now, mark, tok, flops)

    def _end_step(self, _token: Any, failed: bool) -> None:
        rec = self._current
        if rec is None:
            self.bad_inputs += 1
            return
        rec.end = self.timer.mark()
        rec.failed = failed
        self._current = None
        self._pending.append(rec)
        self._release(force=False)

    def _release(self, force: bool) -> None:
        """Hand on the pending steps whose marks can be read (oldest first)."""
        while self._pending:
            rec = self._pending[0]
            overdue = force or len(self._pending) > MAX_PENDING_STEPS
            try:
                ready = self.timer.resolve(rec, overdue)
            except Exception:              # an unreadable step is lost, not retried forever
                self._pending.popleft()
                self._fault()
                continue
            if not ready:
                return
            self._pending.popleft()
            self._writer.put(rec, 1 + len(rec.phases))

    # -- phases and collectives --------------------------------------------------------------
    def _child(self, name: Any, attrs: dict[str, Any] | None = None, link: int | None = None
               ) -> PhaseRecord | None:
        rec = self._current
        if rec is None:
            self.outside_step += 1
            return None
        if len(rec.phases) >= MAX_PHASES_PER_STEP:
            self.bad_inputs += 1
            return None
        text = name if isinstance(name, str) else str(name)
        ph = PhaseRecord(text[:_NAME_MAX] or "phase", self.timer.mark(), None, attrs, link)
        rec.phases.append(ph)
        if ph.name == "backward":
            rec.grads_ready = None
        return ph

    def _begin_phase(self, name: Any) -> PhaseRecord | None:
        return self._child(name)

    def _end_phase(self, ph: PhaseRecord | None, _failed: bool) -> None:
        if ph is None:
            return
        rec = self._current
        if ph.name == "backward" and rec is not None and rec.grads_ready is not None:
            ph.end = rec.grads_ready        # after the last bucket: waiting on the all-reduce
        else:
            ph.end = self.timer.mark()

    def comm_begin(self, op: str, nbytes: int, seq: int) -> PhaseRecord | None:
        """An ``allreduce`` child (any collective: ``nccl.op``); for the DDP hook. Never raises."""
        try:
            from suanli.probe.ids import collective_span_id

            attrs = {"nccl.op": op, "nccl.bytes": int(nbytes), "nccl.group_id": self.group_id,
                     "nccl.seq": int(seq)}
            rec = self._current
            link = collective_span_id(self.job_id, rec.step, self.group_id, seq) if rec else None
            return self._child("allreduce", attrs, link)
        except Exception:
            self._fault()
            return None

    def comm_end(self, ph: PhaseRecord | None, mark: Any) -> None:
        """The collective ``ph`` finished at ``mark`` (may run on a communication thread)."""
        if ph is not None:
            ph.end = mark

    def grads_ready(self) -> None:
        """The last gradient bucket is ready: ``backward`` compute ends here (for the DDP hook)."""
        rec = self._current
        if rec is not None:
            try:
                rec.grads_ready = self.timer.mark()
            except Exception:
                self._fault()

    # -- outside steps -----------------------------------------------------------------------
    def _outside(self, name: str, step: Any) -> Any:
        if not self._on:
            return NOOP
        return _Scope(self, time.time_ns, functools.partial(self._end_outside, name=name, step=step), ())

    def _end_outside(self, start_ns: int | None, failed: bool, name: str = "", step: Any = None) -> None:
        attrs: dict[str, Any] = {}
        s = _int_or_none(step)
        if s is not None:
            attrs["train.step"] = s
        self._writer.put(SpanRecord(name, start_ns or time.time_ns(), time.time_ns(), attrs or None), 1)

    # -- health ------------------------------------------------------------------------------
    def _fault(self) -> None:
        self.errors += 1
        if self.errors >= self.config.max_errors:
            self._on = False

    @property
    def dropped(self) -> int:
        """Spans left out: the probe's queue was full, or the exporter could not keep up."""
        w, p = self._writer, self._pipeline
        return (w.dropped if w else 0) + (p.counts.dropped if p else 0)

    def stats(self) -> dict[str, int]:
        """Counters of this probe (all zero when it never started)."""
        w, p = self._writer, self._pipeline
        return {"spans_emitted": w.emitted if w else 0, "spans_dropped": self.dropped,
                "spans_exported": p.counts.exported if p else 0,
                "spans_export_failed": p.counts.failed if p else 0,
                "errors": self.errors + (w.errors if w else 0), "bad_inputs": self.bad_inputs,
                "outside_step": self.outside_step}

    @property
    def metrics_port(self) -> int | None:
        return self._metrics.port if self._metrics is not None else None

    def flush(self, timeout_s: float = 5.0) -> None:
        """Export what is recorded so far (waits at most about ``timeout_s``)."""
        try:
            self._release(force=False)
            if self._writer is not None:
                self._writer.drain()
            if self._pipeline is not None:
                self._pipeline.flush(timeout_s)
        except Exception:
            self._fault()

    def close(self, timeout_s: float | None = None) -> None:
        """Flush and stop, bounded in time (a dead collector costs at most the timeout)."""
        writer = self._writer
        if writer is None or self._closed:
            return
        self._closed = True
        self._on = False
        try:
            budget = timeout_s if timeout_s is not None else self.config.export_timeout_s + 1.0
            self._release(force=True)
            writer.close(budget)
            self._pipeline.shutdown(budget)
            if self._metrics is not None:
                self._metrics.close()
            atexit.unregister(self.close)
        except Exception:
            self.errors += 1

    def __enter__(self) -> Probe:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
