"""Bounded hand-off from the receivers to whatever consumes their records (the store's sink).

A receiver :meth:`~IngestQueue.offer` s the records of one request; the queue takes all of them
or none, so an answer of 200 means every record of the request will be delivered, and 429 means
none was taken. One consumer thread calls ``deliver`` with batches in arrival order; at
:meth:`~IngestQueue.close` it first delivers everything accepted. A ``deliver`` that raises is
counted and the loop goes on.
"""

from __future__ import annotations

import enum
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["Admission", "IngestQueue", "QueueStats"]

T = TypeVar("T")


class Admission(enum.Enum):
    ACCEPTED = "accepted"
    FULL = "full"            # 429: try again later
    CLOSED = "closed"        # 503: not started, or stopping


@dataclass
class QueueStats:
    """Counts in records (spans, notifications, uploads)."""

    accepted: int = 0
    refused_full: int = 0
    refused_closed: int = 0
    delivered: int = 0
    deliver_errors: int = 0
    pending: int = 0
    """Accepted and not yet delivered (the batch being delivered included)."""


class IngestQueue(Generic[T]):
    """At most ``capacity`` records waiting; one consumer thread delivers batches of up to ``max_batch``."""

    def __init__(self, name: str, capacity: int, deliver: Callable[[list[T]], None], *,
                 max_batch: int = 50_000) -> None:
        self.name, self.capacity, self.deliver, self.max_batch = name, capacity, deliver, max_batch
        self._items: deque[T] = deque()
        self._cond = threading.Condition()
        self._open = False
        self._thread: threading.Thread | None = None
        self._stats = QueueStats()

    def stats(self) -> QueueStats:
        with self._cond:
            return QueueStats(**vars(self._stats))

    @property
    def is_open(self) -> bool:
        return self._open

    def would_refuse(self) -> Admission | None:
        """What an offer would get now if it were large (a cheap check before parsing a request)."""
        with self._cond:
            if not self._open:
                return Admission.CLOSED
            return Admission.FULL if self._stats.pending >= self.capacity else None

    def offer(self, items: Sequence[T]) -> Admission:
        """All of ``items`` or none. A request larger than the whole queue is taken when it is empty."""
        with self._cond:
            s = self._stats
            if not self._open:
                s.refused_closed += len(items)
                return Admission.CLOSED
            if s.pending and s.pending + len(items) > self.capacity:
                s.refused_full += len(items)
                return Admission.FULL
            self._items.extend(items)
            s.pending += len(items)
            s.accepted += len(items)
            self._cond.notify()
            return Admission.ACCEPTED

    def start(self) -> None:
        with self._cond:
            if self._thread is not None:
                return
            self._open = True
            self._thread = threading.Thread(target=self._consume, name=f"suanli-queue-{self.name}", daemon=True)
            self._thread.start()

    def close(self, timeout_s: float = 60.0) -> None:
        """Refuse new records, deliver every accepted one, stop the consumer."""
        with self._cond:
            self._open = False
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _consume(self) -> None:
        while True:
            with self._cond:
                while not self._items and self._open:
                    self._cond.wait()
                if not self._items:
                    return
                n = min(len(self._items), self.max_batch)
                batch = [self._items.popleft() for _ in range(n)]
            try:
                self.deliver(batch)
            except Exception:  # the consumer's fault: counted, never breaks the loop
                with self._cond:
                    self._stats.deliver_errors += 1
            with self._cond:
                self._stats.pending -= n
                self._stats.delivered += n
