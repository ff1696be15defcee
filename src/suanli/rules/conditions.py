"""Parsing one condition string of the rule language (docs/rules.md) and durations.

Grammar (one string per condition)::

    metric OP NUMBER [/UNIT] [for DURATION]         gpu_temp > 85 for 5m ; pcie_aer_errors > 100/min
    sudden_increase(metric[, FACTOR]) [for DURATION]
    EVENT[(CODE, ...)] [OP NUMBER within DURATION]   xid(48) >= 1 within 24h ; xid(79) ; nccl_timeout >= 1 within 10m
    ANALYSIS_VALUE OP NUMBER [for DURATION]          health_score < 0.6

A metric may also be named as its exporter stores it (``DCGM_FI_DEV_GPU_TEMP > 85 for 5m``,
``node_infiniband_symbol_error_total > 1/min``): it stands for the friendly name of that metric.

Errors raise :class:`ValueError` with the reason; the rule loader adds file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from suanli.rules.names import ANALYSIS_VALUES, DERIVED, EVENT_KINDS, METRICS, valid_names

__all__ = ["OPS", "RATE_UNITS_S", "RAW_NAMES", "Condition", "parse_condition", "parse_duration", "value_unit"]

OPS: tuple[str, ...] = (">=", "<=", "==", "!=", ">", "<")
RATE_UNITS_S: dict[str, float] = {"s": 1.0, "sec": 1.0, "min": 60.0, "m": 60.0, "h": 3600.0,
                                  "hour": 3600.0, "d": 86400.0, "day": 86400.0}
_DUR_UNITS_S: dict[str, float] = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0,
                                  "w": 604800.0, "y": 31536000.0}
_DUR_RE = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)")
_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_COND_RE = re.compile(
    r"^(?P<name>[A-Za-z_][A-Za-z0-9_:]*)\s*(?:\((?P<args>[^)]*)\))?\s*"
    r"(?:(?P<op>>=|<=|==|!=|>|<)\s*(?P<num>\S+?)(?:\s*/\s*(?P<unit>[a-z]+))?)?"
    r"(?:\s+within\s+(?P<within>\S+))?(?:\s+for\s+(?P<for>\S+))?\s*$")


RAW_NAMES: dict[str, str] = {d.metric: d.name for d in METRICS.values()}
"""A metric's stored (exporter) name -> its friendly name."""


def _friendly(name: str) -> str:
    return RAW_NAMES.get(name, name)


def parse_duration(text: str) -> float:
    """Prometheus duration (``30s``, ``5m``, ``1h30m``, ``24h``) to seconds; ValueError if bad."""
    s = str(text).strip()
    pos = 0
    total = 0.0
    for m in _DUR_RE.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _DUR_UNITS_S[m.group(2)]
        pos = m.end()
    if pos != len(s) or not s:
        raise ValueError(f"bad duration {text!r} (expected like 30s, 5m, 1h30m, 24h)")
    return total


@dataclass(frozen=True)
class Condition:
    """One parsed condition.

    kind: ``metric`` (gauge or raw counter value), ``rate`` (counter per ``per_s`` seconds),
    ``ratio`` (derived rate ratio, crc_ratio), ``sudden`` (change point), ``event`` (count of log
    events in ``within_s``), ``analysis`` (a per-entity analysis value).
    """

    text: str
    kind: str
    name: str
    op: str
    threshold: float
    for_s: float = 0.0
    per_s: float | None = None
    within_s: float | None = None
    codes: tuple[int, ...] = ()
    factor: float | None = None


def _number(text: str, cond: str) -> float:
    if not re.fullmatch(_NUM, text):
        raise ValueError(f"bad number {text!r} in condition {cond!r}")
    return float(text)


def _unknown(name: str, cond: str) -> ValueError:
    return ValueError(f"unknown metric {name!r} in condition {cond!r}; valid names: "
                      + ", ".join(valid_names()))


def _parse_event(name: str, args: str | None, op: str | None, num: str | None,
                 within: str | None, cond: str, default_window_s: float) -> Condition:
    codes: tuple[int, ...] = ()
    if args is not None:
        try:
            codes = tuple(int(a) for a in args.split(",") if a.strip())
        except ValueError:
            raise ValueError(f"bad event codes {args!r} in condition {cond!r} (expected integers)") from None
    kind = "cuda_oom" if name == "oom" else name
    threshold = 1.0 if num is None else _number(num, cond)
    within_s = parse_duration(within) if within else default_window_s
    return Condition(cond, "event", kind, op or ">=", threshold, within_s=within_s, codes=codes)


