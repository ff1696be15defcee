"""Live scraping of OpenMetrics / Prometheus text endpoints (dcgm-exporter, node-exporter, any ``/metrics``).

A :class:`TargetScraper` fetches one target and parses the body with suanli's own parser
(:mod:`suanli.ingest.openmetrics`), keeping its series cache across scrapes, so a series' labels
are parsed and resolved once. A :class:`Scraper` runs many targets on their intervals with a
small pool of worker threads and hands each :class:`ScrapeResult` to a callback.

As Prometheus does:

* samples without a timestamp are stamped with the scrape's start time; timed samples keep theirs;
* every sample gets the target labels ``job`` and ``instance`` (``host:port``) and the target's
  extra ``labels``; an exposed label of the same name is kept as ``exported_<name>`` (Prometheus'
  ``honor_labels: false``), so node-exporter series resolve to their node through ``instance``;
* each scrape adds the series ``up`` (1 when the target answered 200, else 0),
  ``scrape_duration_seconds`` and ``scrape_samples_scraped``.

Unlike Prometheus, a bad line does not fail the whole scrape: it is rejected into the result's
report (``job/instance:LINE: what``) and the good samples are kept. Nothing here raises into the
loop: a refused connection, a timeout, a non-200 answer or a body over ``max_body_bytes`` make
``up`` 0 and set ``last_error``; an exception from the callback is counted in the target's health.
"""

from __future__ import annotations

import dataclasses
import heapq
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal

import httpx
import numpy as np

from suanli.ingest.openmetrics import Batch, Family, OpenMetricsConfig, OpenMetricsParser, detect_format
from suanli.ingest.records import IngestReport, SeriesKey
from suanli.ingest.resolve import series_key
from suanli.inventory import Resolver
from suanli.metric_catalog import dcgm_blank_to_nan, is_dcgm_blank

__all__ = ["ACCEPT", "ScrapeResult", "ScrapeTarget", "Scraper", "TargetHealth", "TargetScraper"]

ACCEPT = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
"""The Accept header Prometheus sends: OpenMetrics preferred, the 0.0.4 text format accepted."""

_DCGM = OpenMetricsConfig().dcgm_prefix
_PARSER_CONFIG = OpenMetricsConfig(dcgm_prefix="\0")
"""The parser's per-series DCGM blank check is done here instead: a scrape has one sample per
series, where a scalar test is far cheaper than the parser's array operation."""


@dataclass(frozen=True)
class ScrapeTarget:
    """One endpoint to scrape (see docs/serve.md, ``scrape:``)."""

    job: str
    instance: str
    """``host:port`` of the endpoint; also the ``instance`` label."""
    url: str
    interval_s: float = 15.0
    timeout_s: float = 10.0
    labels: tuple[tuple[str, str], ...] = ()
    """Extra labels put on every sample of this target."""
    max_body_bytes: int = 32 << 20
    """A body larger than this is not parsed (``up`` 0, ``last_error`` says so)."""
    source: str = ""
    """Where the target was configured (``serve.yaml:12``)."""

    @property
    def name(self) -> str:
        return f"{self.job}/{self.instance}"

    def target_labels(self) -> dict[str, str]:
        """``job``, ``instance`` and the extra labels (which may set ``instance``: a loopback port
        that stands for ``node-001:9100``)."""
        return {"job": self.job, "instance": self.instance, **dict(self.labels)}


@dataclass
class TargetHealth:
    """``up``-style health of one target, after its last scrape."""

    up: bool = False
    last_scrape_ts: float | None = None
    duration_s: float = 0.0
    samples: int = 0
    rejected: int = 0
    last_error: str | None = None
    scrapes: int = 0
    failures: int = 0
    skipped: int = 0
    """Scrapes not started because the previous one of the target was still running."""
    deliver_errors: int = 0
    """Results the callback raised on (the loop went on)."""


