"""``PromStore``: the read side of :class:`suanli.store.api.Store` over a Prometheus-compatible TSDB.

Metrics are read where they live (Prometheus, VictoriaMetrics, Mimir, Thanos) through the HTTP
query API; spans, events and ingest reports, which a TSDB does not hold, come from a secondary
store (by default an in-memory DuckDB store the caller loads from trace and log files).

Semantics are those of the DuckDB store (``suanli.store.duck.reads``): inclusive ranges, one value per
timestamp (the last the server returns), DCGM blank sentinels as NaN for ``DCGM_*`` metrics,
counter functions over finite samples with Prometheus' reset rule, ``rate`` at the later sample
times. Series resolve to canonical ids through the inventory exactly as ingest resolves them
(``suanli.ingest.resolve.series_key``). Reads are bounded by the store's ``window`` (the last
``default_lookback_s`` when none is given): a bound of None means the window's edge.

What runs as PromQL: series and metric discovery (``/api/v1/series``, label values), sample
counts per series (``count_over_time``), ``increase`` of a series without resets, NaN or DCGM
blanks in the range (``max_over_time - min_over_time``, which is exact for such a series), and the
search for the first and last sample (``suanli.store.promql.edges``). ``series`` and ``rate`` pull
raw samples (rates between consecutive samples at their own times have no PromQL form), as does
``increase`` for the series the pushed-down form cannot answer exactly.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from suanli.ingest.records import Event, IngestReport, SeriesKey
from suanli.ingest.resolve import series_key
from suanli.metric_catalog import DCGM_BLANK, dcgm_blank_to_nan
from suanli.store.api import F64, Series, SpanFrame
from suanli.store.counters import counter_increase, counter_rate
from suanli.store.duck import DuckStore
from suanli.store.promql import edges
from suanli.store.promql.client import PromClient, PromConfig, QueryStats, TooManySamples
from suanli.store.promql.fetch import (
    Ident,
    Raw,
    SeriesRef,
    count_samples,
    ident_of,
    pull_raw,
    range_ms,
    vector_by_ident,
)
from suanli.store.promql.selectors import best_label, re_alternation, selector

__all__ = ["PromStore"]

DCGM_PREFIX = "DCGM_"


def _lo_ms(t: float) -> int:
    return math.ceil(round(t * 1000.0, 2))


def _hi_ms(t: float) -> int:
    return math.floor(round(t * 1000.0, 2))


class PromStore:
    """``PromStore(PromConfig(url), inventory, window=(t0, t1), secondary=duck)``."""

    def __init__(self, config: PromConfig, inventory: Any | None = None, *,
                 window: tuple[float, float] | None = None, secondary: DuckStore | None = None,
                 client: PromClient | None = None) -> None:
        self.config = config
        self.client = client or PromClient(config)
        self.lookups = inventory.resolver if inventory is not None else None
        self.names = config.metric_map
        self.secondary = secondary if secondary is not None else DuckStore(None)
        if window is None:
            now = time.time()
            window = (now - config.default_lookback_s, now)
        self._extra = tuple(config.matchers)
        self.slide(window)

    def slide(self, window: tuple[float, float]) -> None:
        """Read ``window`` from now on (``serve``'s sliding window), forgetting what was discovered."""
        self.window = (float(window[0]), float(window[1]))
        self._win_ms = (_lo_ms(self.window[0]), _hi_ms(self.window[1]))
        self.refresh()

    def use_inventory(self, inventory: Any) -> None:
        """Resolve series through ``inventory`` from now on (the inventory file changed)."""
        self.lookups = inventory.resolver
        self.refresh()

    def refresh(self) -> None:
        """Forget what was discovered (series, counts, edges): the next reads ask again."""
        self._metrics: list[str] | None = None
        self._refs: dict[str, list[SeriesRef]] = {}
        self._keys: dict[tuple[str, Ident], SeriesKey] = {}
        self._counts: dict[tuple[str, int, int], dict[Ident, int]] = {}
        self._held: dict[str, dict[Ident, Raw]] = {}
        self._held_samples = 0
        self._range: tuple[float, float] | None = None
        self._range_known = False

    @property
    def query_stats(self) -> QueryStats:
        """Queries sent, bytes moved and raw samples pulled so far."""
        return self.client.stats

    def stats(self) -> dict[str, int]:
        """Series in the window (the TSDB's sample count is not asked: it would load every sample),
        and the secondary store's rows (spans, events)."""
        rows = self.secondary.stats()
        return {"series": len(self.series_keys()), "spans": rows.get("spans", 0), "events": rows.get("events", 0)}

    # -- discovery ----------------------------------------------------------------------------
    def metrics(self) -> list[str]:
        if self._metrics is None:
            match = "{" + ", ".join([f'__name__=~"{self.config.metric_regex}"', *self._extra]) + "}"
            self._metrics = self.names.canonical(self.client.label_values("__name__", match, *self._win_ms))
        return list(self._metrics)

    def _series_refs(self, metric: str) -> list[SeriesRef]:
        """The TSDB's series of ``metric`` (under its mapped name), keyed as suanli reads them."""
        if metric not in self._refs:
            source = self.names.source(metric).name
            found = self.client.series(selector(source, self._extra), *self._win_ms)
            refs = sorted({ident_of(s): SeriesRef(source, {k: v for k, v in s.items() if k != "__name__"},
                                                  ident_of(s)) for s in found}.values(), key=lambda r: r.ident)
            for ref in refs:
                self._keys[(source, ref.ident)] = series_key(metric, self.names.relabel(metric, ref.labels), self.lookups)
            self._refs[metric] = refs
        return self._refs[metric]

    def key_of(self, ref: SeriesRef) -> SeriesKey:
        return self._keys[(ref.metric, ref.ident)]

    def series_keys(self, metric: str | None = None) -> list[SeriesKey]:
        names = self.metrics() if metric is None else [metric]
        return [self.key_of(r) for m in names for r in self._series_refs(m)]

    def unresolved_series(self) -> list[SeriesKey]:
        return [k for k in self.series_keys() if k.entity_id is None]

    def _select(self, metric: str, entity_ids: Sequence[str] | None) -> list[SeriesRef]:
        refs = self._series_refs(metric)
        if entity_ids is None:
            return refs
        wanted = set(entity_ids)
        return [r for r in refs if self.key_of(r).entity_id in wanted]

    def _bounds(self, start: float | None, end: float | None) -> tuple[int, int] | None:
        lo = self._win_ms[0] if start is None else max(self._win_ms[0], _lo_ms(float(start)))
        hi = self._win_ms[1] if end is None else min(self._win_ms[1], _hi_ms(float(end)))
        return (lo, hi) if lo <= hi else None

    def _count(self, metric: str, lo: int, hi: int) -> dict[Ident, int]:
        if (metric, lo, hi) not in self._counts:
            self._counts[(metric, lo, hi)] = count_samples(self.client, self.names.source(metric).name, self._extra,
                                                           lo, hi)
        return self._counts[(metric, lo, hi)]

    # -- samples ------------------------------------------------------------------------------
    def _raw(self, metric: str, refs: Sequence[SeriesRef], lo: int, hi: int) -> list[tuple[SeriesKey, F64, F64]]:
        if not refs:
            return []
        raw = self._cached(metric, refs, lo, hi)
        scale = self.names.source(metric).scale
        out = []
        for ref in refs:
            got = raw.get(ref.ident)
            if got is None or not len(got[0]):
                continue
            ts, values = got[0] / 1000.0, got[1].copy()
            if metric.startswith(DCGM_PREFIX):
                dcgm_blank_to_nan(values, DCGM_BLANK)
            if scale != 1.0:
                values *= scale
            out.append((self.key_of(ref), ts, values))
        return out

    def _cached(self, metric: str, refs: Sequence[SeriesRef], lo: int, hi: int) -> dict[Ident, Raw]:
        """Raw samples of ``refs`` in ``[lo, hi]``. A whole metric is pulled once over the store's
        window and kept (up to ``cache_samples`` in all, oldest metric out first); later reads of
        it, of a part of its series or of its range, are cut from what is kept."""
        held = self._held.get(metric)
        if held is None and len(refs) == len(self._series_refs(metric)) and self.config.cache_samples > 0:
            wlo, whi = self._win_ms
            held = pull_raw(self.client, refs, refs, self._count(metric, wlo, whi), self._extra, wlo, whi)
            self._held[metric] = held
            self._held_samples += sum(len(t) for t, _ in held.values())
            while self._held_samples > self.config.cache_samples and len(self._held) > 1:
                gone = self._held.pop(next(iter(self._held)))
                self._held_samples -= sum(len(t) for t, _ in gone.values())
        if held is None:
            return pull_raw(self.client, refs, self._series_refs(metric), self._count(metric, lo, hi),
                            self._extra, lo, hi)
        out: dict[Ident, Raw] = {}
        for ref in refs:
            if ref.ident in held:
                ts, vals = held[ref.ident]
                a, b = np.searchsorted(ts, lo, "left"), np.searchsorted(ts, hi, "right")
                out[ref.ident] = (ts[a:b], vals[a:b])
        return out

    def series(self, metric: str, entity_ids: Sequence[str] | None = None,
               start: float | None = None, end: float | None = None) -> list[Series]:
        rng = self._bounds(start, end)
        if rng is None:
            return []
        return [Series(k, t, v) for k, t, v in self._raw(metric, self._select(metric, entity_ids), *rng)]

    def rate(self, metric: str, entity_ids: Sequence[str] | None = None,
             start: float | None = None, end: float | None = None) -> list[Series]:
        out = []
        for s in self.series(metric, entity_ids, start, end):
            ts, rate = counter_rate(s.ts, s.values)
            if len(ts):
                out.append(Series(s.key, ts, rate))
        return out

    def increase(self, metric: str, entity_ids: Sequence[str] | None = None,
                 start: float | None = None, end: float | None = None) -> dict[SeriesKey, float]:
        rng = self._bounds(start, end)
        if rng is None:
            return {}
        counts = self._count(metric, *rng)
        refs = [r for r in self._select(metric, entity_ids) if counts.get(r.ident, 0) >= 2]
        pushed = self._pushed_increase(metric, refs, *rng)
        out: dict[SeriesKey, float] = {}
        rest = []
        for ref in refs:
            value = pushed.get(ref.ident)
            if value is not None and math.isfinite(value):
                out[self.key_of(ref)] = value
            else:
                rest.append(ref)
        for key, _, values in self._raw(metric, rest, *rng):
            inc = counter_increase(values)
            if inc is not None:
                out[key] = inc
        return {self.key_of(r): out[self.key_of(r)] for r in refs if self.key_of(r) in out}

    def _pushed_increase(self, metric: str, refs: Sequence[SeriesRef], lo: int, hi: int) -> dict[Ident, float]:
        """``last - first`` of the series without resets, NaN/Inf (or DCGM blanks) in ``[lo, hi]``,
        as ``max_over_time - min_over_time`` (equal for a counter that never drops)."""
        d = range_ms(self.client.flavor(), lo, hi)
        if d <= 0 or not refs:
            return {}
        all_refs = self._series_refs(metric)
        label = best_label([r.labels for r in refs], [r.labels for r in all_refs])
        values = [r.labels[label] for r in refs] if label else []
        if len(re_alternation(values)) > self.config.max_query_chars:
            label, values = None, []                         # the whole metric; the others are ignored
        source = self.names.source(metric)
        sel = selector(source.name, self._extra, label, values)
        r = f"{sel}[{d}ms]"
        expr = (f"(max_over_time({r}) - min_over_time({r}) + 0 * sum_over_time({r})) "
                f"and resets({r}) == 0")
        if metric.startswith(DCGM_PREFIX):
            expr += f" and max_over_time({r}) < {DCGM_BLANK.int32_min!r}"
        try:
            _, result = self.client.query(expr, hi)
        except TooManySamples:
            return {}
        return {k: v * source.scale for k, v in vector_by_ident(result).items()}

    # -- time ---------------------------------------------------------------------------------
    def time_range(self) -> tuple[float, float] | None:
        """Earliest and latest sample in the window (to the ms), spans and events of the secondary store."""
        if not self._range_known:
            metrics = [self.names.source(m).name for m in self.metrics()]
            first = edges.first_sample_ms(self.client, metrics, self._extra, *self._win_ms)
            last = edges.last_sample_ms(self.client, metrics, self._extra, *self._win_ms)
            parts = [] if first is None or last is None else [(first / 1000.0, last / 1000.0)]
            other = self.secondary.time_range()
            if other is not None:
                parts.append(other)
            self._range = (min(p[0] for p in parts), max(p[1] for p in parts)) if parts else None
            self._range_known = True
        return self._range

    # -- what the TSDB does not hold: the secondary store -------------------------------------
    def spans(self, job_id: str | None = None, names: Sequence[str] | None = None,
              start: float | None = None, end: float | None = None,
              steps: tuple[int, int] | None = None, ids: bool = True, places: bool = True) -> SpanFrame:
        return self.secondary.spans(job_id, names, start, end, steps, ids, places)

    def span_attrs(self, job_id: str | None = None, name: str | None = None,
                   keys: Sequence[str] = ()) -> dict[str, npt.NDArray[np.object_]]:
        return self.secondary.span_attrs(job_id, name, keys)

    def rank_gpus(self, job_id: str | None = None, names: Sequence[str] | None = None,
                  start: float | None = None, end: float | None = None) -> dict[int, str | None]:
        return self.secondary.rank_gpus(job_id, names, start, end)

    def span_numbers(self, job_id: str | None = None, name: str | None = None,
                     keys: Sequence[str] = (), start: float | None = None, end: float | None = None
                     ) -> dict[str, F64]:
        return self.secondary.span_numbers(job_id, name, keys, start, end)

    def events(self, entity_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None,
               start: float | None = None, end: float | None = None) -> list[Event]:
        return self.secondary.events(entity_ids, kinds, start, end)

    def reports(self) -> list[tuple[str, IngestReport]]:
        return self.secondary.reports()

    def inventory_text(self) -> str | None:
        return self.secondary.inventory_text()

    def close(self) -> None:
        self.client.close()
        self.secondary.close()
