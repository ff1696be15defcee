"""Kineto device events -> :class:`~suanli.ingest.records.Span` records for the store and the ledger."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from suanli.ingest.kineto.kinds import KINDS, KinetoConfig
from suanli.ingest.kineto.trace import KinetoTrace, read_trace
from suanli.ingest.records import IngestReport, Span

__all__ = ["read_kineto", "trace_spans"]


def trace_spans(trace: KinetoTrace, job_id: str | None = None, config: KinetoConfig | None = None) -> list[Span]:
    """One span per device event (``config.device_cats``), seconds on the trace's clock, ``attrs["kind"]`` from ``config``.

    ``trace_id`` is the file's name and ``span_id`` the event's index in ``traceEvents``; ``step``
    is the ProfilerStep that launched the event (HTA's rule), else None. ``attrs`` also hold the
    category, stream, device, correlation and ``rank_source`` (``distributedInfo`` or ``file name``).
    """
    cfg = config or KinetoConfig()
    kinds = cfg.kind_codes(trace.names)
    steps = trace.launch_steps()
    source = Path(trace.path).name
    out: list[Span] = []
    for j in np.flatnonzero(trace.device_mask(cfg)):
        ts, dur = float(trace.ts_us[j]), float(trace.dur_us[j])
        nid = int(trace.name_id[j])
        corr, dev = int(trace.correlation[j]), int(trace.device[j])
        out.append(Span(
            trace_id=source, span_id=str(int(trace.event_no[j])), parent_id=None, name=trace.names[nid],
            start_s=ts / 1e6, end_s=(ts + dur) / 1e6, job_id=job_id, rank=trace.rank,
            step=int(steps[j]) if steps[j] >= 0 else None, gpu_id=None, node_id=None,
            attrs={"kind": KINDS[kinds[nid]], "cat": trace.cats[int(trace.cat_id[j])],
                   "stream": int(trace.stream[j]), "device": dev if dev >= 0 else None,
                   "correlation": corr if corr >= 0 else None, "rank_source": trace.rank_source}))
    return out


def read_kineto(path: str | Path, job_id: str | None = None, config: KinetoConfig | None = None,
                report: IngestReport | None = None) -> list[Span]:
    """Device-activity spans of one Kineto trace; what ``load_paths`` stores for a Kineto file.

    A file that is not a trace raises InputError (one line, file and line). Bad events and a
    truncated end are rejected into ``report`` (``file:line: what``), the good spans are returned.
    """
    trace = read_trace(path)
    spans = trace_spans(trace, job_id, config)
    if report is not None:
        report.add("kernels", len(spans))
        for problem in trace.problems:
            report.reject(problem)
    return spans
