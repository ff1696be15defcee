"""Prometheus remote write 1.0: suanli's derived series to Prometheus
(``--web.enable-remote-write-receiver``, ``/api/v1/write``), VictoriaMetrics (``/api/v1/write``),
Mimir (``/api/v1/push``) or anything else that receives the protocol.

A request is a ``prometheus.WriteRequest`` (messages generated from the specification's proto,
``suanli.store.remote_write.prompb``), snappy block-compressed, POSTed with ``Content-Encoding:
snappy``, ``Content-Type: application/x-protobuf`` and ``X-Prometheus-Remote-Write-Version: 0.1.0``.
Labels are sorted by name, samples of a series by time.

Samples wait in a bounded buffer (``max_buffer_samples``); when it is full the oldest are dropped
and counted. ``flush`` sends the buffer in requests of ``max_samples_per_request``. A 5xx or 429
answer, or a connection error, is retried with exponential backoff (``min_backoff_s`` doubling up
to ``max_backoff_s``; a 429's ``Retry-After`` is honoured up to that); after ``max_retries`` the
batch goes back to the buffer's front for the next flush. Any other 4xx is never retried: the
batch is dropped, counted as rejected, and the server's reason kept. Nothing raises into the
caller's loop but bad metric or label names (``InputError``, at ``add``).
"""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import cramjam
import httpx

from suanli.errors import InputError
from suanli.store.http import HttpEndpoint
from suanli.store.remote_write.prompb import remote_pb2

__all__ = ["RemoteWriteConfig", "RemoteWriter", "WriteStats", "encode_request"]

Labels = tuple[tuple[str, str], ...]
SeriesSamples = tuple[str, Mapping[str, str], Sequence[tuple[float, float]]]
"""(metric name, labels, [(timestamp in s, value)]): one derived series."""

_METRIC_RE = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
_LABEL_RE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
HEADERS = {"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf",
           "X-Prometheus-Remote-Write-Version": "0.1.0", "User-Agent": "suanli-remote-write/0.1"}


@dataclass(frozen=True)
class RemoteWriteConfig(HttpEndpoint):
    """Where to send and how; ``url`` is the receiver's endpoint, e.g.
    ``http://127.0.0.1:9090/api/v1/write``."""

    max_buffer_samples: int = 100_000
    """Samples kept waiting at most; beyond it the oldest are dropped (``WriteStats.dropped``)."""
    max_samples_per_request: int = 2_000
    """As Prometheus' ``queue_config.max_samples_per_send``."""
    max_retries: int = 5
    """Retries of one request on 5xx, 429 or a connection error before it waits for the next flush."""
    min_backoff_s: float = 0.03
    max_backoff_s: float = 5.0
    """Backoff doubles from ``min_backoff_s`` up to this (Prometheus' queue_config defaults)."""


@dataclass
class WriteStats:
    requests: int = 0
    sent: int = 0
    """Samples the receiver accepted (2xx)."""
    dropped: int = 0
    """Samples dropped from a full buffer (the oldest)."""
    rejected: int = 0
    """Samples in requests refused with a 4xx other than 429 (never retried)."""
    retries: int = 0
    bytes_sent: int = 0
    errors: list[str] = field(default_factory=list)
    """The first reasons the receiver gave (``max_errors`` kept)."""
    max_errors: int = 20

    def error(self, text: str) -> None:
        if len(self.errors) < self.max_errors:
            self.errors.append(text)


def _check_names(metric: str, labels: Mapping[str, str]) -> Labels:
    if not _METRIC_RE.match(metric):
        raise InputError(f"not a Prometheus metric name: {metric!r}")
    for name in labels:
        if not _LABEL_RE.match(name) or name.startswith("__"):
            raise InputError(f"{metric}: not a label name: {name!r}")
    return tuple(sorted({**labels, "__name__": metric}.items()))


