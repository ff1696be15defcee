"""The head of a log line: when, which host, which program; the rest is the message.

One function, :func:`parse_head`, recognises the spellings found in real GPU-cluster logs:

- ``journalctl -o short-iso(-precise)``: ``2026-03-15T02:15:03.123456+00:00 node-012 kernel: msg``
- ``dmesg --time-format iso`` (``,`` before the fraction), with the ``--decode`` facility prefix
  ``kern  :warn  : 2025-01-21T04:41:44,283302+00:00 msg``
- syslog: ``Mar 15 02:15:03 host kernel: [68183.615790] msg`` (no year: the last year seen, or
  ``LogConfig.assume_year``)
- ``dmesg``: ``[12345.678901] msg`` (seconds since boot), ``<6>[ 2.6] msg`` (with priority),
  ``[  +0.000844] msg`` (delta to the previous line), ``dmesg -T``: ``[Fri Aug 30 11:11:22 2024] msg``
- ``/dev/kmsg``: ``6,3964,206764307,-;msg`` (microseconds since boot)
- Talos ``talosctl dmesg``: ``172.20.1.2: kern:    info: [2021-11-10T10:09:37.662764956Z]: msg``
- NVIDIA Fabric Manager: ``[Feb 25 2025 13:59:45] [INFO] [tid 1803] msg``
- PyTorch / glog: ``[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] msg``,
  ``[E ProcessGroupNCCL.cpp:737] msg``
- NCCL debug output: ``host:pid:tid [dev] NCCL WARN msg``
- Kubernetes container logs (CRI): ``2026-03-15T02:15:03.123456789Z stdout F msg``

Times are read as written: ``Head.local`` marks a wall-clock time without a zone, ``Head.yearless``
a stamp completed with ``year``; :mod:`suanli.ingest.log_time` makes them absolute.

A line none of these match has no head: it continues the record above (or, in a file that has
no heads at all, stands on its own).
"""

from __future__ import annotations

import calendar
import math
import re
from dataclasses import dataclass

from suanli.ingest.bounded import bounded_int

__all__ = ["Head", "parse_head"]

_MONTHS = {m: i for i, m in enumerate(calendar.month_abbr) if m}
_MON = r"(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"

_KMSG = re.compile(r"^(?P<prio>\d+),(?P<seq>\d+),(?P<usec>\d+),[^;]*;(?P<msg>.*)$")
_PRIO = re.compile(r"^<(?P<prio>\d{1,3})>(?:1 )?")
_DECODE = re.compile(r"^(?P<fac>[a-z]+)\s*:(?P<lvl>[a-z]+)\s*:\s")
_ISO = re.compile(r"^(?P<date>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)[T ](?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)"
                  r"(?:[.,](?P<frac>\d+))?(?P<tz>Z|z|[+-]\d\d:?\d\d)?(?:\s+|$)(?P<rest>.*)$")
_JOURNAL = re.compile(r"^(?P<sec>(?P<date>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)[T ](?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d))"
                      r"(?:[.,](?P<frac>\d+))?(?P<tz>Z|z|[+-]\d\d:?\d\d)?\s+(?P<host>[A-Za-z0-9][\w.-]*)\s+"
                      r"(?P<ident>[^\s:\[\]]+)(?:\[(?P<pid>\d+)\])?:\s?(?P<msg>.*)$")
_SYSLOG = re.compile(_MON + r"\s+(?P<d>\d{1,2})\s+(?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)(?:\.(?P<frac>\d+))?\s+"
                     r"(?P<rest>.*)$")
_DMESG_T = re.compile(r"^\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)\s+" + _MON + r"\s+(?P<d>\d{1,2})\s+"
                      r"(?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)\s+(?P<y>\d{4})\]\s?(?P<rest>.*)$")
_FABRIC = re.compile(r"^\[" + _MON + r"\s+(?P<d>\d{1,2})\s+(?P<y>\d{4})\s+(?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)\]"
                     r"\s?(?P<rest>.*)$")
_UPTIME = re.compile(r"^\[\s*(?P<up>\d+\.\d+)\]\s?(?P<rest>.*)$")
_DELTA = re.compile(r"^\[\s*\+(?P<delta>\d+\.\d+)\]\s?(?P<rest>.*)$")
_GLOG = re.compile(r"^(?:\[(?P<pid>\d+)\]\s+)?(?:\[rank(?P<rank>\d+)\]:)?\[(?P<lvl>[EWIF])"
                   r"(?:(?P<mo>\d{1,2})(?P<d>\d\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)(?:\.(?P<frac>\d+))?)?"
                   r"\s*(?P<where>[\w.]+:\d+)\]\s?(?P<rest>.*)$")
