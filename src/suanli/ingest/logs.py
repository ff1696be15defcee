"""Kernel, driver and trainer log lines -> :class:`~suanli.ingest.records.Event` (spec/telemetry.md, "Log lines").

Lines become records in :mod:`suanli.ingest.log_records` (a line with a head starts one, a line
without continues it; tracebacks, split CUDA errors, C++ frames and NVSwitch SXid parts are joined),
placed in time by :mod:`suanli.ingest.log_time`. Records are recognised
(:mod:`suanli.ingest.log_classify`), mapped to the entity at fault (Xid / AER / OOM to the GPU when
the inventory resolves it, else the node; NCCL to the job's rank when known), and repeated
identical events are collapsed into one with a ``count`` (:mod:`suanli.ingest.log_collapse`).

Nothing here raises on bad input: undecodable bytes are replaced, a record that cannot be placed
in time keeps NaN (never the time of a neighbour), is counted in ``report.unresolved["log_time"]``
and, for the first ``LogConfig.max_unplaced_named``, named in ``report.reasons`` (``file:line: not
placed in time (why)``). One NCCL timeout is counted per (rank, collective sequence number).
"""

from __future__ import annotations

import dataclasses
import io
import math
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from suanli.ingest.bounded import OutOfBounds
from suanli.ingest.files import open_bytes
from suanli.ingest.log_classify import Classified, add_aer_detail, classify, collapse_text
from suanli.ingest.log_collapse import Collapser
from suanli.ingest.log_config import LogConfig
from suanli.ingest.log_entities import EntityMapper, host_from_path
from suanli.ingest.log_records import Record, RecordAssembler
from suanli.ingest.log_time import Placer
from suanli.ingest.records import Event, IngestReport
from suanli.ingest.xid import sxid_info, xid_info
from suanli.inventory import Resolver

__all__ = ["LogConfig", "parse_log_lines", "read_log"]


