"""Lines -> records: the one step between a log's lines and their classification.

A line with a head (:mod:`suanli.ingest.log_head`) starts a record, placed in time by
:mod:`suanli.ingest.log_time`; a line without one continues the record above. In a file with no
heads at all each unindented line starts a record, indented lines and tracebacks continuing it.
Some records are written over several headed lines, and are joined here:

- a Python traceback that journald stamped line by line (same process, within
  ``LogConfig.traceback_join_s``), up to and including its exception line;
- a CUDA error that journald split over indented lines (ggml's ``CUDA error: ...`` /
  ``  current device: 0, in function ...`` / ``  call`` / ``file.cu:110: CUDA error``);
- C++ stack frames (``frame #3: ...``) and ``Exception raised from ...`` lines: they belong to the
  record above (PyTorch's ``c10::Error`` dumps), never start one; frames with no record above make
  one record of their own, marked ``frames_only``;
- an NVSwitch SXid that the driver prints as up to three lines (``Data {...}``; ``Fatal|Non-fatal,
  Link N ...``; ``Severity S Engine instance N ...``), interleaved with other switches' lines: the
  parts of one switch, PCI address and code join while each part comes once, the link and engine
  instance agree, and they come within ``LogConfig.sxid_join_s`` of each other.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field

from suanli.ingest.log_config import LogConfig
from suanli.ingest.log_head import Head, parse_head
from suanli.ingest.log_time import Placer

__all__ = ["Record", "RecordAssembler"]

_RANK_PREFIX = re.compile(r"^\s?\[rank\d+\]:\s?")
_FRAME = re.compile(r"^\s*(?:frame #\d+: |Exception raised from \S)")
_CUDA_TRAILER = re.compile(r"^\S+:\d+: CUDA error$")
_SXID_PART = re.compile(r"(?P<dev>nvidia-nvswitch\d+)?:?\s*SXid \((?:PCI:)?(?P<pci>[0-9A-Fa-f:.]+)\): (?P<code>\d+),\s*"
                        r"(?P<rest>.*)$")
_SXID_LINK = re.compile(r"\bLink (?P<n>\d+)|\bEngine instance (?P<e>\d+)")


def body(message: str) -> str:
    """A message without torchrun's ``[rankN]:`` prefix (indentation after it kept)."""
    m = _RANK_PREFIX.match(message)
    return message[m.end():] if m else message


@dataclass
class Record:
    """One record: its head (None in a file without heads), first line number, time (NaN when it
    cannot be placed, with ``why``) and lines."""

    head: Head | None
    lineno: int
    ts: float
    lines: list[str]
    why: str | None = None
    dropped: int = 0
    traceback_open: bool = False
    frames_only: bool = False
    parts: set[str] = field(default_factory=set)
    link: int | None = None

    @property
    def placed(self) -> bool:
        return math.isfinite(self.ts)


def _sxid_part(rest: str) -> tuple[str, int | None]:
    """Which of the three parts an SXid line is, and the link / engine instance it names."""
    m = _SXID_LINK.search(rest)
    link = int(m.group("n") or m.group("e")) if m else None
    if rest.startswith("Data {"):
        return "data", link
    if rest.startswith("Severity "):
        return "severity", link
    return "text", link


