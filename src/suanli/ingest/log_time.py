"""When a log record happened: the clock of each spelling of :mod:`suanli.ingest.log_head`, made absolute.

spec/telemetry.md "Log lines". A head's time is one of:

- absolute with a zone (``short-iso``, ``short-iso-precise``, ``dmesg --time-format iso``, Talos
  ``talosctl dmesg``, CRI): taken as it is;
- absolute local time without a zone (``dmesg -T``, RFC 3164 syslog, Fabric Manager, ISO without an
  offset, PyTorch's ``E0626 06:24:44``): read in ``LogConfig.timezone`` (the inventory's optional
  ``timezone``, default UTC), daylight-saving time included;
- without a year (syslog, PyTorch): the year is chosen, see :meth:`Placer.year`;
- seconds since boot (raw ``dmesg``, ``/dev/kmsg``): placed by the host's boot time, node-exporter's
  ``node_boot_time_seconds`` (:func:`boot_times_from_metrics`), else not placed;
- a delta to the previous line (``dmesg -d``): placed after the previous placed line, else not;
- none (NCCL's ``host:pid:tid [dev]`` prefix, glog without a date, lines of a file with no heads).

A record that cannot be placed keeps NaN as its time: it is counted and named in the ingest
report (:mod:`suanli.ingest.logs`), never given the time of its neighbour, and never moves the
analysis window.
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from suanli.errors import InputError
from suanli.ingest.files import open_bytes
from suanli.ingest.labels import LabelError, parse_labels
from suanli.ingest.log_config import LogConfig
from suanli.ingest.log_head import Head
from suanli.ingest.resolve import host_of
from suanli.inventory import Resolver

__all__ = ["ANY_HOST", "BOOT_METRIC", "Placer", "boot_times_from_metrics", "for_ingest", "with_clock", "zone"]

BOOT_METRIC = "node_boot_time_seconds"
ANY_HOST = ""
"""Key of a boot time whose series names no host (a metrics file scraped from one machine): it
places the seconds-since-boot lines of any host that has no boot time of its own."""

FUTURE_SLACK_S = 86_400.0
"""A yearless stamp is not placed after the anchor by more than this (clock skew, zones)."""

_BOOT_LINE = re.compile(rb"^node_boot_time_seconds[{ \t][^\n]*", re.M)
_BLOCK = 1 << 22
_SAMPLE = re.compile(r"^\s*(?P<value>[^\s]+)(?:\s+(?P<ts>[^\s]+))?")


def zone(name: str | None) -> ZoneInfo | None:
    """The IANA zone of ``name`` (None or ``UTC``: None, meaning UTC); InputError for an unknown one."""
    if name is None or name.upper() in ("UTC", "Z", "ETC/UTC"):
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InputError(f"timezone: unknown IANA zone {name!r} ({exc})") from None


def _local_to_utc(naive_epoch: float, tz: ZoneInfo | None) -> float:
    """A wall-clock time written as if it were UTC epoch seconds, read in ``tz`` instead."""
    if tz is None or not math.isfinite(naive_epoch):
        return naive_epoch
    try:
        wall = datetime.fromtimestamp(naive_epoch, UTC).replace(tzinfo=tz)
    except (OverflowError, OSError, ValueError):
        return math.nan
    offset = wall.utcoffset()
    return naive_epoch - offset.total_seconds() if offset is not None else naive_epoch


def _in_year(naive_epoch: float, year: int) -> float | None:
    """The same wall-clock time in another year (None for 29 February of a common year)."""
    try:
        return datetime.fromtimestamp(naive_epoch, UTC).replace(year=year).timestamp()
    except (OverflowError, OSError, ValueError):
        return None


class Placer:
    """Places the heads of one stream in time (see the module docstring); keeps the last placed time."""

    def __init__(self, config: LogConfig) -> None:
        self.config = config
        self.tz = zone(config.timezone)
        self.anchor = config.reference_ts if config.reference_ts is not None else time.time()
        self.last = math.nan
        self.boots = {host: sorted(set(times)) for host, times in config.boot_times.items()}
        self._offsets: dict[int, float] = {}           # zone offset per quarter hour of wall time
        self._shift: tuple[float, float] | None = None  # last yearless stamp: (as parsed, placed)

    def place(self, head: Head, host: str | None) -> tuple[float, str | None]:
        """Epoch seconds of the head, or NaN and why it cannot be placed."""
        if math.isfinite(head.ts):
            ts = head.ts
            if head.yearless and self.config.assume_year is None:
                ts = self._year_cached(ts)
            if head.local and self.tz is not None:
                ts = self._local(ts)
        elif head.uptime_s is not None:
            boot = self.boot(host)
            if boot is None:
                return math.nan, f"seconds since boot, and no {BOOT_METRIC} for host {host or '(none)'}"
            ts = boot + head.uptime_s
        elif head.delta_s is not None:
            if not math.isfinite(self.last):
                return math.nan, "a delta to the previous line, which has no time"
            ts = self.last + head.delta_s
        else:
            return math.nan, "no timestamp in its head"
        if not math.isfinite(ts):
            return math.nan, "an impossible date"
        self.last = ts
        return ts, None

    def _local(self, naive_epoch: float) -> float:
        """:func:`_local_to_utc` with the zone's offset cached per quarter hour (zones change
        offset on quarter hours), for logs of millions of lines."""
        key = int(naive_epoch // 900)
        off = self._offsets.get(key)
        if off is None:
            if len(self._offsets) > 4096:
                self._offsets.clear()
            off = self._offsets[key] = naive_epoch - _local_to_utc(naive_epoch, self.tz)
        return naive_epoch - off

    def _year_cached(self, naive_epoch: float) -> float:
        """:meth:`year`, reusing the last choice for a stamp within a day of the last one."""
        if self._shift is not None and abs(naive_epoch - self._shift[0]) < 86_400:
            return naive_epoch + (self._shift[1] - self._shift[0])
        got = self.year(naive_epoch)
        self._shift = (naive_epoch, got)
        return got

    def year(self, naive_epoch: float) -> float:
        """A yearless stamp in the year that puts it nearest its reference: the previous placed line
        of the stream when there is one (so a file crossing New Year rolls over), else the anchor
        (``LogConfig.reference_ts``: the window's end when the caller knows it, else the file's
        modification time, else now), not later than the anchor by more than a day (a line is
        written before its file is last modified)."""
        ref, after_anchor = (self.last, False) if math.isfinite(self.last) else (self.anchor, True)
        ref_year = time.gmtime(ref).tm_year if 0 <= ref < 253402300800 else time.gmtime().tm_year
        best: float | None = None
        for y in (ref_year - 1, ref_year, ref_year + 1):
            cand = _in_year(naive_epoch, y)
            if cand is None:
                continue
            utc = _local_to_utc(cand, self.tz)
            if after_anchor and utc > ref + FUTURE_SLACK_S:
                continue
            if best is None or abs(utc - ref) < abs(_local_to_utc(best, self.tz) - ref):
                best = cand
        return best if best is not None else naive_epoch

    def boot(self, host: str | None) -> float | None:
        """The host's boot time (``LogConfig.boot_time_s`` when the metrics give none). Of several
        (a host that rebooted in the window), the latest: a ring buffer holds the current boot's lines.
        A host not known at the start is looked up in ``LogConfig.boot_times`` again (a live
        mapping, :class:`suanli.store.boot_times.LiveBootTimes`, learns hosts as they are scraped)."""
        key = host or ANY_HOST
        times = self.boots.get(key) or self.boots.get(ANY_HOST)
        if not times and self.config.boot_times:
            fresh = self.config.boot_times.get(key) or self.config.boot_times.get(ANY_HOST)
            if fresh:
                times = self.boots[key] = sorted(set(fresh))
        return times[-1] if times else self.config.boot_time_s


def with_clock(config: LogConfig, timezone: str | None,
               boot_times: Mapping[str, Sequence[float]] | None) -> LogConfig:
    """``config`` with the inventory's ``timezone`` (unless it sets one) and ``boot_times`` added to
    any it gives (its own win); a live mapping (:class:`suanli.store.boot_times.LiveBootTimes`) is
    kept as it is when ``config`` gives none, so hosts scraped later are still found."""
    if boot_times is None:
        boots = config.boot_times
    elif not config.boot_times and not isinstance(boot_times, dict):
        boots = boot_times                                  # type: ignore[assignment]
    else:
        boots = {**{h: tuple(v) for h, v in boot_times.items()}, **config.boot_times}
    return dataclasses.replace(config, boot_times=boots,
                               timezone=config.timezone if config.timezone is not None else timezone)


def for_ingest(config: LogConfig, metrics: Sequence[Path], resolver: Resolver | None,
               timezone: str | None) -> LogConfig:
    """The log settings of one ingest: the inventory's timezone (unless set), and the boot times of
    the metrics files read with the logs (added to any given)."""
    return with_clock(config, timezone, boot_times_from_metrics(metrics, resolver))


def boot_times_from_metrics(paths: Iterable[Path], resolver: Resolver | None) -> dict[str, list[float]]:
    """``node_boot_time_seconds`` of each host in metrics files (OpenMetrics / Prometheus text, also
    gzipped): node id (or the raw host label without an inventory, or :data:`ANY_HOST` for a series
    that names none) -> the distinct boot times. Unreadable files and malformed lines are skipped
    here; the metrics reader reports them."""
    out: dict[str, set[float]] = {}
    for path in paths:
        for line in _boot_lines(path):
            got = _boot_sample(line, resolver)
            if got is not None:
                out.setdefault(got[0], set()).add(got[1])
    return {host: sorted(v) for host, v in out.items()}


def _boot_lines(path: Path) -> Iterator[str]:
    """The ``node_boot_time_seconds`` lines of a file, found block by block (a regex scan in C, not a
    Python loop over millions of lines)."""
    carry = b""
    try:
        with open_bytes(path) as fh:
            while block := fh.read(_BLOCK):
                data = carry + block
                cut = data.rfind(b"\n") + 1
                data, carry = data[:cut], data[cut:]
                for m in _BOOT_LINE.finditer(data):
                    yield m.group().decode("utf-8", "replace")
    except (OSError, EOFError, zlib.error):
        return
    for m in _BOOT_LINE.finditer(carry):
        yield m.group().decode("utf-8", "replace")


def _boot_sample(line: str, resolver: Resolver | None) -> tuple[str, float] | None:
    rest = line[len(BOOT_METRIC):]
    labels: dict[str, str] = {}
    if rest.startswith("{"):
        try:
            labels, end = parse_labels(rest, 0)
        except LabelError:
            return None
        rest = rest[end:]
    elif rest[:1] not in (" ", "\t"):
        return None                                     # another metric with this prefix
    m = _SAMPLE.match(rest)
    try:
        value = float(m.group("value")) if m else math.nan
    except ValueError:
        return None
    if not math.isfinite(value) or value <= 0:
        return None
    return _boot_host(labels, resolver), value


def _boot_host(labels: Mapping[str, str], resolver: Resolver | None) -> str:
    if resolver is not None:
        return host_of(labels, resolver) or ANY_HOST
    for name in ("instance", "hostname", "Hostname", "host", "node"):
        if labels.get(name):
            return labels[name].rsplit(":", 1)[0] if name == "instance" else labels[name]
    return ANY_HOST
