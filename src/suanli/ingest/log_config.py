"""Settings of the log reader (:mod:`suanli.ingest.logs`), one documented default per field."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["LogConfig"]


@dataclass(frozen=True)
class LogConfig:
    """Settings of the log reader (documented defaults)."""

    collapse_gap_s: float = 60.0
    """Identical events (same host, entity, kind, code, message without pid/timestamps) closer than
    this to the previous repeat are one event with a ``count``; a longer silence starts a new one."""

    max_pending: int = 10_000
    """Open collapse runs kept in memory at most (the least recently extended is closed first)."""

    max_record_lines: int = 500
    """Continuation lines kept per record; more are counted in ``attrs["dropped_lines"]``."""

    max_message_chars: int = 16_384
    """Longest message kept per event (the rest is cut)."""

    aer_merge_s: float = 0.1
    """AER detail lines (``PCIe Bus Error: severity=...``, ``device [...] error status``, error
    bits) that follow an AER header of the same port within this many seconds join its event."""

    aer_downstream_bus: bool = True
    """An AER reported by a bridge port (``0000:aa:01.0``) that is not itself a GPU is put on the
    node's GPU at function 0 of the next bus (``0000:ab:00.0``), where the port's link leads."""

    off_bus_dedup_s: float = 60.0
    """An NVRM "fallen off the bus" record within this of an Xid 79 for the same GPU is the same
    failure: it is kept as kind ``other``, not counted as a second Xid 79."""

    assume_year: int | None = None
    """Year of spellings without one (syslog ``Mar 15 02:15:03``, PyTorch ``E0315``); None: the year
    that puts the line nearest the previous placed line, else nearest ``reference_ts`` and not after
    it (:meth:`suanli.ingest.log_time.Placer.year`)."""

    reference_ts: float | None = None
    """Anchor of the first yearless stamp of a stream (epoch seconds): the window's end when the
    caller knows it; None: the file's modification time (``read_log``), else now."""

    timezone: str | None = None
    """IANA zone of stamps written in local time without a zone (``dmesg -T``, RFC 3164 syslog,
    Fabric Manager, ISO without an offset, PyTorch): the inventory's ``timezone``; None: UTC."""

    boot_time_s: float | None = None
    """Epoch seconds of the host's boot, to place dmesg/kmsg lines that carry seconds since boot, for
    hosts that ``boot_times`` does not name."""

    boot_times: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    """node id -> boot times from node-exporter's ``node_boot_time_seconds``
    (:func:`suanli.ingest.log_time.boot_times_from_metrics`; key ``""``: any host)."""

    max_unplaced_named: int = 10
    """Records that cannot be placed in time named (``file:line: why``) in the report per stream; all
    are counted in ``unresolved["log_time"]``."""

    default_host: str | None = None
    """Host of lines that name none (plain dmesg output of one machine)."""

    sxid_join_s: float = 1.0
    """The parts of one NVSwitch SXid (``Data {...}``, ``Fatal, Link N ...``, ``Severity S Engine
    instance N ...``) join one record while they come within this of its first line."""

    traceback_join_s: float = 2.0
    """Time-stamped lines of the same process within this of a ``Traceback`` line join its record
    (journald writes every line of a Python traceback as its own entry)."""
