"""Boot times of the hosts as a store holds them: node-exporter's ``node_boot_time_seconds``, for
placing seconds-since-boot log lines (raw ``dmesg``, ``/dev/kmsg``) that arrive live (serve's log
tailer, a Loki query) the way file ingest places them from the metrics files read with the logs
(:func:`suanli.ingest.log_time.boot_times_from_metrics`).

Keys are what the store resolved each series to: the node id (``node-001``), else the series'
raw host label, else :data:`suanli.ingest.log_time.ANY_HOST`.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping

from suanli.ingest.log_time import ANY_HOST, BOOT_METRIC
from suanli.store.api import Series, Store

__all__ = ["LiveBootTimes", "boot_times"]

log = logging.getLogger("suanli.serve")


def _host(s: Series) -> str:
    if s.key.entity_kind == "node" and s.key.entity_id:
        return s.key.entity_id
    for name in ("instance", "hostname", "Hostname", "host", "node"):
        value = s.key.label(name)
        if value:
            return value.rsplit(":", 1)[0] if name == "instance" else value
    return ANY_HOST


def boot_times(store: Store, start: float | None = None, end: float | None = None) -> dict[str, tuple[float, ...]]:
    """Host -> the distinct boot times its ``node_boot_time_seconds`` series held (sorted)."""
    out: dict[str, set[float]] = {}
    for s in store.series(BOOT_METRIC, start=start, end=end):
        good = {float(v) for v in s.values if math.isfinite(v) and v > 0}
        if good:
            out.setdefault(_host(s), set()).update(good)
    return {h: tuple(sorted(v)) for h, v in out.items()}


class LiveBootTimes(Mapping[str, tuple[float, ...]]):
    """:func:`boot_times` of a store that is still being written (serve: the scraper adds
    node-exporter's samples while the tailer reads logs), read again when the last read is
    ``refresh_s`` old (a host that booted, or was first scraped, since is then known)."""

    def __init__(self, store: Store, refresh_s: float = 5.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._store, self._refresh_s, self._clock = store, refresh_s, clock
        self._lock = threading.Lock()
        self._times: dict[str, tuple[float, ...]] = {}
        self._read_at = -math.inf
        self.last_error: str | None = None

    def _current(self) -> dict[str, tuple[float, ...]]:
        with self._lock:
            if self._clock() - self._read_at >= self._refresh_s:
                self._read_at = self._clock()
                try:
                    self._times = boot_times(self._store)
                except Exception as exc:      # a TSDB that refuses or is down: the lines wait unplaced,
                    self.last_error = f"{type(exc).__name__}: {exc}"    # the tail goes on
                    log.info("boot times not read: %s", self.last_error)
            return self._times

    def __getitem__(self, host: str) -> tuple[float, ...]:
        return self._current()[host]

    def __iter__(self) -> Iterator[str]:
        return iter(dict(self._current()))

    def __len__(self) -> int:
        return len(self._current())
