"""Times: suanli works in float seconds since the Unix epoch (UTC); RFC 3339 at the edges."""

from __future__ import annotations

import math
from datetime import UTC, datetime

__all__ = ["parse_time", "to_rfc3339"]


def parse_time(text: str | float | int | datetime) -> float:
    """RFC 3339 / ISO 8601 text (``Z`` or an offset; naive means UTC), a datetime, or epoch seconds."""
    if isinstance(text, datetime):
        dt = text if text.tzinfo else text.replace(tzinfo=UTC)
        return dt.timestamp()
    if isinstance(text, int | float):
        return float(text)
    s = text.strip()
    try:
        return float(s)
    except ValueError:
        pass
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    dt = datetime.fromisoformat(s)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def to_rfc3339(ts: float | None) -> str | None:
    """Epoch seconds to ``2026-03-15T00:20:00Z`` (whole seconds), None stays None."""
    if ts is None or (isinstance(ts, float) and not math.isfinite(ts)):
        return None
    return datetime.fromtimestamp(round(ts), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
