"""Money and durations as people read them in evidence lines."""

from __future__ import annotations

import math

__all__ = ["duration", "money"]

_SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£", "CNY": "¥", "RMB": "¥", "JPY": "¥"}


def money(x: float, currency: str) -> str:
    """``$412``, ``$96.50``, ``€1,204``; a code the table does not know is written before it."""
    sym = _SYMBOLS.get(currency.upper())
    x = x if math.isfinite(x) else 0.0
    body = f"{abs(x):,.0f}" if abs(x) >= 100 else f"{abs(x):,.2f}"
    sign = "-" if x < 0 and body.strip("0.,") else ""
    return f"{sign}{sym}{body}" if sym else f"{sign}{body} {currency}"


def duration(s: float) -> str:
    """``2 s``, ``14 min``, ``4 h``, ``1.5 h``, ``3 d``."""
    s = max(s, 0.0) if math.isfinite(s) else 0.0
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    if s < 2 * 86400:
        return f"{s / 3600:.3g} h"
    return f"{s / 86400:.3g} d"
