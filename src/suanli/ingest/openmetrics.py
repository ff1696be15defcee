"""Streaming parser of OpenMetrics 1.0 and Prometheus text exposition 0.0.4 (docs/ingest.md).

Lines in (``suanli.ingest.openmetrics_file`` reads files), ``(SeriesKey, ts[], values[])`` batches
out. Each distinct series text is parsed and resolved once (cached); per line: a dict lookup, a
split, two floats.

* OpenMetrics (``.om``, or ``# EOF`` / ``# UNIT`` / an OpenMetrics-only type seen): timestamps in
  float seconds, ``# EOF`` required, content after it rejected. Prometheus text: integer ms.
* No timestamp: ``arrival_ts`` (a live scrape's time; files: their mtime), else rejected. A
  timestamp outside [``min_ts_s``, ``max_ts_s``] (2000..2100) is rejected (``timestamp out of
  range``) and its value kept in ``stray_ts`` (so a store can still show how far it was).
* Files: a last line without its newline, in a file not ending in ``# EOF``, was cut by a writer
  that died or a copy that stopped: rejected (``truncated line``). An unreadable rest of a file
  (a corrupt ``.gz``) is one reject; the lines before it load.
* Samples keep their exposed names (``foo_total``); ``foo_created`` of counter / histogram /
  summary families is a creation time, not stored (counted as ``created``). Exemplars and
  comments are tolerated. ``NaN``/``+Inf``/``-Inf`` are kept; DCGM blank sentinels become NaN
  for ``DCGM_*`` metrics. A bad line is ``report.reject("file:LINE: what")``; the rest loads.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from suanli.ingest.labels import LabelError, parse_labels
from suanli.ingest.records import IngestReport, SeriesKey
from suanli.ingest.resolve import series_key
from suanli.inventory import Resolver
from suanli.metric_catalog import DCGM_BLANK, DCGM_PREFIX, dcgm_blank_to_nan

__all__ = ["Batch", "Family", "LabelError", "OpenMetricsConfig", "OpenMetricsParser", "detect_format", "parse_labels",
           "parse_openmetrics"]

Format = Literal["openmetrics", "prometheus", "auto"]
Batch = tuple[SeriesKey, np.ndarray, np.ndarray]

_NAME_RE = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
_OM_TYPES = frozenset({"unknown", "info", "stateset", "gaugehistogram"})
_TYPES = frozenset({"counter", "gauge", "histogram", "summary", "untyped", *_OM_TYPES})
_CREATED_TYPES = frozenset({"counter", "histogram", "summary", "gaugehistogram"})


@dataclass(frozen=True)
class OpenMetricsConfig:
    """Parser settings (documented defaults)."""

    batch_lines: int = 200_000
    """Sample lines accumulated before a batch of arrays is emitted (bounds memory)."""
    read_chunk_bytes: int = 4 << 20
    """Bytes read from a file at a time."""
    detect_lines: int = 2_000
    """Lines looked at by ``fmt="auto"`` for OpenMetrics-only markers."""
    dcgm_prefix: str = DCGM_PREFIX
    """Metrics whose blank sentinels become NaN."""
    min_ts_s: float = 946_684_800.0
    """Earliest accepted sample timestamp, epoch s (2000-01-01T00:00:00Z)."""
    max_ts_s: float = 4_102_444_800.0
    """Latest accepted sample timestamp, epoch s (2100-01-01T00:00:00Z)."""


@dataclass
class Family:
    """Metadata of one metric family."""

    type: str = "unknown"
    help: str | None = None
    unit: str | None = None


_UNDECODABLE = re.compile("[\udc80-\udcff]")            # bytes that were not UTF-8 (surrogateescape)


def _number(token: str) -> float:
    """A sample value: decimal float, ``NaN``, ``+Inf``/``-Inf`` (any case). Raises ValueError."""
    if "_" in token:
        raise ValueError(token)
    return float(token)


def detect_format(lines: Iterable[str], source: str = "") -> Literal["openmetrics", "prometheus"]:
    """OpenMetrics when ``source`` ends in ``.om`` or an OpenMetrics-only marker shows up."""
    if source.endswith(".om"):
        return "openmetrics"
    for line in lines:
        if line.startswith("# EOF") or line.startswith("# UNIT "):
            return "openmetrics"
        if line.startswith("# TYPE "):
            parts = line.split()
            if len(parts) >= 4 and parts[3] in _OM_TYPES:
                return "openmetrics"
    return "prometheus"


@dataclass
class _Acc:
    key: SeriesKey
    ts: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)


class OpenMetricsParser:
    """Stateful line parser; :meth:`feed` yields batches, :meth:`finish` the rest."""

    def __init__(self, *, source: str, resolver: Resolver | None, report: IngestReport,
                 fmt: Literal["openmetrics", "prometheus"], arrival_ts: float | None = None,
                 config: OpenMetricsConfig | None = None) -> None:
        self.source, self.resolver, self.report, self.fmt = source, resolver, report, fmt
        self.arrival_ts = arrival_ts
        self.config = config or OpenMetricsConfig()
        self.ts_scale = 1.0 if fmt == "openmetrics" else 1e-3
        self.families: dict[str, Family] = {}
        self.keys: dict[str, SeriesKey | None] = {}       # raw series text -> key (None: skipped)
        self._acc: dict[str, _Acc] = {}
        self._pending = 0
        self.eof_line: int | None = None
        self.cut_line: int | None = None                  # a file's last line, without its newline
        self.stray_ts: list[float] = []                   # min and max of out-of-range timestamps
        self.samples = 0

    # -- per line -------------------------------------------------------------------------------
    def feed(self, lines: Iterable[tuple[int, str]]) -> Iterator[list[Batch]]:
        """Parse numbered lines; yields a batch each ``batch_lines`` samples."""
        for lineno, raw in lines:
            line = raw.rstrip("\r\n")
            if not line or line.isspace():
                continue
            if self.eof_line is not None:
                self._reject(lineno, "content after # EOF")
                continue
            if line[0] == "#":
                self._comment(lineno, line)
                continue
            if lineno == self.cut_line:
                self._reject(lineno, "truncated line")
                continue
            self._sample(lineno, line)
            if self._pending >= self.config.batch_lines:
                yield self.take()

    def _sample(self, lineno: int, line: str) -> None:
        found = self._series_of(lineno, line)
        if found is None:
            return
        series, key, rest = found
        parts = rest.split()
        if parts and rest[0] not in " \t":
            self._reject(lineno, "no space between series and value")
            return
        if "#" in parts:                                    # exemplar: ignored
            parts = parts[:parts.index("#")]
        try:
            value = _number(parts[0])
            if len(parts) == 1:
                if self.arrival_ts is None:
                    raise LookupError("sample without a timestamp and no arrival time")
                ts = self.arrival_ts
            elif len(parts) == 2:
                ts = _number(parts[1]) * self.ts_scale
                if not math.isfinite(ts):
                    raise ValueError(parts[1])
                if not self.config.min_ts_s <= ts <= self.config.max_ts_s:
                    self._stray(ts)
                    raise LookupError("timestamp out of range")
            else:
                raise ValueError(" ".join(parts[2:]))
        except (ValueError, IndexError, LookupError) as err:
            what = str(err) if isinstance(err, LookupError) else f"bad value or timestamp {rest.strip()[:60]!r}"
            self._reject(lineno, what)
            return
        acc = self._acc.get(series)
        if acc is None:
            acc = self._acc[series] = _Acc(key)
        acc.ts.append(ts)
        acc.values.append(value)
        self._pending += 1

    def _series_of(self, lineno: int, line: str) -> tuple[str, SeriesKey, str] | None:
        """(series text, key, rest of the line), or None (rejected or a skipped series)."""
        labels: dict[str, str] | None = None
        brace, space = line.find("{"), line.find(" ")
        if brace < 0 or 0 <= space < brace:
            if space < 0:
                self._reject(lineno, "sample without a value")
                return None
            series = line[:space]
        else:
            close = line.find("}", brace)
            series = line[:close + 1] if close >= 0 else line
            if close < 0 or series not in self.keys:        # cache miss: parse the label set
                try:
                    labels, end = parse_labels(line, brace)
                except LabelError as err:
                    self._reject(lineno, str(err))
                    return None
                series = line[:end]
        key = self.keys[series] if series in self.keys else self._new_series(lineno, series, labels)
        return None if key is None else (series, key, line[len(series):])

    def series_for_text(self, series: str, lineno: int = 0) -> SeriesKey | None:
        """The key of a raw series text (``name`` or ``name{...}``), cached; None for a ``_created``
        series or a text that does not parse (then rejected in the report)."""
        if series in self.keys:
            return self.keys[series]
        brace = series.find("{")
        labels: dict[str, str] = {}
        if brace >= 0:
            try:
                labels, end = parse_labels(series, brace)
            except LabelError as err:
                self._reject(lineno, str(err))
                return None
            if end != len(series):
                self._reject(lineno, "text after the label set")
                return None
        return self._new_series(lineno, series, labels)

    def _new_series(self, lineno: int, series: str, labels: dict[str, str] | None = None) -> SeriesKey | None:
        brace = series.find("{")
        name = series if brace < 0 else series[:brace]
        if not _NAME_RE.match(name):
            self._reject(lineno, f"bad metric name {name[:60]!r}")
            return None
        if _UNDECODABLE.search(series):
            self._reject(lineno, "invalid UTF-8 in the series")
            return None
        if labels is None:
            labels = parse_labels(series, brace)[0] if brace >= 0 else {}
        if name.endswith("_created"):
            fam = self.families.get(name[:-8])
            if fam is not None and fam.type in _CREATED_TYPES:
                self.keys[series] = None
                self.report.add("created")
                return None
        key = series_key(name, labels, self.resolver)
        self.keys[series] = key
        return key

    def _comment(self, lineno: int, line: str) -> None:
        parts = line.split(None, 3)
        if len(parts) < 2 or parts[1] not in ("TYPE", "HELP", "UNIT", "EOF"):
            return                                          # a plain comment: tolerated
        if parts[1] == "EOF":
            self.eof_line = lineno
            return
        if len(parts) < 3 or not _NAME_RE.match(parts[2]):
            self._reject(lineno, f"# {parts[1]} without a metric name")
            return
        fam = self.families.setdefault(parts[2], Family())
        text = parts[3] if len(parts) > 3 else ""
        if parts[1] == "TYPE":
            if text.strip() not in _TYPES:
                self._reject(lineno, f"unknown type {text.strip()[:30]!r}")
                return
            fam.type = text.strip()
        elif parts[1] == "HELP":
            fam.help = text
        else:
            fam.unit = text.strip()

    def _reject(self, lineno: int, what: str) -> None:
        self.report.reject(f"{self.source}:{lineno}: {what}")

    def _stray(self, ts: float) -> None:
        self.stray_ts = [min([ts, *self.stray_ts]), max([ts, *self.stray_ts])]

    def mark_cut(self, lineno: int) -> None:
        """Line ``lineno`` is the last of a file and has no newline (called by the reader)."""
        self.cut_line = lineno

    # -- output ---------------------------------------------------------------------------------
    def take(self) -> list[Batch]:
        """The accumulated samples as arrays, one entry per series; resets the accumulator."""
        out: list[Batch] = []
        for acc in self._acc.values():
            ts = np.array(acc.ts, dtype=np.float64)
            values = np.array(acc.values, dtype=np.float64)
            if acc.key.metric.startswith(self.config.dcgm_prefix):
                dcgm_blank_to_nan(values, DCGM_BLANK)
            out.append((acc.key, ts, values))
            self.samples += len(ts)
        self._acc.clear()
        self._pending = 0
        return out

    def finish(self) -> list[Batch]:
        """Emit what is left; an OpenMetrics input without ``# EOF`` is noted as a reject."""
        out = self.take()
        if self.fmt == "openmetrics" and self.eof_line is None and self.keys:
            self.report.reject(f"{self.source}: OpenMetrics input does not end in # EOF")
        return out


def parse_openmetrics(text: str | Iterable[str], *, source: str = "<text>",
                      resolver: Resolver | None = None, report: IngestReport | None = None,
                      fmt: Format = "auto", arrival_ts: float | None = None,
                      config: OpenMetricsConfig | None = None) -> Iterator[Batch]:
    """Parse exposition text (a string or lines) into ``(SeriesKey, ts, values)`` per series and batch.

    A live scrape passes ``arrival_ts=time.time()``; ``report`` collects loaded counts and rejects.
    """
    lines = text.split("\n") if isinstance(text, str) else list(text)
    rep = report if report is not None else IngestReport()
    kind = detect_format(lines[: (config or OpenMetricsConfig()).detect_lines], source) if fmt == "auto" else fmt
    parser = OpenMetricsParser(source=source, resolver=resolver, report=rep, fmt=kind,
                               arrival_ts=arrival_ts, config=config)
    for batch in parser.feed(enumerate(lines, 1)):
        yield from batch
    yield from parser.finish()
    rep.add("samples", parser.samples)
