"""The live twin's logs: the scenario's kernel and trainer logs appended, line by line, to files
that ``serve`` follows (``logs:``), as the simulated clock passes each line's time.

A line that starts with an RFC 3339 / ISO 8601 time (what the simulator writes, ``2026-03-17T10:58:35.650406+00:00
node-002 kernel: ...``) is written with that time shifted onto the twin's clock; a line that does
not (a continuation: an indented frame of a multi-line record) goes with the line before it, so a
record is never split across two reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["LogReplay", "shifted_line"]


def _leading_time(line: str) -> tuple[float, str] | None:
    """(epoch seconds, the rest after the stamp) of a line that starts with an ISO 8601 time."""
    head, sep, rest = line.partition(" ")
    if not sep or len(head) < 19 or head[4] != "-" or "T" not in head:
        return None
    try:
        t = datetime.fromisoformat(head.replace("Z", "+00:00"))
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return t.timestamp(), rest


def shifted_line(line: str, offset_s: float) -> str:
    """``line`` with its leading time moved by ``offset_s`` (written in UTC, microseconds), or as it is."""
    parsed = _leading_time(line)
    if parsed is None:
        return line
    t, rest = parsed
    stamp = datetime.fromtimestamp(t + offset_s, tz=UTC).isoformat(timespec="microseconds")
    return f"{stamp} {rest}"


@dataclass
class _File:
    out: Path
    records: list[tuple[float, list[str]]]
    """(simulated time, lines) of each record, by time."""
    next: int = 0


def _records(path: Path) -> list[tuple[float, list[str]]]:
    out: list[tuple[float, list[str]]] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        parsed = _leading_time(line)
        if parsed is not None:
            out.append((parsed[0], [line]))
        elif out:
            out[-1][1].append(line)
        # an untimed line before the first timed one has no time to be played at: left out
    out.sort(key=lambda r: r[0])
    return out


@dataclass
class LogReplay:
    """Plays ``folder``'s ``*.log`` files into ``out_dir`` (same names) with times moved by ``offset_s``."""

    folder: Path
    out_dir: Path
    offset_s: float
    files: list[_File] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        for src in sorted(self.folder.glob("*.log")):
            out = self.out_dir / src.name
            out.write_text("")
            self.files.append(_File(out, _records(src)))

    def advance(self, sim_now: float) -> int:
        """Append every record up to ``sim_now``; how many lines were written."""
        written = 0
        for f in self.files:
            lines: list[str] = []
            while f.next < len(f.records) and f.records[f.next][0] <= sim_now:
                lines += [shifted_line(x, self.offset_s) for x in f.records[f.next][1]]
                f.next += 1
            if lines:
                with f.out.open("a", encoding="utf-8") as fh:
                    fh.write("\n".join(lines) + "\n")
                written += len(lines)
        return written

    def done(self, until: float) -> bool:
        """Every record up to ``until`` is written (a stray line dated years ahead never holds it up)."""
        return all(f.next >= len(f.records) or f.records[f.next][0] > until for f in self.files)

    def log_config(self) -> list[dict[str, object]]:
        """``logs:`` entries of a serve config for the replayed files (read from their start)."""
        return [{"path": str(f.out), "from_start": True} for f in self.files]
