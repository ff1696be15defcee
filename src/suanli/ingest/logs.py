"""Kernel, driver and trainer log lines -> :class:`~suanli.ingest.records.Event` (spec/telemetry.md, "Log lines").

A line with a head (a timestamp, a dmesg/kmsg prefix, a PyTorch or NCCL prefix: see
:mod:`suanli.ingest.log_head`) starts a record; a line without one continues the record above
(a Python traceback, a multi-line NCCL or NVRM dump is one event). In a file with no heads at all
each line is a record, indented lines and tracebacks continuing it. Records are recognised
(:mod:`suanli.ingest.log_classify`), mapped to the entity at fault (Xid / AER / OOM to the GPU when
the inventory resolves it, else the node; NCCL to the job's rank when known), and repeated
identical events are collapsed into one with a ``count`` (:mod:`suanli.ingest.log_collapse`).

Nothing here raises on bad input: undecodable bytes are replaced, a record that cannot be placed
in time gets the time of the record before it (NaN when there is none) and is counted in
``report.unresolved["log_time"]``.
"""

from __future__ import annotations

import calendar
import dataclasses
import io
import math
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from suanli.ingest.bounded import OutOfBounds
from suanli.ingest.files import open_bytes
from suanli.ingest.log_classify import Classified, add_aer_detail, classify, collapse_text
from suanli.ingest.log_collapse import Collapser
from suanli.ingest.log_config import LogConfig
from suanli.ingest.log_entities import EntityMapper, host_from_path
from suanli.ingest.log_head import Head, parse_head
from suanli.ingest.records import Event, IngestReport
from suanli.ingest.xid import sxid_info, xid_info
from suanli.inventory import Resolver

__all__ = ["LogConfig", "parse_log_lines", "read_log"]


_RANK_PREFIX = re.compile(r"^\s?\[rank\d+\]:\s?")


def _body(message: str) -> str:
    """A message without torchrun's ``[rankN]:`` prefix (indentation after it kept)."""
    m = _RANK_PREFIX.match(message)
    return message[m.end():] if m else message


@dataclass
class _Record:
    head: Head | None
    lineno: int
    ts: float
    own_time: bool
    lines: list[str]
    dropped: int = 0
    traceback_open: bool = False