class _LogParser:
    """One stream: records (:mod:`suanli.ingest.log_records`) -> events; merges AER details,
    counts one NCCL timeout per (rank, sequence number), collapses repeats."""

    def __init__(self, source: str, resolver: Resolver | None, report: IngestReport, config: LogConfig) -> None:
        self.source, self.report, self.config = source, report, config
        self.collapser = Collapser(config.collapse_gap_s, config.max_pending)
        self.records_in = RecordAssembler(config, Placer(config))
        self.fast: dict[tuple[object, ...], tuple[tuple[str | None, str | None, str, int | None, str, str], bool]] = {}
        self.ids = EntityMapper(resolver, config, on_new_job=self.fast.clear)
        self.held_aer: dict[str | None, Event] = {}
        self.off_bus: dict[tuple[str | None, str], float] = {}
        self.timeouts: dict[tuple[object, ...], str] = {}
        self.records = 0
        self.unplaced = 0

    def feed(self, lineno: int, line: str) -> list[Event]:
        out: list[Event] = []
        try:
            recs = self.records_in.feed(lineno, line)
        except OutOfBounds as exc:                  # one bad number in a line's head: that line alone
            self.report.reject(f"{self.source}:{lineno}: {exc}")
            return out
        for rec in recs:
            out.extend(self._finish(rec))
        return out

    def _unplaced(self, rec: Record) -> None:
        """Count a record that has no time, and name the first ones (``file:line: why``)."""
        self.report.add_unresolved("log_time")
        self.unplaced += 1
        if self.unplaced <= self.config.max_unplaced_named:
            self.report.reasons.append(f"{self.source}:{rec.lineno}: not placed in time ({rec.why})")

    def _finish(self, rec: Record) -> list[Event]:
        self.records += 1
        if not rec.placed:
            self._unplaced(rec)
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
        if (fkey is not None and ev.kind not in ("aer", "nccl_timeout") and not ev.attrs.get("inferred")
                and ev.host not in self.held_aer):          # a repeated timeout line is a duplicate, not a count
            if len(self.fast) > 50_000:
                self.fast.clear()
            unresolved = ev.entity_id is None or bool(ev.host and self.ids.node(ev.host) is None)
            self.fast[fkey] = (self.collapser.key_of(ev), unresolved)
        return out

    def _fast_key(self, rec: Record) -> tuple[object, ...] | None:
        """What a one-line record must share with an earlier one to be a repeat of its event
        (the same head and message but the volatile parts): repeats skip classification."""
        head = rec.head
        if head is None or len(rec.lines) != 1 or head.host in self.held_aer:
            return None
        return head.host, head.ident, head.pid, head.rank, head.level, collapse_text(rec.lines[0])

    def close(self) -> list[Event]:
        out: list[Event] = []
        for rec in self.records_in.close():
            out.extend(self._finish(rec))
        if self.unplaced > self.config.max_unplaced_named:
            self.report.reasons.append(f"{self.source}: {self.unplaced - self.config.max_unplaced_named} more "
                                       "record(s) not placed in time")
        for ev in list(self.held_aer.values()):
            out.extend(self.collapser.push(ev))
        self.held_aer.clear()
        out.extend(self.collapser.flush())
        self.report.add("log_lines", self.records_in.lines_read)
        self.report.add("log_records", self.records)
        return out

    # -- records -> events -----------------------------------------------------------------
    def _event(self, rec: Record) -> Event:
        text = "\n".join(rec.lines)
        if len(text) > self.config.max_message_chars:
            text = text[: self.config.max_message_chars]
        cls = Classified("other") if rec.frames_only else classify(text)
        head = rec.head
        host = self.records_in.host(head)
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
            severity = cls.severity or info.severity        # "Fatal" in the text raises it
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
            out.extend(self.collapser.push(self.ids.behind_port(self.held_aer.pop(ev.host), ev)))
        ev = self._dedup_timeout(self._dedup_off_bus(ev))
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

    def _dedup_timeout(self, ev: Event) -> Event:
        """One NCCL timeout per (job or host, rank, collective sequence number): a later record of
        the same timeout (the ``what():`` of the terminate, the older "Timeout at NCCL work: N"
        line) is kept as kind ``other`` with ``duplicate_of``."""
        seq = ev.attrs.get("seq_num")
        if ev.kind != "nccl_timeout" or seq is None:
            return ev
        key = (ev.attrs.get("job") or ev.host, ev.attrs.get("rank"), seq)
        first = self.timeouts.get(key)
        if first is None:
            self.timeouts[key] = ev.source
            return ev
        attrs = {**ev.attrs, "duplicate_of": f"nccl_timeout {first}"}
        return dataclasses.replace(ev, kind="other", severity=None, attrs=attrs)


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


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def read_log(path: Path, resolver: Resolver | None, report: IngestReport,
             config: LogConfig | None = None) -> Iterator[Event]:
    """Events of a log file (UTF-8, bad bytes replaced; gzip-compressed files are decompressed).

    Lines that name no host (plain dmesg) take ``config.default_host``, else the node the file or its
    folder is named after (``node-012.dmesg.log``, ``node-012/kernel.log``) when the inventory knows it.
    """
    path = Path(path)
    config = config or LogConfig()
    if config.reference_ts is None:
        config = dataclasses.replace(config, reference_ts=_mtime(path))
    if config.default_host is None and resolver is not None:
        host = host_from_path(path, resolver)
        if host is not None:
            config = dataclasses.replace(config, default_host=host)
    with io.TextIOWrapper(open_bytes(path), encoding="utf-8", errors="replace", newline="") as fh:
        try:
            yield from parse_log_lines(_bounded_lines(fh, _MAX_LINE_CHARS), path.name, resolver, report, config)
        except (OSError, EOFError) as exc:          # a truncated gzip file: keep what was read
            report.reject(f"{path.name}: unreadable past this point ({exc})")
