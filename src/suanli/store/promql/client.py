"""HTTP client of the Prometheus query API (``/api/v1/query``, ``query_range``, ``series``,
``label/<name>/values``), as Prometheus, VictoriaMetrics, Mimir and Thanos serve it.

Every call is counted (:class:`QueryStats`: requests, bytes sent and received, samples decoded).
Queries go as POST forms (long selectors fit). Errors a user can cause or fix (a wrong URL, a
refused connection, a timeout, bad credentials, a query the server rejects) raise
:class:`~suanli.errors.InputError` naming the URL and the query; a server that refuses a query for
loading too many samples raises :class:`TooManySamples` (the store splits the query and retries).
Transient failures (5xx, connection resets, a 200 whose body a proxy cut short) are retried ``retries`` times.

Times on the wire are milliseconds since the epoch, written as seconds with three decimals.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from suanli.errors import InputError
from suanli.store.http import HttpEndpoint
from suanli.store.promql.metric_map import MetricMap

__all__ = ["PromClient", "PromConfig", "QueryStats", "TooManySamples", "ms_text"]


@dataclass(frozen=True)
class PromConfig(HttpEndpoint):
    """Where the TSDB is, how to log in, and the limits queries are split to. ``url`` is the base URL
    (``http://127.0.0.1:9090``, VictoriaMetrics ``http://vm:8428``, a Mimir or Thanos query frontend
    ``http://mimir/prometheus``); ``/api/v1/...`` is appended."""

    retries: int = 2
    """Retries of a request that failed transiently (5xx, connection reset)."""
    max_samples: int = 5_000_000
    """Most raw samples one query may load; below the server's limit (Prometheus
    ``--query.max-samples`` is 50 M by default, VictoriaMetrics ``-search.maxSamplesPerQuery`` 1 G)."""
    max_points_per_series: int = 11_000
    """Most points one query returns per series (Prometheus' query_range limit)."""
    max_series_per_query: int = 2_000
    """Most series one raw-sample query selects (keeps responses and selectors small)."""
    max_query_chars: int = 12_000
    """Longest label-value alternation one selector carries (VictoriaMetrics refuses queries longer
    than ``-search.maxQueryLen``, 16 KiB by default)."""
    flavor: str | None = None
    """``prometheus`` (Prometheus, Mimir, Thanos: ranges ``[t-d, t]``) or ``victoriametrics``
    (``(t-d, t]``); None asks the server once."""
    matchers: tuple[str, ...] = ()
    """Label matchers added to every selector, e.g. ``('cluster="a"',)``."""
    metric_regex: str = ".+"
    """Which metric names the store shows (a PromQL regex, anchored)."""
    default_lookback_s: float = 3600.0
    """Window read when none is given: the last hour."""
    cache_samples: int = 20_000_000
    """Raw samples kept in memory: a metric read whole is pulled once over the window and later
    reads are cut from it (0: no cache). ``PromStore.refresh()`` empties it."""
    metric_map: MetricMap = field(default_factory=MetricMap)
    """The TSDB's names and labels for suanli's metrics (``suanli.store.promql.metric_map``)."""


@dataclass
class QueryStats:
    """What the store cost: requests by endpoint, bytes both ways, samples decoded."""

    queries: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    """As sent over the wire (compressed where the server gzips)."""
    bytes_decoded: int = 0
    """The JSON the answers held, uncompressed."""
    samples: int = 0
    by_endpoint: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def add(self, endpoint: str, sent: int, received: int, decoded: int, seconds: float) -> None:
        self.queries += 1
        self.bytes_sent += sent
        self.bytes_received += received
        self.bytes_decoded += decoded
        self.seconds += seconds
        self.by_endpoint[endpoint] = self.by_endpoint.get(endpoint, 0) + 1


class TooManySamples(InputError):
    """The server refused a query for the samples it would load (split it and retry)."""


_TOO_MANY = ("too many samples", "cannot select more than", "maxsamplesperquery", "exceeds -search.max",
             "maxpointspertimeseries", "too many points", "maxuniquetimeseries", "exceeded maximum resolution")


def ms_text(ms: int) -> str:
    """Milliseconds since the epoch as the API's seconds text (``1773106425.082``)."""
    sign = "-" if ms < 0 else ""
    ms = abs(ms)
    return f"{sign}{ms // 1000}.{ms % 1000:03d}"


class PromClient:
    """One connection pool to one TSDB; ``stats`` counts what went over it."""

    def __init__(self, config: PromConfig, *, transport: httpx.BaseTransport | None = None) -> None:
        self.config = config
        self.base = config.url.rstrip("/")
        self.stats = QueryStats()
        self._http = config.http_client(transport=transport)
        self._flavor = config.flavor

    def close(self) -> None:
        self._http.close()

    # -- endpoints ------------------------------------------------------------------------------
    def query(self, expr: str, at_ms: int) -> tuple[str, list[dict[str, Any]]]:
        """(resultType, result) of an instant query."""
        data = self._call("query", {"query": expr, "time": ms_text(at_ms)}, expr)
        return str(data.get("resultType")), list(data.get("result") or [])

    def query_range(self, expr: str, start_ms: int, end_ms: int, step_ms: int) -> list[dict[str, Any]]:
        points = (end_ms - start_ms) // step_ms + 1
        if points > self.config.max_points_per_series:
            raise ValueError(f"query_range of {points} points per series (limit {self.config.max_points_per_series})")
        params = {"query": expr, "start": ms_text(start_ms), "end": ms_text(end_ms), "step": ms_text(step_ms)}
        if self.flavor() == "victoriametrics":
            params["nocache"] = "1"            # else VictoriaMetrics aligns start and end to the step
        data = self._call("query_range", params, expr)
        return list(data.get("result") or [])

    def series(self, match: str, start_ms: int, end_ms: int) -> list[dict[str, str]]:
        data = self._call("series", {"match[]": match, "start": ms_text(start_ms), "end": ms_text(end_ms)}, match)
        return [dict(d) for d in data or []]

    def label_values(self, label: str, match: str, start_ms: int, end_ms: int) -> list[str]:
        data = self._call(f"label/{label}/values", {"match[]": match, "start": ms_text(start_ms),
                                                     "end": ms_text(end_ms)}, match, method="GET")
        return [str(v) for v in data or []]

    def flavor(self) -> str:
        """``victoriametrics`` when the server knows MetricsQL's ``tfirst_over_time``, else ``prometheus``."""
        if self._flavor is None:
            try:
                self._call("query", {"query": "tfirst_over_time(vector(1)[1m:1m])", "time": "1"},
                           "tfirst_over_time(vector(1)[1m:1m])")
                self._flavor = "victoriametrics"
            except TooManySamples:
                raise
            except InputError as err:
                if "unknown function" not in str(err) and "bad_data" not in str(err):
                    raise
                self._flavor = "prometheus"
        return self._flavor

    # -- transport ------------------------------------------------------------------------------
    def _call(self, endpoint: str, params: dict[str, str], what: str, *, method: str = "POST") -> Any:
        url = f"{self.base}/api/v1/{endpoint}"
        for attempt in range(self.config.retries + 1):
            t0 = time.perf_counter()
            try:
                if method == "POST":
                    resp = self._http.post(url, data=params)
                else:
                    resp = self._http.get(url, params=params)
            except httpx.TransportError as err:
                self.stats.add(endpoint, 0, 0, 0, time.perf_counter() - t0)
                if attempt < self.config.retries and not isinstance(err, httpx.TimeoutException):
                    time.sleep(0.2 * 2 ** attempt)
                    continue
                raise InputError(f"{type(err).__name__}: {err or 'no answer'} (query: {_short(what)})",
                                 file=url) from None
            sent = len(resp.request.content or b"") + len(str(resp.request.url))
            self.stats.add(endpoint, sent, resp.num_bytes_downloaded, len(resp.content), time.perf_counter() - t0)
            body = _json(resp)
            cut = resp.status_code == 200 and body is None     # a transfer a proxy cut short
            if attempt < self.config.retries and (cut or (resp.status_code >= 500 and not _too_many(resp.text))):
                time.sleep(0.2 * 2 ** attempt)
                continue
            return self._decode(resp, body, url, what)
        raise AssertionError("unreachable")  # pragma: no cover

    def _decode(self, resp: httpx.Response, body: Any, url: str, what: str) -> Any:
        if resp.status_code == 200 and isinstance(body, dict) and body.get("status") == "success":
            return body.get("data")
        if isinstance(body, dict):
            msg = f"{body.get('errorType', 'error')}: {body.get('error', '')}"
        else:
            msg = f"HTTP {resp.status_code}: {resp.text.strip()[:200] or resp.reason_phrase}"
        cls = TooManySamples if _too_many(msg) else InputError
        raise cls(f"{msg} (query: {_short(what)})", file=url)


def _json(resp: httpx.Response) -> Any:
    """The body as JSON, None when it is not. A 200 that is not JSON is a transfer a proxy cut short
    (vmauth 1.79 cuts some answers to concurrent requests at 64 KiB): retried as a dropped
    connection is."""
    try:
        return json.loads(resp.content)
    except ValueError:
        return None


def _too_many(text: str) -> bool:
    low = text.lower()
    return any(s in low for s in _TOO_MANY)


def _short(expr: str, n: int = 300) -> str:
    return expr if len(expr) <= n else expr[:n] + f"... ({len(expr)} chars)"
