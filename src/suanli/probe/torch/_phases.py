"""Open and close step and phase scopes from framework callbacks (one phase open at a time)."""

from __future__ import annotations

from typing import Any

from suanli.probe.core import Probe

__all__ = ["PhaseTracker"]


class PhaseTracker:
    """``begin_step`` / ``switch(name)`` / ``end_step`` for callbacks that see moments, not blocks."""

    def __init__(self, probe: Probe) -> None:
        self.probe = probe
        self._step: Any = None
        self._phase: Any = None

    @property
    def in_step(self) -> bool:
        return self._step is not None

    def begin_step(self, step: int, tokens: Any = None) -> None:
        self.end_step()
        self._step = self.probe.step(step, tokens=tokens)
        self._step.__enter__()

    def switch(self, name: str | None) -> None:
        """Close the open phase; open ``name`` (None: none) inside the current step."""
        if self._phase is not None:
            self._phase.__exit__(None, None, None)
            self._phase = None
        if name is not None and self._step is not None:
            self._phase = self.probe.phase(name)
            self._phase.__enter__()

    def end_step(self, failed: bool = False) -> None:
        self.switch(None)
        if self._step is not None:
            err = RuntimeError("step failed") if failed else None
            self._step.__exit__(type(err) if err else None, err, None)
            self._step = None
