"""The result of ``suanli profile``: one :class:`RankProfile` per trace, its JSON and its table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from suanli.analysis.profile.config import ProfileConfig

__all__ = ["FRACTION_KEYS", "TABLE_COLUMNS", "ProfileResult", "RankProfile", "format_profile_table",
           "profile_json", "profile_table"]

FRACTION_KEYS = ("compute", "communication", "exposed_communication", "other", "idle", "non_compute")
"""Keys of :attr:`RankProfile.fractions`; compute + exposed_communication + other + idle = 1."""
TABLE_COLUMNS = ("rank", "compute", "comm", "exposed comm", "other", "idle", "comm hidden", "span", "trace")


@dataclass(frozen=True)
class RankProfile:
    """The time split of one trace (one rank), seconds over the span of its counted device work."""

    trace: str
    rank: int | None
    rank_source: str | None        # "distributedInfo" | "file name" | None (unknown)
    world_size: int | None
    device_events: int             # device events counted
    left_out_events: int           # device events left out (last profiler step, waits)
    steps: tuple[int, ...]         # profiler steps whose launches are counted
    span_s: float                  # first counted event's start to the last one's end
    busy_s: float                  # union of all counted device events
    compute_s: float               # union of compute kernels
    communication_s: float         # union of communication kernels
    overlap_s: float               # communication ∩ compute
    memory_s: float                # union of memory events (copies, fills)
    problems: tuple[str, ...] = ()

    @property
    def exposed_comm_s(self) -> float:
        """Communication not under compute."""
        return max(self.communication_s - self.overlap_s, 0.0)

    @property
    def other_s(self) -> float:
        """Busy with neither compute nor communication (memory and other events alone)."""
        return max(self.busy_s - self.compute_s - self.exposed_comm_s, 0.0)

    @property
    def idle_s(self) -> float:
        return max(self.span_s - self.busy_s, 0.0)

    @property
    def comm_overlap(self) -> float | None:
        """Share of communication hidden under compute (HTA's comp_comm_overlap ratio); None without any."""
        return self.overlap_s / self.communication_s if self.communication_s > 0 else None

    @property
    def fractions(self) -> dict[str, float] | None:
        """Each part over the span; None when nothing was counted (a CPU-only trace)."""
        if self.span_s <= 0:
            return None
        parts = {"compute": self.compute_s, "communication": self.communication_s,
                 "exposed_communication": self.exposed_comm_s, "other": self.other_s,
                 "idle": self.idle_s, "non_compute": self.busy_s - self.compute_s}
        return {k: v / self.span_s for k, v in parts.items()}


@dataclass(frozen=True)
class ProfileResult:
    """Per-rank profiles, and one line per trace that could not be read."""

    ranks: tuple[RankProfile, ...]
    errors: tuple[str, ...]
    config: ProfileConfig


def _rank_json(r: RankProfile) -> dict[str, Any]:
    seconds = {"span": r.span_s, "busy": r.busy_s, "compute": r.compute_s,
               "communication": r.communication_s, "overlap": r.overlap_s,
               "exposed_communication": r.exposed_comm_s, "memory": r.memory_s, "other": r.other_s,
               "idle": r.idle_s}
    return {"trace": r.trace, "rank": r.rank, "rank_source": r.rank_source, "world_size": r.world_size,
            "device_events": r.device_events, "left_out_events": r.left_out_events, "steps": list(r.steps),
            "fractions": r.fractions, "comm_overlap": r.comm_overlap,
            "seconds": {k: round(v, 9) for k, v in seconds.items()}, "problems": list(r.problems)}


def profile_json(result: ProfileResult) -> dict[str, Any]:
    """The document ``suanli profile --json`` prints (docs/profile.md)."""
    k = result.config.kineto
    return {"ranks": [_rank_json(r) for r in result.ranks], "errors": list(result.errors),
            "config": {"device_cats": list(k.device_cats), "comm_patterns": list(k.comm_patterns),
                       "memory_patterns": list(k.memory_patterns), "other_patterns": list(k.other_patterns),
                       "wait_patterns": list(k.wait_patterns), "drop_last_step": result.config.drop_last_step,
                       "round_to_us": result.config.round_to_us}}


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _rank_label(r: RankProfile) -> str:
    if r.rank is None:
        return "unknown"
    return f"{r.rank} (file name)" if r.rank_source == "file name" else str(r.rank)


def profile_table(result: ProfileResult) -> list[tuple[str, ...]]:
    """Rows of plain strings under :data:`TABLE_COLUMNS`, for any renderer."""
    rows: list[tuple[str, ...]] = []
    for r in result.ranks:
        f = r.fractions or {}
        rows.append((_rank_label(r), _pct(f.get("compute")), _pct(f.get("communication")),
                     _pct(f.get("exposed_communication")), _pct(f.get("other")), _pct(f.get("idle")),
                     _pct(r.comm_overlap), f"{r.span_s * 1e3:.1f} ms", r.trace))
    return rows


def format_profile_table(result: ProfileResult) -> str:
    """The table as aligned plain text, then one line per problem and per error."""
    rows = [TABLE_COLUMNS, *profile_table(result)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(TABLE_COLUMNS))]
    lines = ["  ".join(c.ljust(w) if i in (0, 8) else c.rjust(w) for i, (c, w) in
                       enumerate(zip(row, widths, strict=True))).rstrip() for row in rows]
    lines += [p for r in result.ranks for p in r.problems]
    lines += [f"error: {e}" for e in result.errors]
    return "\n".join(lines)
