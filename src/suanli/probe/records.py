"""What the training thread writes down: marks of steps and phases, resolved to times later.

A *mark* is whatever the timer makes: on the CPU an integer of ``time.time_ns()``, on a GPU a
CUDA event (suanli.probe.torch). A step's marks become nanoseconds when its timer says they are
ready (a CUDA event has completed), never by waiting.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["PhaseRecord", "SpanRecord", "StepRecord", "Timer", "WallClock"]


@dataclass(slots=True)
class PhaseRecord:
    """A child of ``train_step``: a phase or a collective (``link``: the collective's span id)."""

    name: str
    start: Any
    end: Any = None
    attrs: dict[str, Any] | None = None
    link: int | None = None
    start_ns: int = 0
    end_ns: int = 0


@dataclass(slots=True)
class StepRecord:
    """One ``train_step`` of this rank."""

    step: int
    host_start_ns: int
    start: Any
    tokens: float | None = None
    model_flops: float | None = None
    end: Any = None
    failed: bool = False
    phases: list[PhaseRecord] = field(default_factory=list)
    grads_ready: Any = None
    waited: int = 0
    start_ns: int = 0
    end_ns: int = 0


@dataclass(slots=True)
class SpanRecord:
    """A span outside steps (``init``, ``checkpoint_save``, ``checkpoint_load``), host times."""

    name: str
    start_ns: int
    end_ns: int
    attrs: dict[str, Any] | None = None


class Timer(Protocol):
    """Makes marks on the hot path and turns a finished step's marks into nanoseconds later."""

    def mark(self) -> Any:
        """A mark of now (cheap; never waits)."""

    def resolve(self, rec: StepRecord, force: bool) -> bool:
        """Fill ``start_ns``/``end_ns`` of the step and its phases; False while not ready (with
        ``force``, resolve what can be and leave out phases that never finished)."""


class WallClock:
    """Host wall-clock marks (the CPU path): ready as soon as every phase has ended."""

    mark = staticmethod(time.time_ns)

    def resolve(self, rec: StepRecord, force: bool) -> bool:
        if not force and any(p.end is None for p in rec.phases):
            return False
        rec.phases = [p for p in rec.phases if p.end is not None]
        rec.start_ns, rec.end_ns = int(rec.start), int(rec.end)
        for p in rec.phases:
            p.start_ns, p.end_ns = int(p.start), int(p.end)
        return True