def encode_request(batch: Iterable[tuple[Labels, int, float]]) -> bytes:
    """Serialized ``WriteRequest`` of (sorted labels, ts ms, value) samples: one TimeSeries per label
    set, its samples by time (the last value of a repeated timestamp)."""
    by_series: dict[Labels, dict[int, float]] = {}
    for labels, ts, value in batch:
        by_series.setdefault(labels, {})[ts] = value
    req = remote_pb2.WriteRequest()
    for labels, samples in by_series.items():
        series = req.timeseries.add()
        for name, text in labels:
            series.labels.add(name=name, value=text)
        for ts in sorted(samples):
            series.samples.add(value=samples[ts], timestamp=ts)
    return req.SerializeToString()


class RemoteWriter:
    """``w = RemoteWriter(RemoteWriteConfig(url)); w.add("suanli_job_mfu_ratio", {"job_id": "a"}, [(t, 0.41)]); w.flush()``."""

    def __init__(self, config: RemoteWriteConfig, *, transport: httpx.BaseTransport | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.config = config
        self.stats = WriteStats()
        self._buffer: deque[tuple[Labels, int, float]] = deque()
        self._sleep = sleep
        self._http = config.http_client(HEADERS, transport=transport)

    def add(self, metric: str, labels: Mapping[str, str], samples: Sequence[tuple[float, float]]) -> None:
        """Buffer samples (timestamps in seconds) of one series."""
        key = _check_names(metric, labels)
        for ts, value in samples:
            self._push(key, round(float(ts) * 1000.0), float(value))

    def write(self, series: Iterable[SeriesSamples]) -> WriteStats:
        """Buffer every series, then flush."""
        for metric, labels, samples in series:
            self.add(metric, labels, samples)
        return self.flush()

    def _push(self, key: Labels, ts_ms: int, value: float) -> None:
        if len(self._buffer) >= self.config.max_buffer_samples:
            self._buffer.popleft()
            self.stats.dropped += 1
        self._buffer.append((key, ts_ms, value))

    @property
    def pending(self) -> int:
        return len(self._buffer)

    def flush(self) -> WriteStats:
        """Send what is buffered; stops early (keeping the rest) when the receiver stays unavailable."""
        while self._buffer:
            n = min(self.config.max_samples_per_request, len(self._buffer))
            batch = [self._buffer.popleft() for _ in range(n)]
            if not self._send(batch):
                self._requeue(batch)
                break
        return self.stats

    def _requeue(self, batch: list[tuple[Labels, int, float]]) -> None:
        """Put an unsent batch back in front of newer samples; what no longer fits (the oldest) is dropped."""
        room = max(0, self.config.max_buffer_samples - len(self._buffer))
        keep = batch[len(batch) - room:] if room < len(batch) else batch
        self.stats.dropped += len(batch) - len(keep)
        self._buffer.extendleft(reversed(keep))

    def _send(self, batch: list[tuple[Labels, int, float]]) -> bool:
        """True when the batch is done with (accepted or rejected for good); False to keep it."""
        body = cramjam.snappy.compress_raw(encode_request(batch))
        payload = bytes(body)
        for attempt in range(self.config.max_retries + 1):
            if attempt:
                self.stats.retries += 1
            self.stats.requests += 1
            self.stats.bytes_sent += len(payload)
            try:
                resp = self._http.post(self.config.url, content=payload)
            except httpx.TransportError as err:
                self.stats.error(f"{self.config.url}: {type(err).__name__}: {err}")
                if attempt < self.config.max_retries:
                    self._sleep(self._backoff(attempt, None))
                continue
            if resp.is_success:
                self.stats.sent += len(batch)
                return True
            reason = f"{self.config.url}: HTTP {resp.status_code}: {resp.text.strip()[:300]}"
            if resp.status_code == 429 or resp.status_code >= 500:
                self.stats.error(reason)
                if attempt < self.config.max_retries:
                    self._sleep(self._backoff(attempt, resp.headers.get("Retry-After")))
                continue
            self.stats.error(reason)
            self.stats.rejected += len(batch)
            return True
        return False

    def _backoff(self, attempt: int, retry_after: str | None) -> float:
        wait = min(self.config.max_backoff_s, self.config.min_backoff_s * 2.0 ** attempt)
        if retry_after and retry_after.strip().isdigit():
            wait = min(self.config.max_backoff_s, max(wait, float(retry_after)))
        return wait

    def close(self) -> None:
        self._http.close()