class _LogParser:
    """One stream: assembles records, builds events, merges AER details, collapses repeats."""

    def __init__(self, source: str, resolver: Resolver | None, report: IngestReport, config: LogConfig) -> None:
        self.source, self.report, self.config = source, report, config
        self.collapser = Collapser(config.collapse_gap_s, config.max_pending)
        self.year = config.assume_year or time.gmtime().tm_year
        self.year_span: tuple[float, float] = (0.0, 0.0)
        self.last_ts = math.nan
        self.seen_head = False
        self.rec: _Record | None = None
        self.fast: dict[tuple[object, ...], tuple[tuple[str | None, str | None, str, int | None, str, str], bool]] = {}
        self.ids = EntityMapper(resolver, config, on_new_job=self.fast.clear)
        self.held_aer: dict[str | None, Event] = {}
        self.off_bus: dict[tuple[str | None, str], float] = {}
        self.lines_read = 0
        self.records = 0

    # -- lines -> records ------------------------------------------------------------------
    def feed(self, lineno: int, line: str) -> list[Event]:
        line = line.rstrip("\r\n")
        self.lines_read += 1
        try:
            head = parse_head(line, self.year)
        except OutOfBounds as exc:                  # one bad number: the line is rejected alone
            self.report.reject(f"{self.source}:{lineno}: {exc}")
            return self._finish()
        if head is not None and self._joins_traceback(head):
            return []
        if head is not None:
            out = self._finish()
            self._start(head, lineno)
            return out
        if not line.strip():
            return [] if self.seen_head else self._finish()
        rec = self.rec
        indented = line[:1].isspace()
        if rec is not None and (self.seen_head or indented or rec.traceback_open):
            if len(rec.lines) < self.config.max_record_lines:
                rec.lines.append(line.rstrip())
            else:
                rec.dropped += 1
            if rec.traceback_open and not (indented or _body(line)[:1].isspace()):
                rec.traceback_open = False
            return []
        out = self._finish()
        self.rec = _Record(None, lineno, self.last_ts, False, [line.strip()],
                           traceback_open=line.startswith("Traceback"))
        return out

    def _start(self, head: Head, lineno: int) -> None:
        self.seen_head = True
        ts, own = head.ts, math.isfinite(head.ts)
        if not own and head.uptime_s is not None and self.config.boot_time_s is not None:
            ts, own = self.config.boot_time_s + head.uptime_s, True
        elif not own and head.delta_s is not None and math.isfinite(self.last_ts):
            ts, own = self.last_ts + head.delta_s, True
        if own:
            self.last_ts = ts
            if self.config.assume_year is None and not self.year_span[0] <= ts < self.year_span[1]:
                self._set_year(ts)
        else:
            ts = self.last_ts
        msg = head.message.strip()
        self.rec = _Record(head, lineno, ts, own, [msg], traceback_open=_body(msg).startswith("Traceback"))

    def _joins_traceback(self, head: Head) -> bool:
        """journald stamps every line of a traceback: lines of the same process right after a
        ``Traceback`` line stay in its record, up to and including the exception line."""
        rec = self.rec
        if rec is None or not rec.traceback_open or rec.head is None:
            return False
        first = rec.head
        if (first.host, first.ident, first.pid) != (head.host, head.ident, head.pid):
            return False
        if head.ts - rec.ts > self.config.traceback_join_s:        # NaN times: joined
            return False
        body = _body(head.message)
        if len(rec.lines) < self.config.max_record_lines:
            rec.lines.append(head.message.rstrip())
        else:
            rec.dropped += 1
        if body.strip() and not body[:1].isspace():
            rec.traceback_open = False
        return True

    def _set_year(self, ts: float) -> None:
        """The year of the last full timestamp, for spellings without one."""
        if not 0 <= ts < 253370764800:              # before 9999: the span's end is representable
            return
        self.year = time.gmtime(ts).tm_year
        self.year_span = (calendar.timegm((self.year, 1, 1, 0, 0, 0)), calendar.timegm((self.year + 1, 1, 1, 0, 0, 0)))

    def _finish(self) -> list[Event]:
        rec, self.rec = self.rec, None
        if rec is None:
            return []
        self.records += 1
        if not rec.own_time:
            self.report.add_unresolved("log_time")
        fkey = self._fast_key(rec)
        if fkey is not None and fkey in self.fast:
            key, unresolved = self.fast[fkey]
            clock = rec.ts if math.isfinite(rec.ts) else (rec.head.uptime_s if rec.head else None)
            ready = self.collapser.extend(key, rec.ts, clock)
            if ready is not None:
                if unresolved:
                    self.report.add_unresolved("events")
                return ready
        try:
            ev = self._event(rec)
        except OutOfBounds as exc:                  # one bad number: the record is rejected alone
            self.report.reject(f"{self.source}:{rec.lineno}: {exc}")
            return []
        out = self._route(ev)
        if fkey is not None and ev.kind != "aer" and not ev.attrs.get("inferred") and ev.host not in self.held_aer:
            if len(self.fast) > 50_000:
                self.fast.clear()
            unresolved = ev.entity_id is None or bool(ev.host and self.ids.node(ev.host) is None)
            self.fast[fkey] = (self.collapser.key_of(ev), unresolved)
        return out

    def _fast_key(self, rec: _Record) -> tuple[object, ...] | None:
        """What a one-line record must share with an earlier one to be a repeat of its event
        (the same head and message but the volatile parts): repeats skip classification."""
        head = rec.head
        if head is None or len(rec.lines) != 1 or head.host in self.held_aer:
            return None
        return head.host, head.ident, head.pid, head.rank, head.level, collapse_text(rec.lines[0])

    def close(self) -> list[Event]:
        out = self._finish()
        for ev in list(self.held_aer.values()):
            out.extend(self.collapser.push(ev))
        self.held_aer.clear()
        out.extend(self.collapser.flush())
        self.report.add("log_lines", self.lines_read)
        self.report.add("log_records", self.records)
        return out

    # -- records -> events -----------------------------------------------------------------
    def _event(self, rec: _Record) -> Event:
        text = "\n".join(rec.lines)
        if len(text) > self.config.max_message_chars:
            text = text[: self.config.max_message_chars]
        cls = classify(text)
        head = rec.head
        host = (head.host if head else None) or self.config.default_host
        attrs: dict[str, Any] = dict(cls.attrs)
        if head is not None:
            attrs.update({k: v for k, v in (("ident", head.ident), ("pid", head.pid), ("uptime_s", head.uptime_s),
                                            ("level", head.level)) if v is not None and k not in attrs})
        if rec.dropped:
            attrs["dropped_lines"] = rec.dropped
        if len(rec.lines) > 1:
            attrs["lines"] = len(rec.lines) + rec.dropped
        rank = cls.rank if cls.rank is not None else (head.rank if head else None)
        if rank is not None:
            attrs["rank"] = rank
        severity, code = cls.severity, cls.code
        if cls.kind == "xid" and code is not None:
            info = xid_info(code)
            severity = info.severity
            attrs.update(xid_name=info.mnemonic, action=info.recommended_action)
        elif cls.kind == "sxid" and code is not None:
            info = sxid_info(code)
            severity = severity or info.severity
            attrs.update(xid_name=info.mnemonic, action=info.recommended_action)
        kind_, entity = self.ids.place(cls, text, host, head, rank, attrs)
        if entity is None or (host and self.ids.node(host) is None):
            self.report.add_unresolved("events")
        return Event(rec.ts, host, kind_, entity, cls.kind, text, code, severity, f"{self.source}:{rec.lineno}",
                     attrs=attrs)

    # -- events -> output (AER detail merge, off-bus dedup, collapse) ----------------------
    def _route(self, ev: Event) -> list[Event]:
        out: list[Event] = []
        detail_only = bool(ev.attrs.pop("detail_only", False))
        held = self.held_aer.get(ev.host)
        if held is not None:
            same_port = held.attrs.get("reporter") == ev.attrs.get("reporter")
            close = not (ev.ts - held.ts > self.config.aer_merge_s)     # NaN times: close
            if ev.kind == "aer" and detail_only and same_port and close:
                self.held_aer[ev.host] = self._merge_aer(held, ev)
                return out
            out.extend(self.collapser.push(self.held_aer.pop(ev.host)))
        ev = self._dedup_off_bus(ev)
        if ev.kind == "aer" and not detail_only:
            self.held_aer[ev.host] = ev
            return out
        out.extend(self.collapser.push(ev))
        return out

    @staticmethod
    def _merge_aer(held: Event, detail: Event) -> Event:
        """The AER header event with one more detail line (text and parsed attributes)."""
        attrs = dict(held.attrs)
        probe = Classified("aer", severity=held.severity, attrs=attrs)
        add_aer_detail(probe, detail.message)
        attrs["lines"] = int(attrs.get("lines", 1)) + 1
        return dataclasses.replace(held, message=f"{held.message}\n{detail.message}", severity=probe.severity,
                                   attrs=attrs)

    def _dedup_off_bus(self, ev: Event) -> Event:
        if ev.kind != "xid" or ev.code != 79:
            return ev
        key = (ev.host, str(ev.attrs.get("pci_bus_id")))
        prev = self.off_bus.get(key)
        self.off_bus[key] = ev.ts
        if ev.attrs.get("inferred") and prev is not None and not abs(ev.ts - prev) > self.config.off_bus_dedup_s:
            attrs = {**ev.attrs, "duplicate_of": "xid 79"}
            return Event(ev.ts, ev.host, ev.entity_kind, ev.entity_id, "other", ev.message, None, None, ev.source,
                         attrs=attrs)
        return ev