@dataclass(frozen=True)
class ScrapeResult:
    """What one scrape produced: the samples (target's and synthetic) and the target's health."""

    target: ScrapeTarget
    ts: float
    batches: list[Batch]
    health: TargetHealth
    report: IngestReport = field(default_factory=IngestReport)

    @property
    def samples(self) -> int:
        return sum(len(ts) for _, ts, _ in self.batches)

    def columns(self) -> tuple[list[SeriesKey], np.ndarray, np.ndarray]:
        """The samples as columns: one key per sample, and the timestamps and values."""
        keys = [key for key, ts, _ in self.batches for _ in range(len(ts))]
        if not self.batches:
            return keys, np.empty(0), np.empty(0)
        return (keys, np.concatenate([ts for _, ts, _ in self.batches]),
                np.concatenate([v for _, _, v in self.batches]))


def _format_of(content_type: str, head: Iterable[str]) -> Literal["openmetrics", "prometheus"]:
    ctype = content_type.split(";", 1)[0].strip().lower()
    if ctype == "application/openmetrics-text":
        return "openmetrics"
    if ctype == "text/plain":
        return "prometheus"
    return detect_format(head)


class TargetScraper:
    """Scrapes one target; keeps its series cache and label merges between scrapes."""

    def __init__(self, target: ScrapeTarget, resolver: Resolver | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.target, self.resolver, self.clock = target, resolver, clock
        self.health = TargetHealth()
        self._keys: dict[str, SeriesKey | None] = {}
        self._families: dict[str, Family] = {}
        self._merged: dict[int, tuple[SeriesKey, SeriesKey]] = {}
        self._own = target.target_labels()
        self._synthetic = {name: series_key(name, self._own, resolver)
                           for name in ("up", "scrape_duration_seconds", "scrape_samples_scraped")}

    def set_resolver(self, resolver: Resolver | None) -> None:
        """Resolve against a new inventory from the next scrape on (the label caches are dropped)."""
        self.resolver = resolver
        self._merged.clear()
        self._synthetic = {name: series_key(name, self._own, resolver) for name in self._synthetic}

    def scrape(self, client: httpx.Client) -> ScrapeResult:
        """Fetch and parse once; never raises."""
        start = self.clock()
        t0 = time.perf_counter()
        report = IngestReport()
        batches: list[Batch] = []
        error: str | None = None
        try:
            body, ctype = self._fetch(client)
            batches = self.parse(body, ctype, start, report)
        except httpx.TimeoutException:
            error = f"timeout after {self.target.timeout_s:g}s"
        except (httpx.HTTPError, httpx.InvalidURL, OSError, zlib.error, ValueError) as exc:
            error = str(exc) or type(exc).__name__
        duration = time.perf_counter() - t0
        return self._result(start, duration, batches, report, error)

    def _fetch(self, client: httpx.Client) -> tuple[str, str]:
        with client.stream("GET", self.target.url, headers={"Accept": ACCEPT},
                           timeout=self.target.timeout_s) as resp:
            if resp.status_code != 200:
                raise ValueError(f"HTTP {resp.status_code} from {self.target.url}")
            chunks: list[bytes] = []
            size = 0
            for chunk in resp.iter_bytes():
                size += len(chunk)
                if size > self.target.max_body_bytes:
                    raise ValueError(f"body over {self.target.max_body_bytes} bytes")
                chunks.append(chunk)
            return b"".join(chunks).decode("utf-8", "surrogateescape"), resp.headers.get("content-type", "")

    def parse(self, body: str, content_type: str, ts: float, report: IngestReport) -> list[Batch]:
        """Samples of one exposition body; untimed ones stamped ``ts``, target labels merged."""
        lines = body.split("\n")
        fmt = _format_of(content_type, lines[:2000])
        parser = OpenMetricsParser(source=self.target.name, resolver=None, report=report, fmt=fmt, arrival_ts=ts,
                                   config=_PARSER_CONFIG)
        parser.keys, parser.families = self._keys, self._families
        out: list[Batch] = []
        for chunk in parser.feed(enumerate(lines, 1)):
            out.extend(chunk)
        out.extend(parser.finish())
        report.add("samples", parser.samples)
        for key, _, values in out:
            if key.metric.startswith(_DCGM):
                if len(values) == 1:
                    if is_dcgm_blank(values[0]):
                        values[0] = np.nan
                else:
                    dcgm_blank_to_nan(values)
        return [(self._merge(key), t, v) for key, t, v in out]

    def _merge(self, key: SeriesKey) -> SeriesKey:
        hit = self._merged.get(id(key))
        if hit is not None and hit[0] is key:
            return hit[1]
        labels = dict(key.labels)
        for name, value in self._own.items():
            if name in labels and labels[name] != value:
                labels[f"exported_{name}"] = labels[name]
            labels[name] = value
        merged = series_key(key.metric, labels, self.resolver)
        self._merged[id(key)] = (key, merged)
        return merged

    def _result(self, start: float, duration: float, batches: list[Batch], report: IngestReport,
                error: str | None) -> ScrapeResult:
        h = self.health
        samples = sum(len(t) for _, t, _ in batches)
        h.up, h.last_scrape_ts, h.duration_s, h.last_error = error is None, start, duration, error
        h.samples, h.rejected = samples, report.rejected
        h.scrapes += 1
        h.failures += error is not None
        stamp = np.array([start])
        for name, value in (("up", float(error is None)), ("scrape_duration_seconds", duration),
                            ("scrape_samples_scraped", float(samples))):
            batches.append((self._synthetic[name], stamp, np.array([value])))
        return ScrapeResult(self.target, start, batches, dataclasses.replace(h), report)


class Scraper:
    """Scrapes many targets on their intervals and calls ``deliver`` with every result.

    One scheduler thread and ``workers`` fetch threads; the first scrape of each target is spread
    over its interval (an offset from a hash of its name, as Prometheus does) so that thousands of
    targets do not all fire at once. A target whose previous scrape is still running is skipped
    for that round (counted in ``skipped``).
    """

    def __init__(self, targets: Sequence[ScrapeTarget], deliver: Callable[[ScrapeResult], None], *,
                 resolver: Resolver | None = None, workers: int = 4,
                 clock: Callable[[], float] = time.time) -> None:
        self.deliver = deliver
        self.scrapers = [TargetScraper(t, resolver, clock) for t in targets]
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="suanli-scrape")
        self._client = httpx.Client(follow_redirects=False, limits=httpx.Limits(max_connections=max(8, workers * 2)))
        self._busy: set[int] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def health(self) -> dict[str, TargetHealth]:
        """A copy of every target's health, by ``job/instance``."""
        return {s.target.name: dataclasses.replace(s.health) for s in self.scrapers}

    def set_resolver(self, resolver: Resolver | None) -> None:
        """A reloaded inventory: every target resolves against it from its next scrape on."""
        for s in self.scrapers:
            s.set_resolver(resolver)

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._schedule, name="suanli-scrape-scheduler", daemon=True)
            self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop scheduling, wait for running scrapes (and their deliveries), close the client."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
        self._pool.shutdown(wait=True)
        self._client.close()

    def _schedule(self) -> None:
        now = time.monotonic()
        heap = [(now + (zlib.crc32(s.target.name.encode()) % 1000) / 1000 * s.target.interval_s, i)
                for i, s in enumerate(self.scrapers)]
        heapq.heapify(heap)
        while heap and not self._stop.is_set():
            due, i = heap[0]
            if self._stop.wait(max(0.0, due - time.monotonic())):
                break
            heapq.heapreplace(heap, (due + self.scrapers[i].target.interval_s, i))
            with self._lock:
                busy = i in self._busy
                self._busy.add(i)
            if busy:
                self.scrapers[i].health.skipped += 1
                continue
            self._pool.submit(self._run, i)

    def _run(self, i: int) -> None:
        scraper = self.scrapers[i]
        try:
            result = scraper.scrape(self._client)
            try:
                self.deliver(result)
            except Exception:  # the consumer's fault: counted, never breaks the loop
                scraper.health.deliver_errors += 1
        finally:
            with self._lock:
                self._busy.discard(i)
