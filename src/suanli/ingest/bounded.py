"""Numbers from telemetry, bounded where they are parsed (issue 13 "Bounded parsing").

A count, a code, an id or a step is a whole number in int64 (what the store's BIGINT columns and
the analyses hold); no real record carries more. :func:`bounded_int` reads such a number from
text (or a JSON value) and raises :class:`OutOfBounds`, a ``ValueError``, for anything else: a digit
run longer than int64's 19 digits is refused before Python converts it (so a 4,301-digit run never
reaches ``int()``'s digit limit), a value outside ``[lo, hi]``, a non-finite or fractional float.
:func:`bounded_float` does the same for sizes and durations (finite, at most ``hi``).

The readers turn an ``OutOfBounds`` into one reject naming ``file:line``; the record is dropped,
the file's other records are kept.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["INT64_MAX", "INT64_MIN", "MAX_DIGITS", "OutOfBounds", "bounded_float", "bounded_int"]

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
MAX_DIGITS = 19
"""Digits of INT64_MAX (9223372036854775807): a longer run (leading zeros aside) is out of range."""


class OutOfBounds(ValueError):
    """A number no record can hold; ``str()`` names what it is and the value (shortened)."""


def _shown(value: object) -> str:
    text = str(value)
    return text if len(text) <= 24 else f"{text[:12]}...({len(text)} characters)"


def bounded_int(value: Any, what: str = "number", lo: int = INT64_MIN, hi: int = INT64_MAX) -> int:
    """``value`` (decimal text, an int, or a float with no fraction) as an int in ``[lo, hi]``."""
    if isinstance(value, bool):
        raise OutOfBounds(f"{what} {value!r}: not a number")
    if isinstance(value, int):
        number = value
    elif isinstance(value, float):
        if not math.isfinite(value) or value != math.floor(value) or not -2.0**63 <= value < 2.0**63:
            raise OutOfBounds(f"{what} {_shown(value)}: not a whole number in int64")
        number = int(value)
    elif isinstance(value, str):
        number = _int_text(value.strip(), what)
    else:
        raise OutOfBounds(f"{what} {_shown(value)}: not a number")
    if not lo <= number <= hi:
        raise OutOfBounds(f"{what} {_shown(number)}: out of range [{lo}, {hi}]")
    return number


def _int_text(text: str, what: str) -> int:
    digits = text[1:] if text[:1] in "+-" else text
    if not digits.isascii() or not digits.isdigit():
        raise OutOfBounds(f"{what} {_shown(text)}: not a whole number")
    if len(digits.lstrip("0")) > MAX_DIGITS:
        raise OutOfBounds(f"{what} {_shown(text)}: more than {MAX_DIGITS} digits")
    return int(text)


def bounded_float(value: Any, what: str = "number", lo: float = -math.inf, hi: float = math.inf) -> float:
    """``value`` (text or a number) as a finite float in ``[lo, hi]``."""
    if isinstance(value, bool):
        raise OutOfBounds(f"{what} {value!r}: not a number")
    if isinstance(value, str) and len(value) > 64:
        raise OutOfBounds(f"{what} {_shown(value)}: too long for a number")
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise OutOfBounds(f"{what} {_shown(value)}: not a number") from None
    if not math.isfinite(number) or not lo <= number <= hi:
        raise OutOfBounds(f"{what} {_shown(value)}: not a finite number in [{lo:g}, {hi:g}]")
    return number