def parse_log_lines(lines: Iterable[str], source: str, resolver: Resolver | None, report: IngestReport,
                    config: LogConfig | None = None) -> Iterator[Event]:
    """Events of log lines (any iterable of str, e.g. a tailed file); ``source`` names them in ``Event.source``."""
    parser = _LogParser(source, resolver, report, config or LogConfig())
    for lineno, line in enumerate(lines, 1):
        for ev in parser.feed(lineno, line):
            report.add("events")
            yield ev
    for ev in parser.close():
        report.add("events")
        yield ev


_MAX_LINE_CHARS = 1 << 20


def _bounded_lines(fh: TextIO, limit: int) -> Iterator[str]:
    """Lines of ``fh``, a line longer than ``limit`` characters coming in pieces (bounded memory)."""
    return iter(lambda: fh.readline(limit), "")


def read_log(path: Path, resolver: Resolver | None, report: IngestReport,
             config: LogConfig | None = None) -> Iterator[Event]:
    """Events of a log file (UTF-8, bad bytes replaced; gzip-compressed files are decompressed).

    Lines that name no host (plain dmesg) take ``config.default_host``, else the node the file or its
    folder is named after (``node-012.dmesg.log``, ``node-012/kernel.log``) when the inventory knows it.
    """
    path = Path(path)
    config = config or LogConfig()
    if config.default_host is None and resolver is not None:
        host = host_from_path(path, resolver)
        if host is not None:
            config = dataclasses.replace(config, default_host=host)
    with io.TextIOWrapper(open_bytes(path), encoding="utf-8", errors="replace", newline="") as fh:
        try:
            yield from parse_log_lines(_bounded_lines(fh, _MAX_LINE_CHARS), path.name, resolver, report, config)
        except (OSError, EOFError) as exc:          # a truncated gzip file: keep what was read
            report.reject(f"{path.name}: unreadable past this point ({exc})")