_NCCL = re.compile(r"^(?P<host>[A-Za-z0-9][\w.-]*):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] "
                   r"(?P<rest>(?:[\w./-]+:\d+ )?NCCL (?:INFO|WARN|ERROR|TRACE|ABORT)\b.*)$")
_HOST_IDENT = re.compile(r"^(?P<host>[A-Za-z0-9][\w.-]*)\s+(?P<ident>[^\s:\[\]]+)(?:\[(?P<pid>\d+)\])?:\s?"
                         r"(?P<msg>.*)$")
_IDENT = re.compile(r"^(?P<ident>[^\s:\[\]]+)(?:\[(?P<pid>\d+)\])?:\s?(?P<msg>.*)$")
_CRI = re.compile(r"^(?P<stream>stdout|stderr) [FP] ")
_INNER_UPTIME = re.compile(r"^\[\s*(?P<up>\d+\.\d+)\]\s?")
_TALOS = re.compile(r"^(?P<addr>[\w.:-]+?): (?P<fac>[a-z]+):\s*(?P<lvl>[a-z]+): \[(?P<date>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)"
                    r"T(?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)(?:\.(?P<frac>\d+))?(?P<tz>Z|z|[+-]\d\d:?\d\d)\]: ?(?P<msg>.*)$")


@dataclass
class Head:
    """What a line's head says. ``ts`` is epoch seconds or NaN when the line carries no absolute time."""

    ts: float
    message: str
    host: str | None = None
    ident: str | None = None
    pid: int | None = None
    uptime_s: float | None = None
    delta_s: float | None = None
    rank: int | None = None
    level: str | None = None
    local: bool = False            # a wall-clock time without a zone (read in the inventory's timezone)
    yearless: bool = False         # the year was not written: ``ts`` is in the year given to parse_head
    addr_host: bool = False        # ``host`` is a node address (Talos): the file's host is preferred


def _epoch(y: int, mo: int, d: int, h: int, mi: int, s: int, frac: str | None, offset_s: float = 0.0) -> float:
    try:
        base = calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0))
    except (ValueError, OverflowError):
        return math.nan
    if not (1 <= mo <= 12 and 1 <= d <= 31 and h < 24 and mi < 60 and s < 61):
        return math.nan
    return base + (float("0." + frac) if frac else 0.0) - offset_s


def _tz_offset(tz: str | None) -> float:
    if not tz or tz in ("Z", "z"):
        return 0.0
    sign = -1.0 if tz[0] == "-" else 1.0
    digits = tz[1:].replace(":", "")
    return sign * (int(digits[:2]) * 3600 + int(digits[2:4]) * 60)


def _host_ident(rest: str, head: Head) -> Head:
    """``host ident[pid]: msg`` after a syslog/journal time; kernel's own ``[uptime]`` stripped."""
    m = _HOST_IDENT.match(rest)
    if m and not m.group("host").endswith(":"):
        head.host, head.ident, head.message = m.group("host"), m.group("ident"), m.group("msg")
        head.pid = bounded_int(m.group("pid"), "pid", 0) if m.group("pid") else None
    else:
        head.message = rest
    inner = _INNER_UPTIME.match(head.message)
    if inner:
        head.uptime_s = float(inner.group("up"))
        head.message = head.message[inner.end():]
    return head


_SECOND_CACHE: dict[tuple[str, str | None], float] = {}


def _journal(m: re.Match[str]) -> Head:
    """The common case in one match: ``2026-03-15T02:15:03.123456+00:00 host ident[pid]: msg``."""
    frac = m.group("frac")
    msg = m.group("msg")
    head = Head(_iso_seconds(m) + (float("0." + frac) if frac else 0.0), msg, m.group("host"), m.group("ident"),
                bounded_int(m.group("pid"), "pid", 0) if m.group("pid") else None, local=m.group("tz") is None)
    if msg[:1] == "[":
        inner = _INNER_UPTIME.match(msg)
        if inner:
            head.uptime_s = float(inner.group("up"))
            head.message = msg[inner.end():]
    return head


def _iso_seconds(m: re.Match[str]) -> float:
    """Epoch of the whole second (and zone) of an ISO match; memoised, logs repeat the same seconds."""
    key = (m.string[m.start("date"):m.end("s")], m.group("tz"))
    hit = _SECOND_CACHE.get(key)
    if hit is None:
        if len(_SECOND_CACHE) > 4096:
            _SECOND_CACHE.clear()
        hit = _epoch(int(m.group("date")), int(m.group("mo")), int(m.group("d")), int(m.group("h")),
                     int(m.group("mi")), int(m.group("s")), None, _tz_offset(m.group("tz")))
        _SECOND_CACHE[key] = hit
    return hit


