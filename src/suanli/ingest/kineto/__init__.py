"""PyTorch profiler (Kineto) traces: recognition, a streaming reader, and device-activity spans.

* :func:`is_kineto_trace` -- is this file a Kineto trace? (name, or a cheap sniff of its start)
* :func:`read_trace` -- one file -> :class:`KinetoTrace` (device events as NumPy columns, the
  launches, the profiler steps, the rank and where it came from), in one streaming pass
* :func:`read_kineto` -- one file -> ``list[Span]`` for the store (what ``load_paths`` calls)
* :class:`KinetoConfig` -- device categories and the kernel-kind patterns (:func:`kernel_kind`)

The time split of traces (HTA's temporal breakdown) is ``suanli.analysis.profile``.
"""

from suanli.ingest.kineto.kinds import KINDS, KinetoConfig, kernel_kind
from suanli.ingest.kineto.sniff import KINETO_SUFFIXES, is_kineto_trace, rank_from_name
from suanli.ingest.kineto.spans import read_kineto, trace_spans
from suanli.ingest.kineto.trace import KinetoTrace, read_trace

__all__ = [
    "KINDS",
    "KINETO_SUFFIXES",
    "KinetoConfig",
    "KinetoTrace",
    "is_kineto_trace",
    "kernel_kind",
    "rank_from_name",
    "read_kineto",
    "read_trace",
    "trace_spans",
]
