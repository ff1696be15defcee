"""Logs in Grafana Loki: a source that reads a LogQL selector back as the lines of the files it
was fed (so :func:`suanli.ingest.logs.parse_log_lines` gives the same records, multi-line grouping
and classification as reading the file), and a push client for serve's log tailer.

Reading: ``/loki/api/v1/query_range`` with ``direction=forward``, paged ``limit`` entries at a time
(the next page starts at the last timestamp seen; entries already seen there are skipped). Each
stream (one per file: the pusher labels it ``filename``) is parsed on its own, in timestamp order,
with the ``filename`` label as the events' source (``kernel.log:12``).

Pushing: ``/loki/api/v1/push`` with the JSON body of Loki's HTTP API (``{"streams": [{"stream":
labels, "values": [[ns, line], ...]}]}``); 5xx, 429 and connection errors are retried with
exponential backoff, other 4xx never. :func:`file_entries` stamps a file's lines for pushing: a
line's own timestamp where its head has one, else the previous line's plus 1 ns, and never earlier
than the line before (Loki orders a stream by time; this keeps the file's order, so continuation
lines stay with their record).
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from suanli.errors import InputError
from suanli.ingest.log_config import LogConfig
from suanli.ingest.log_head import parse_head
from suanli.ingest.log_time import Placer, with_clock
from suanli.ingest.logs import parse_log_lines
from suanli.ingest.records import Event, IngestReport
from suanli.inventory import Resolver

__all__ = ["LokiClient", "LokiConfig", "Stream", "file_entries", "read_loki"]

Entry = tuple[int, str]
"""(timestamp in ns since the epoch, line without its newline)."""
Stream = tuple[Mapping[str, str], Sequence[Entry]]


@dataclass(frozen=True)
class LokiConfig:
    url: str
    """Loki's base URL (``http://127.0.0.1:3100``); ``/loki/api/v1/...`` is appended."""
    tenant: str | None = None
    """Sent as ``X-Scope-OrgID`` (multi-tenant Loki)."""
    username: str | None = None
    password: str | None = None
    bearer_token: str | None = None
    timeout_s: float = 30.0
    verify_tls: bool | str = True
    page_limit: int = 5000
    """Entries per query_range page (Loki's ``max_entries_limit_per_query`` is 5000 by default)."""
    max_retries: int = 5
    min_backoff_s: float = 0.1
    max_backoff_s: float = 10.0