def _iso(m: re.Match[str]) -> Head:
    frac = m.group("frac")
    ts = _iso_seconds(m) + (float("0." + frac) if frac else 0.0)
    rest, local = m.group("rest"), m.group("tz") is None
    cri = _CRI.match(rest)
    if cri:                                                    # kubelet / CRI container log
        return Head(ts, rest[cri.end():], ident=cri.group("stream"), local=local)
    first = rest.split(" ", 1)[0]
    if first.endswith(":") or first.startswith("["):          # dmesg --time-format iso: no host
        head = Head(ts, rest, local=local)
        im = _IDENT.match(rest)
        if im and im.group("pid"):
            head.ident, head.pid = im.group("ident"), bounded_int(im.group("pid"), "pid", 0)
        return head
    return _host_ident(rest, Head(ts, rest, local=local))


def _talos(m: re.Match[str]) -> Head:
    frac = m.group("frac")
    return Head(_iso_seconds(m) + (float("0." + frac) if frac else 0.0), m.group("msg"), m.group("addr"),
                m.group("fac"), level=m.group("lvl"), addr_host=True)


def parse_head(line: str, year: int) -> Head | None:
    """The head of ``line`` (leading whitespace ignored), or None if it has none.

    ``year`` completes the spellings without one (syslog, PyTorch's ``E0626``).
    """
    text = line.strip().lstrip("\ufeff")
    if not text:
        return None
    if text[0].isdigit():
        jm = _JOURNAL.match(text)
        if jm:
            return _journal(jm)
        iso = _ISO.match(text)
        if iso:
            return _iso(iso)
        m = _KMSG.match(text)
        if m:
            return Head(math.nan, m.group("msg"), uptime_s=bounded_int(m.group("usec"), "kmsg time", 0) / 1e6)
    if "]: " in text:
        tm = _TALOS.match(text)
        if tm:
            return _talos(tm)
    pm = _PRIO.match(text)
    if pm:
        text = text[pm.end():]
    dm = _DECODE.match(text)
    if dm:
        text = text[dm.end():]
    return _parse_timed(text, year) or _parse_untimed(text, year)


def _parse_timed(text: str, year: int) -> Head | None:
    c = text[:1]
    if c.isdigit():
        m = _ISO.match(text)
        return _iso(m) if m else None
    if c == "[":
        return _bracketed(text)
    m = _SYSLOG.match(text)
    if m:
        ts = _epoch(year, _MONTHS[m.group("mon")], int(m.group("d")), int(m.group("h")), int(m.group("mi")),
                    int(m.group("s")), m.group("frac"))
        return _host_ident(m.group("rest"), Head(ts, m.group("rest"), local=True, yearless=True))
    return None


def _bracketed(text: str) -> Head | None:
    m = _UPTIME.match(text)
    if m:
        return Head(math.nan, m.group("rest"), uptime_s=float(m.group("up")))
    m = _DELTA.match(text)
    if m:
        return Head(math.nan, m.group("rest"), delta_s=float(m.group("delta")))
    m = _DMESG_T.match(text) or _FABRIC.match(text)
    if m:
        ts = _epoch(int(m.group("y")), _MONTHS[m.group("mon")], int(m.group("d")), int(m.group("h")),
                    int(m.group("mi")), int(m.group("s")), None)
        return Head(ts, m.group("rest"), local=True)
    return None


def _parse_untimed(text: str, year: int) -> Head | None:
    m = _GLOG.match(text)
    if m:
        ts = math.nan
        if m.group("mo"):
            ts = _epoch(year, int(m.group("mo")), int(m.group("d")), int(m.group("h")), int(m.group("mi")),
                        int(m.group("s")), (m.group("frac") or "")[:6] or None)
        return Head(ts, m.group("rest"), pid=bounded_int(m.group("pid"), "pid", 0) if m.group("pid") else None,
                    rank=bounded_int(m.group("rank"), "rank", 0) if m.group("rank") else None, level=m.group("lvl"),
                    local=True, yearless=True)
    m = _NCCL.match(text)
    if m:
        return Head(math.nan, m.group("rest"), host=m.group("host"), pid=bounded_int(m.group("pid"), "pid", 0),
                    ident="nccl")
    return None
