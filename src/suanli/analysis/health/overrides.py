"""Operator overrides: mark a GPU healthy again (or retired) with a reason, in an append-only
JSON-lines audit file (one object a line: who, when, gpu, state, reason).

The newest override of a GPU is the one in force. A GPU marked ``healthy`` is not recommended for
retirement until new hardware evidence (an SBE, DBE, remap or hardware Xid) arrives after the
override; a GPU marked ``retired`` is reported as retired whatever its numbers.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from suanli.errors import InputError
from suanli.timefmt import parse_time, to_rfc3339

__all__ = ["OVERRIDE_STATES", "Override", "latest_overrides", "load_overrides", "record_override"]

OVERRIDE_STATES: tuple[str, ...] = ("healthy", "retired")


@dataclass(frozen=True)
class Override:
    ts: float                  # epoch seconds
    gpu_id: str
    state: str                 # healthy | retired
    reason: str
    who: str

    def to_json(self) -> dict[str, object]:
        d: dict[str, object] = asdict(self)
        d["when"] = to_rfc3339(self.ts)
        return d


def record_override(path: str | Path, gpu_id: str, state: str, reason: str, who: str,
                    now: float | None = None) -> Override:
    """Append one override to the audit file (created if absent) and return it."""
    if state not in OVERRIDE_STATES:
        raise InputError(f"state must be one of {', '.join(OVERRIDE_STATES)}, got {state!r}", key="state")
    if not gpu_id or not reason.strip() or not who.strip():
        raise InputError("gpu_id, reason and who are required", key="override")
    ov = Override(time.time() if now is None else float(now), gpu_id, state, reason.strip(), who.strip())
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("a", encoding="utf-8") as f:
        f.write(json.dumps(ov.to_json(), sort_keys=True) + "\n")
    return ov


def load_overrides(path: str | Path) -> list[Override]:
    """Every override in the file, in file order; [] when it does not exist."""
    p = Path(path)
    if not p.exists():
        return []
    out: list[Override] = []
    for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            ts = float(d["ts"]) if "ts" in d else parse_time(str(d["when"]))
            state = str(d["state"])
            if state not in OVERRIDE_STATES:
                raise ValueError(f"state {state!r}")
            out.append(Override(ts, str(d["gpu_id"]), state, str(d["reason"]), str(d["who"])))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise InputError(f"bad override record: {exc}", file=str(p), line=n) from exc
    return out


def latest_overrides(overrides: list[Override]) -> dict[str, Override]:
    """The override in force per GPU (the newest by time)."""
    out: dict[str, Override] = {}
    for ov in sorted(overrides, key=lambda o: o.ts):
        out[ov.gpu_id] = ov
    return out
