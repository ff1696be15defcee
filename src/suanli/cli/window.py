"""``--start``/``--end``: the window a verb analyses, checked for form, order and length."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from suanli.analysis.window import Window
from suanli.errors import InputError
from suanli.timefmt import parse_time, to_rfc3339

if TYPE_CHECKING:                      # every verb imports this module: not the whole Config at start-up
    from suanli.config import CommandsConfig

__all__ = ["flag_time", "verb_window"]


def flag_time(flag: str, text: str | None) -> float | None:
    """``--start``/``--end`` as epoch seconds; InputError naming the flag when it is not a time."""
    if text is None:
        return None
    try:
        ts = parse_time(text)
    except (ValueError, OverflowError):
        ts = math.nan
    if not math.isfinite(ts) or not -1e11 < ts < 1e11:
        raise InputError(f"{flag} {text!r}: not a time (expected RFC 3339, e.g. 2026-03-15T00:20:00Z)")
    return ts


def _when(ts: float) -> str:
    """RFC 3339 where representable, else the raw epoch seconds (a stray sample at t=1e300)."""
    try:
        return to_rfc3339(ts) or f"t={ts:g} s"
    except (OverflowError, OSError, ValueError):
        return f"t={ts:g} s"


def verb_window(data: tuple[float, float] | None, bounds: tuple[float | None, float | None],
                config: CommandsConfig) -> Window:
    """The analysed window: the flags where given, else the data's extent; checked for order and
    length (``CommandsConfig.max_window_s``)."""
    lo, hi = data or (0.0, 0.0)
    start = bounds[0] if bounds[0] is not None else lo
    end = bounds[1] if bounds[1] is not None else hi
    if end < start:
        first = "--start" if bounds[0] is not None else "the data's start"
        last = "--end" if bounds[1] is not None else "the data's end"
        raise InputError(f"{first} {_when(start)} is after {last} {_when(end)}")
    if end - start > config.max_window_s:
        what = "--start .. --end" if None not in bounds else "the data"
        hours = (end - start) / 3600
        length = f"{hours:,.0f} h" if hours < 1e9 else f"{hours:.3g} h"
        raise InputError(f"{what} spans {_when(start)} .. {_when(end)} ({length}); diagnose at most "
                         f"{config.max_window_s / 3600:g} h at a time: pass --start/--end")
    return Window(start, end)