def parse_condition(text: str, default_event_window_s: float = 3600.0,
                    default_sudden_factor: float = 10.0) -> Condition:
    """Parse one condition string; ValueError names what is wrong and what is expected."""
    cond = " ".join(str(text).split())
    m = _COND_RE.match(cond)
    if m is None:
        raise ValueError(f"cannot parse condition {cond!r} (expected 'NAME OP NUMBER [/UNIT] "
                         f"[for DURATION]'; comparisons: {' '.join(OPS)})")
    name, args, op, num = _friendly(m["name"]), m["args"], m["op"], m["num"]
    for_s = parse_duration(m["for"]) if m["for"] else 0.0
    if name in EVENT_KINDS:
        if m["for"]:
            raise ValueError(f"event condition {cond!r} takes 'within DURATION', not 'for'")
        return _parse_event(name, args, op, num, m["within"], cond, default_event_window_s)
    if m["within"]:
        raise ValueError(f"'within' only applies to event counts ({', '.join(EVENT_KINDS)}): {cond!r}")
    if name == "sudden_increase":
        parts = [a.strip() for a in (args or "").split(",") if a.strip()]
        parts[:1] = [_friendly(p) for p in parts[:1]]
        if not parts or parts[0] not in METRICS or not METRICS[parts[0]].counter:
            raise ValueError(f"sudden_increase needs a counter metric in {cond!r}; counters: "
                             + ", ".join(sorted(k for k, v in METRICS.items() if v.counter)))
        factor = _number(parts[1], cond) if len(parts) > 1 else default_sudden_factor
        if op is not None:
            raise ValueError(f"sudden_increase(...) takes no comparison: {cond!r}")
        return Condition(cond, "sudden", parts[0], ">", factor, for_s=for_s, factor=factor)
    if args is not None:
        raise ValueError(f"unknown function {name!r} in condition {cond!r}; functions: "
                         f"sudden_increase, {', '.join(EVENT_KINDS)}")
    if op is None or num is None:
        raise ValueError(f"missing comparison in condition {cond!r} (expected one of {' '.join(OPS)} "
                         f"and a number)")
    threshold = _number(num, cond)
    if name in ANALYSIS_VALUES:
        return Condition(cond, "analysis", name, op, threshold, for_s=for_s)
    if name in DERIVED:
        return Condition(cond, "ratio", name, op, threshold, for_s=for_s)
    if name not in METRICS:
        raise _unknown(name, cond)
    unit = m["unit"]
    if unit is None:
        return Condition(cond, "metric", name, op, threshold, for_s=for_s)
    if unit not in RATE_UNITS_S:
        raise ValueError(f"bad rate unit {unit!r} in {cond!r} (expected /s, /min, /h or /day)")
    if not METRICS[name].counter:
        raise ValueError(f"{name!r} is a gauge, a rate (/{unit}) needs a counter: {cond!r}")
    return Condition(cond, "rate", name, op, threshold, for_s=for_s, per_s=RATE_UNITS_S[unit])


_SHOWN_UNITS: dict[str, str] = {"celsius": "°C", "percent": "%", "watts": "W", "seconds": "s", "bytes/s": "B/s",
                                "ratio": "", "flag": "", "code": "", "bitmask": ""}
_PER: dict[float, str] = {1.0: "s", 60.0: "min", 3600.0: "h", 86400.0: "day"}


def value_unit(cond: Condition) -> str:
    """The unit of a condition's value as a person reads it ("°C", "errors/min", "" for a pure
    number such as a ratio or an analysis score)."""
    if cond.kind == "event":
        return "events"
    if cond.kind == "ratio":
        num, den = DERIVED[cond.name]
        return f"{METRICS[num].unit}/{METRICS[den].unit.rstrip('s')}"
    if cond.kind not in ("metric", "rate", "sudden"):
        return ""
    unit = METRICS[cond.name].unit
    if cond.kind == "metric":
        return _SHOWN_UNITS.get(unit, unit)
    per_s = cond.per_s or 1.0
    return f"{unit}/{_PER.get(per_s) or f'{per_s:g} s'}"