class LokiClient:
    def __init__(self, config: LokiConfig, *, transport: httpx.BaseTransport | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.config = config
        headers = {"X-Scope-OrgID": config.tenant} if config.tenant else {}
        if config.bearer_token:
            headers["Authorization"] = f"Bearer {config.bearer_token}"
        auth = (config.username, config.password or "") if config.username else None
        self._http = httpx.Client(timeout=config.timeout_s, headers=headers, auth=auth, verify=config.verify_tls,
                                  transport=transport)
        self._sleep = sleep
        self.requests = 0
        self.bytes_received = 0

    def close(self) -> None:
        self._http.close()

    def query_range(self, logql: str, start_ns: int, end_ns: int, limit: int) -> list[dict[str, Any]]:
        """The ``streams`` result of one page (forward, ``start`` inclusive, ``end`` exclusive)."""
        url = self.config.url.rstrip("/") + "/loki/api/v1/query_range"
        params = {"query": logql, "start": str(start_ns), "end": str(end_ns), "limit": str(limit),
                  "direction": "forward"}
        try:
            resp = self._http.get(url, params=params)
        except httpx.TransportError as err:
            raise InputError(f"{type(err).__name__}: {err} (query: {logql})", file=url) from None
        self.requests += 1
        self.bytes_received += resp.num_bytes_downloaded
        try:
            body = resp.json()
        except ValueError:
            body = None
        if resp.status_code != 200 or not isinstance(body, dict) or body.get("status") != "success":
            why = resp.text.strip()[:300] or resp.reason_phrase
            raise InputError(f"HTTP {resp.status_code}: {why} (query: {logql})", file=url)
        data = body.get("data") or {}
        if data.get("resultType") != "streams":
            raise InputError(f"not a log query (result {data.get('resultType')!r}; query: {logql})", file=url)
        return list(data.get("result") or [])

    def push(self, streams: Iterable[Stream]) -> None:
        """Push streams; retried on 5xx/429/connection errors, an InputError when Loki refuses them."""
        url = self.config.url.rstrip("/") + "/loki/api/v1/push"
        body = json.dumps({"streams": [{"stream": dict(labels), "values": [[str(ts), line] for ts, line in entries]}
                                       for labels, entries in streams]}).encode()
        last = ""
        for attempt in range(self.config.max_retries + 1):
            if attempt:
                self._sleep(min(self.config.max_backoff_s, self.config.min_backoff_s * 2.0 ** (attempt - 1)))
            try:
                resp = self._http.post(url, content=body, headers={"Content-Type": "application/json"})
            except httpx.TransportError as err:
                last = f"{type(err).__name__}: {err}"
                continue
            self.requests += 1
            if resp.is_success:
                return
            last = f"HTTP {resp.status_code}: {resp.text.strip()[:300]}"
            if resp.status_code != 429 and resp.status_code < 500:
                break
        raise InputError(f"push refused: {last}", file=url)


def file_entries(lines: Iterable[str], *, default_ns: int, year: int | None = None,
                 config: LogConfig | None = None) -> list[Entry]:
    """Loki entries for a file's lines, in file order, with strictly increasing timestamps
    (``default_ns`` before the first line with a time of its own; ``year`` for syslog heads).
    With ``config`` a line's time is placed as ingest places it (its ``timezone`` for local-time
    stamps, its ``boot_times`` and ``default_host`` for seconds since boot), so Loki holds each
    line at the time it happened and a query for that time finds it."""
    year = time.gmtime().tm_year if year is None else year
    placer = Placer(dataclasses.replace(config, assume_year=year)) if config is not None else None
    out: list[Entry] = []
    prev = default_ns - 1
    for raw in lines:
        line = raw.rstrip("\n").rstrip("\r")
        head = parse_head(line, year) if line else None
        if head is not None and placer is not None:
            fallback = placer.config.default_host                # as the log reader picks the host
            own = placer.place(head, fallback if head.addr_host and fallback else head.host or fallback)[0]
        else:
            own = head.ts if head is not None else math.nan
        ts = round(own * 1e6) * 1000 if math.isfinite(own) else prev + 1     # heads carry up to µs
        prev = max(ts, prev + 1)
        out.append((prev, line))
    return out


def _pages(client: LokiClient, logql: str, start_ns: int, end_ns: int) -> Iterator[tuple[tuple[tuple[str, str], ...],
                                                                                        list[Entry]]]:
    """(stream labels, entries) of every page, each entry once. The next page starts at the newest
    timestamp of a full page (entries seen there are skipped); a full page that did not get past its
    start (more entries at one ns than a page holds) is asked again with twice the limit."""
    seen: set[tuple[tuple[tuple[str, str], ...], int, str]] = set()       # entries at ``start`` already given
    start, limit = start_ns, client.config.page_limit
    while start < end_ns:
        result = client.query_range(logql, start, end_ns, limit)
        count, newest = 0, start
        page: list[tuple[tuple[tuple[str, str], ...], int, str]] = []
        for item in result:
            labels = tuple(sorted((item.get("stream") or {}).items()))
            for ts_text, line in item.get("values") or []:
                count += 1
                page.append((labels, int(ts_text), line))
                newest = max(newest, int(ts_text))
        if count >= limit and newest == start:
            if limit >= 100 * client.config.page_limit:
                raise InputError(f"more than {limit} log entries at one timestamp ({start} ns; query: {logql})")
            limit *= 2
            continue
        fresh = [e for e in page if e not in seen]
        for labels in dict.fromkeys(e[0] for e in fresh):
            yield labels, [(ts, line) for lb, ts, line in fresh if lb == labels]
        if count < limit:
            return
        seen = {e for e in page if e[1] == newest}
        start, limit = newest, client.config.page_limit


def read_loki(client: LokiClient, logql: str, start: float, end: float, resolver: Resolver | None,
              report: IngestReport, config: LogConfig | None = None, *, timezone: str | None = None,
              boot_times: Mapping[str, Sequence[float]] | None = None) -> Iterator[Event]:
    """Events of the streams a LogQL selector picks in ``[start, end]`` (seconds), one stream at a
    time as if each were its file. Lines are placed as file ingest places them: local-time stamps
    (``dmesg -T``, syslog) in ``timezone`` (the inventory's), seconds since boot by ``boot_times``
    (host -> node-exporter's ``node_boot_time_seconds``: :func:`suanli.store.boot_times.boot_times`
    of the metrics store), each unless ``config`` sets its own."""
    streams: dict[tuple[tuple[str, str], ...], list[Entry]] = {}
    for labels, entries in _pages(client, logql, round(start * 1e9), round(end * 1e9) + 1):
        streams.setdefault(labels, []).extend(entries)
    base = with_clock(config or LogConfig(), timezone, boot_times)
    for labels, entries in sorted(streams.items()):
        entries.sort(key=lambda e: e[0])
        tags = dict(labels)
        name = tags.get("filename") or "{" + ",".join(f'{k}="{v}"' for k, v in labels) + "}"
        cfg = base if base.default_host or "host" not in tags else dataclasses.replace(base, default_host=tags["host"])
        yield from parse_log_lines((line + "\n" for _, line in entries), name.rsplit("/", 1)[-1], resolver, report,
                                   cfg)