class RecordAssembler:
    """Feed lines in order with :meth:`feed`; :meth:`close` at the end. Both return finished records."""

    def __init__(self, config: LogConfig, placer: Placer) -> None:
        self.config, self.placer = config, placer
        self.year = config.assume_year or _year_of(placer.anchor)
        self.seen_head = False
        self.rec: Record | None = None
        self.sxid: dict[tuple[str | None, str | None, str, str], Record] = {}
        self.lines_read = 0

    def feed(self, lineno: int, line: str) -> list[Record]:
        line = line.rstrip("\r\n")
        self.lines_read += 1
        head = parse_head(line, self.year)
        if head is not None:
            return self._headed(head, lineno)
        if not line.strip():
            return [] if self.seen_head else self._finish()
        rec = self.rec
        indented = line[:1].isspace()
        frame = _FRAME.match(line) is not None
        if rec is not None and (self.seen_head or indented or rec.traceback_open or frame):
            self._append(rec, line.rstrip())
            rec.frames_only = rec.frames_only and frame
            if rec.traceback_open and not (indented or body(line)[:1].isspace()):
                rec.traceback_open = False
            return []
        out = self._finish()
        self.rec = Record(None, lineno, math.nan, [line.strip()], why="no timestamp in its line",
                          traceback_open=line.startswith("Traceback"), frames_only=frame)
        return out

    def close(self) -> list[Record]:
        out = self._finish()
        out.extend(self.sxid.values())
        self.sxid.clear()
        return out

    # -- headed lines ---------------------------------------------------------------------------
    def _headed(self, head: Head, lineno: int) -> list[Record]:
        if self._joins(head):
            return []
        out = self._finish()
        self.seen_head = True
        host = self.host(head)
        ts, why = self.placer.place(head, host)
        out.extend(self._expire(ts))
        msg = head.message.strip()
        sx = _SXID_PART.search(msg) if "SXid" in msg else None
        if sx is not None:
            out.extend(self._sxid(head, lineno, ts, why, msg, sx))
            return out
        self.rec = Record(head, lineno, ts, [msg], why=why, traceback_open=body(msg).startswith("Traceback"),
                          frames_only=_FRAME.match(body(msg)) is not None)
        return out

    def host(self, head: Head | None) -> str | None:
        """The host a record's lines come from: the head's, else the file's (``default_host``)."""
        if head is None:
            return self.config.default_host
        if head.addr_host and self.config.default_host:
            return self.config.default_host
        return head.host or self.config.default_host

    def _joins(self, head: Head) -> bool:
        """A headed line that continues the open record of the same process: a traceback's lines,
        a split CUDA error's indented lines and trailer, C++ frames."""
        rec = self.rec
        if rec is None or rec.head is None:
            return False
        first = rec.head
        if (first.host, first.ident, first.pid) != (head.host, head.ident, head.pid):
            return False
        if head.ts - first.ts > self.config.traceback_join_s:      # as written (same zone); NaN: joined
            return False
        text = body(head.message)
        if rec.traceback_open:
            self._append(rec, head.message.rstrip())
            if text.strip() and not text[:1].isspace():
                rec.traceback_open = False
            return True
        if _FRAME.match(text) or (self._cuda_error(rec) and (text[:2].isspace() or _CUDA_TRAILER.match(text.strip()))):
            self._append(rec, head.message.rstrip())
            return True
        return False

    @staticmethod
    def _cuda_error(rec: Record) -> bool:
        return "CUDA error" in rec.lines[0] and not _CUDA_TRAILER.match(rec.lines[-1].strip())

    def _append(self, rec: Record, line: str) -> None:
        if len(rec.lines) < self.config.max_record_lines:
            rec.lines.append(line)
        else:
            rec.dropped += 1

    def _finish(self) -> list[Record]:
        rec, self.rec = self.rec, None
        return [] if rec is None else [rec]

    # -- SXid records printed over several lines ---------------------------------------------------
    def _sxid(self, head: Head, lineno: int, ts: float, why: str | None, msg: str,
              m: re.Match[str]) -> list[Record]:
        key = (self.host(head), m.group("dev"), m.group("pci").lower(), m.group("code"))
        part, link = _sxid_part(m.group("rest"))
        held = self.sxid.get(key)
        out: list[Record] = []
        if held is not None and self._sxid_joins(held, part, link, ts):
            self._append(held, msg)
            held.parts.add(part)
            held.link = held.link if link is None else link
            if len(held.parts) == 3:
                out.append(self.sxid.pop(key))
            return out
        if held is not None:
            out.append(self.sxid.pop(key))
        self.sxid[key] = Record(head, lineno, ts, [msg], why=why, parts={part}, link=link)
        return out

    def _sxid_joins(self, held: Record, part: str, link: int | None, ts: float) -> bool:
        if part in held.parts or (link is not None and held.link is not None and link != held.link):
            return False
        return not abs(ts - held.ts) > self.config.sxid_join_s               # NaN times: joined

    def _expire(self, now: float) -> list[Record]:
        """SXid records the stream has moved past (``sxid_join_s`` after their first line)."""
        if not self.sxid or not math.isfinite(now):
            return []
        gone = [k for k, r in self.sxid.items() if r.placed and now - r.ts > self.config.sxid_join_s]
        return [self.sxid.pop(k) for k in gone]


def _year_of(ts: float) -> int:
    return time.gmtime(ts).tm_year if 0 <= ts < 253402300800 else time.gmtime().tm_year
