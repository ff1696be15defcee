"""The shape of an Alertmanager webhook payload (version 4) that ``diagnose --alerts`` correlates,
checked before any of it is used: a payload is an object with an ``alerts`` list; each alert an
object whose ``labels`` and ``annotations`` (when present) map names to scalars, ``startsAt`` /
``endsAt`` RFC 3339 times (or epoch seconds) between 1900 and 2200, ``status`` and ``fingerprint``
text. Anything else is an InputError naming the file, the line (JSON lines) and the key path."""

from __future__ import annotations

import math
from typing import Any

from suanli.errors import InputError
from suanli.timefmt import parse_time

__all__ = ["check_payload"]

_LO, _HI = -2_208_988_800.0, 7_258_118_400.0          # 1900-01-01 .. 2200-01-01
_SCALARS = (str, int, float, bool)


def check_payload(item: Any, file: str, line: int | None, key: str) -> None:
    """Raise an InputError for the first thing in ``item`` that is not a webhook payload."""
    if not isinstance(item, dict) or not isinstance(item.get("alerts"), list):
        raise InputError("expected an Alertmanager webhook object with an 'alerts' list", file=file, line=line,
                         key=key)
    for i, alert in enumerate(item["alerts"]):
        _check_alert(alert, file, line, f"{key}.alerts[{i}]")


def _check_alert(alert: Any, file: str, line: int | None, key: str) -> None:
    if not isinstance(alert, dict):
        raise InputError(f"an alert is an object, not {type(alert).__name__}", file=file, line=line, key=key)
    for name in ("labels", "annotations"):
        value = alert.get(name)
        if value is None:
            continue
        if not isinstance(value, dict) or not all(isinstance(v, _SCALARS) for v in value.values()):
            raise InputError("expected an object of names to text", file=file, line=line, key=f"{key}.{name}")
    for name in ("status", "fingerprint"):
        if alert.get(name) is not None and not isinstance(alert[name], str):
            raise InputError("expected text", file=file, line=line, key=f"{key}.{name}")
    for name in ("startsAt", "endsAt"):
        value = alert.get(name)
        if value and not (name == "endsAt" and str(value).startswith("0001")):
            _check_time(value, file, line, f"{key}.{name}")


def _check_time(value: Any, file: str, line: int | None, key: str) -> None:
    try:
        ts = parse_time(value) if isinstance(value, str | int | float) and not isinstance(value, bool) else math.nan
    except (ValueError, OverflowError, OSError):
        ts = math.nan
    if not (math.isfinite(ts) and _LO <= ts <= _HI):
        shown = str(value)[:40]
        raise InputError(f"{shown!r} is not a time (expected RFC 3339, e.g. 2026-03-15T00:20:00Z)", file=file,
                         line=line, key=key)
