"""CUDA-event timing of steps and phases, read one step (or more) later, never by waiting.

A mark is a ``torch.cuda.Event(enable_timing=True)`` recorded on the current stream. A step is
read once its last event has completed (``Event.query()``, which does not block): each mark's
time is the step's anchor plus ``elapsed_time`` from the step's first event. The anchor is the
host clock when the step began, pushed past the end of the previous step, so steps of one rank
never overlap even when the GPU runs behind the host. Only a step that is still unfinished after
``MAX_PENDING_STEPS`` newer ones (the GPU 8 steps behind), or at ``close``, is waited for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from suanli.probe.records import StepRecord, Timer, WallClock

__all__ = ["CudaEventTimer", "anchored_ns", "default_timer"]


def anchored_ns(host_start_ns: int, prev_end_ns: int, elapsed_ms: Sequence[float]) -> tuple[int, list[int]]:
    """(anchor, absolute ns of each mark) from each mark's ms after the step's first event."""
    anchor = max(int(host_start_ns), int(prev_end_ns))
    return anchor, [anchor + round(ms * 1e6) for ms in elapsed_ms]


class CudaEventTimer:
    """Marks are CUDA events on the current stream (the code path used where CUDA is available)."""

    def __init__(self) -> None:
        import torch

        self._event = torch.cuda.Event
        self._prev_end_ns = 0

    def mark(self) -> Any:
        ev = self._event(enable_timing=True)  # type: ignore[no-untyped-call]
        ev.record()
        return ev

    def resolve(self, rec: StepRecord, force: bool) -> bool:
        if not force and (any(p.end is None for p in rec.phases) or not rec.end.query()):
            return False
        if not rec.end.query():
            rec.end.synchronize()
        rec.phases = [p for p in rec.phases if p.end is not None and p.end.query()]
        first = rec.start
        marks = [rec.end] + [m for p in rec.phases for m in (p.start, p.end)]
        anchor, ns = anchored_ns(rec.host_start_ns, self._prev_end_ns,
                                 [first.elapsed_time(m) for m in marks])
        rec.start_ns, rec.end_ns = anchor, ns[0]
        for i, p in enumerate(rec.phases):
            p.start_ns, p.end_ns = ns[1 + 2 * i], ns[2 + 2 * i]
        self._prev_end_ns = rec.end_ns
        return True


def default_timer() -> Timer:
    """CUDA events when ``torch.cuda.is_available()``, else the host wall clock."""
    import torch

    return CudaEventTimer() if torch.cuda.is_available() else WallClock()
