"""The time range one analysis pass looks at, and how an analysis resolves it against a store."""

from __future__ import annotations

from typing import NamedTuple, Protocol

__all__ = ["Window", "resolve_window"]


class _HasExtent(Protocol):
    def time_range(self) -> tuple[float, float] | None: ...


class Window(NamedTuple):
    """``[start, end]`` in epoch seconds (an immutable value; a tuple, so ``start, end = w``)."""

    start: float
    end: float

    @property
    def length_s(self) -> float:
        return self.end - self.start

    def overlaps(self, start: float, end: float | None) -> bool:
        """Whether ``[start, end]`` (``end`` None: still open) touches the window."""
        return start <= self.end and (end is None or end >= self.start)


def resolve_window(store: _HasExtent, window: Window | tuple[float, float] | None) -> Window | None:
    """``window`` as a :class:`Window`; None means the data's extent. None when the store is empty
    and no window was given (an analysis then returns an empty result)."""
    if window is not None:
        return Window(float(window[0]), float(window[1]))
    extent = store.time_range()
    return None if extent is None else Window(*extent)
