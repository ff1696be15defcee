"""What each TSDB holds of a scenario's metrics.om, worked out from the file's lines alone (not by
suanli's parser), so the tests can say exactly where a TSDB necessarily differs from DuckDB:

- promtool (like any Prometheus TSDB appender) refuses a sample older than the last one appended to
  its series: an out-of-order line is dropped. DuckDB keeps it in its place in time.
- VictoriaMetrics drops NaN values at ingestion. DuckDB keeps NaN samples.
- A repeated (series, timestamp) is one sample in all three (the scenarios repeat equal values).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterator
from pathlib import Path

SeriesId = tuple[str, tuple[tuple[str, str], ...]]
_PAIR = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def _lines(om: Path) -> Iterator[tuple[SeriesId, str, float]]:
    with om.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip() or line.startswith("#"):
                continue
            body, _, ts = line.rstrip("\n").rpartition(" ")
            series, _, value = body.rpartition(" ")
            name, _, labels = series.partition("{")
            yield (name, tuple(sorted(_PAIR.findall(labels)))), value, float(ts)


def _is_blank(metric: str, v: float) -> bool:
    return metric.startswith("DCGM_") and (v >= 2.0**47 or 0x7FFFFFF0 <= v <= 0x7FFFFFFF)


@functools.cache
def expected_samples(om: Path, tsdb: str) -> dict[SeriesId, dict[float, float]]:
    """Per series, timestamp -> value as ``tsdb`` ("prometheus" or "victoriametrics") keeps them,
    DCGM blanks already NaN (as every suanli store reads them)."""
    out: dict[SeriesId, dict[float, float]] = {}
    newest: dict[SeriesId, float] = {}
    for sid, text, ts in _lines(om):
        value = float(text)
        if tsdb == "prometheus" and ts < newest.get(sid, -math.inf):
            continue
        if tsdb == "victoriametrics" and math.isnan(value):
            continue
        newest[sid] = max(ts, newest.get(sid, -math.inf))
        out.setdefault(sid, {})[ts] = math.nan if _is_blank(sid[0], value) else value
    return out


@functools.cache
def dropped(om: Path, tsdb: str) -> set[SeriesId]:
    """Series of which ``tsdb`` keeps fewer samples than the file has distinct timestamps."""
    full: dict[SeriesId, set[float]] = {}
    for sid, _, ts in _lines(om):
        full.setdefault(sid, set()).add(ts)
    kept = expected_samples(om, tsdb)
    return {sid for sid, stamps in full.items() if len(kept.get(sid, {})) < len(stamps)}
