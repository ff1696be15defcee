"""Settings of the log reader (:mod:`suanli.ingest.logs`), one documented default per field."""

from __future__ import annotations

from dataclasses import dataclass

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
    of the last full timestamp seen, else the current year."""

    boot_time_s: float | None = None
    """Epoch seconds of the host's boot, to place dmesg/kmsg lines that carry seconds since boot."""

    default_host: str | None = None
    """Host of lines that name none (plain dmesg output of one machine)."""

    traceback_join_s: float = 2.0
    """Time-stamped lines of the same process within this of a ``Traceback`` line join its record
    (journald writes every line of a Python traceback as its own entry)."""
