"""Trace and span ids every rank derives alone, so the ranks of one step share a trace without talking.

* trace id of step ``s`` of job ``j``: the first 16 bytes of ``SHA-256(f"{j}/{s}")`` read as a
  big-endian integer (the 32 hex digits OTLP writes are the first 32 hex digits of the digest);
  an all-zero result (invalid in OpenTelemetry) becomes 1.
* collective id of the ``seq``-th collective of group ``g`` in that step: the first 8 bytes of
  ``SHA-256(f"{j}/{s}/{g}/{seq}")`` (zero becomes 1). Every rank's ``allreduce`` span links to
  (step trace id, collective id): one link target names one collective across all its ranks.
"""

from __future__ import annotations

import hashlib

__all__ = ["collective_span_id", "step_trace_id"]


def _digest_int(text: str, n_bytes: int) -> int:
    value = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:n_bytes], "big")
    return value or 1


def step_trace_id(job_id: str, step: int) -> int:
    """The trace id of ``(job, step)`` (128-bit integer)."""
    return _digest_int(f"{job_id}/{step}", 16)


def collective_span_id(job_id: str, step: int, group_id: str, seq: int) -> int:
    """The span id naming the ``seq``-th collective of ``group_id`` in ``step`` (64-bit integer)."""
    return _digest_int(f"{job_id}/{step}/{group_id}/{seq}", 8)
