"""The queries behind :class:`~suanli.store.promql.store.PromStore`: series discovery, sample counts,
raw samples split to the limits, and PromQL functions over a range.

Ranges are inclusive milliseconds ``[lo, hi]`` as in the DuckDB store. A range selector ``s[d]``
evaluated at ``t`` covers ``[t-d, t]`` in Prometheus 2.x (and Mimir, Thanos) and ``(t-d, t]`` in
VictoriaMetrics: :func:`range_ms` gives the ``d`` that covers exactly ``[lo, hi]``.

Raw samples come from instant queries of a range selector (``metric{...}[d]``, which every
Prometheus-compatible server answers with its stored samples, not with a resampled grid). A
metric's series are split into batches (by the label that picks them out best) and the range into
chunks so that one query loads at most ``max_samples`` samples and returns at most
``max_points_per_series`` per series, from per-series sample counts (``count_over_time``) asked
first; a chunk the server still refuses is halved.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from suanli.store.promql.client import PromClient, PromConfig, TooManySamples
from suanli.store.promql.edges import bucket_count
from suanli.store.promql.selectors import best_label, re_alternation, selector

__all__ = ["Ident", "Raw", "SeriesRef", "count_samples", "ident_of", "pull_raw", "range_ms", "vector_by_ident"]

Ident = tuple[tuple[str, str], ...]
"""A series' labels without ``__name__``, sorted."""
Raw = tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]
"""(timestamps in ms, values) of one series, sorted, one value per timestamp (the last returned)."""


@dataclass(frozen=True)
class SeriesRef:
    metric: str
    labels: Mapping[str, str]
    ident: Ident


def ident_of(labels: Mapping[str, str]) -> Ident:
    return tuple(sorted((k, v) for k, v in labels.items() if k != "__name__"))


def range_ms(flavor: str, lo: int, hi: int) -> int:
    """The range ``d`` (ms) that, evaluated at ``hi``, covers exactly ``[lo, hi]`` (0 = impossible:
    Prometheus has no empty-width range, the caller pulls raw samples instead)."""
    return hi - lo + 1 if flavor == "victoriametrics" else hi - lo


def vector_by_ident(result: Sequence[Mapping[str, object]]) -> dict[Ident, float]:
    """An instant vector's values by series."""
    out: dict[Ident, float] = {}
    for item in result:
        labels = item.get("metric") or {}
        value = item.get("value") or [0, "NaN"]
        out[ident_of(labels)] = float(value[1])  # type: ignore[index, arg-type]
    return out


def count_samples(client: PromClient, metric: str, extra: Sequence[str], lo: int, hi: int) -> dict[Ident, int]:
    """Samples per series of ``metric`` in ``[lo, hi]`` (``count_over_time``), halving the range
    when the server refuses it."""
    d = range_ms(client.flavor(), lo, hi)
    if d <= 0:
        return {i: len(ts) for i, (ts, _) in _raw_query(client, selector(metric, extra), lo, hi).items()}
    try:
        _, result = client.query(f"count_over_time({selector(metric, extra)}[{d}ms])", hi)
    except TooManySamples:
        if hi - lo < 2:
            raise
        mid = (lo + hi) // 2
        out = count_samples(client, metric, extra, lo, mid)
        for k, n in count_samples(client, metric, extra, mid + 1, hi).items():
            out[k] = out.get(k, 0) + n
        return out
    return {k: int(v) for k, v in vector_by_ident(result).items()}


def _decode(result: Sequence[Mapping[str, object]], lo: int) -> Iterator[tuple[Ident, npt.NDArray[np.int64],
                                                                              npt.NDArray[np.float64]]]:
    for item in result:
        values = item.get("values") or []
        assert isinstance(values, list)
        ts = np.rint(np.fromiter((p[0] for p in values), np.float64, len(values)) * 1000.0).astype(np.int64)
        vals = np.array([p[1] for p in values], dtype=np.float64) if values else np.empty(0)
        keep = ts >= lo
        yield ident_of(item.get("metric") or {}), ts[keep], vals[keep]  # type: ignore[arg-type]


def _raw_query(client: PromClient, sel: str, lo: int, hi: int) -> dict[Ident, Raw]:
    """Raw samples of one selector in ``[lo, hi]``; the range asked is one ms wider than needed on
    Prometheus (left-closed) and the extra sample is dropped here, so one query fits both."""
    try:
        _, result = client.query(f"{sel}[{hi - lo + 1}ms]", hi)
    except TooManySamples:
        if hi <= lo:
            raise
        mid = (lo + hi) // 2
        return _merge([_raw_query(client, sel, lo, mid), _raw_query(client, sel, mid + 1, hi)])
    out: dict[Ident, Raw] = {}
    for ident, ts, vals in _decode(result, lo):
        client.stats.samples += len(ts)
        out[ident] = (ts, vals)
    return out


def _merge(parts: Sequence[Mapping[Ident, Raw]]) -> dict[Ident, Raw]:
    """Concatenate per-series pieces; sort by time; per timestamp keep the last value returned."""
    pieces: dict[Ident, list[Raw]] = {}
    for part in parts:
        for ident, raw in part.items():
            pieces.setdefault(ident, []).append(raw)
    out: dict[Ident, Raw] = {}
    for ident, raws in pieces.items():
        ts = np.concatenate([r[0] for r in raws])
        vals = np.concatenate([r[1] for r in raws])
        order = np.argsort(ts, kind="stable")
        ts, vals = ts[order], vals[order]
        last = np.append(ts[1:] != ts[:-1], True) if len(ts) else np.empty(0, dtype=bool)
        out[ident] = (ts[last], vals[last])
    return out


@dataclass
class _Batch:
    label: str | None
    values: list[str]
    series: int
    samples: int
    chars: int


def _batches(wanted: Sequence[SeriesRef], all_series: Sequence[SeriesRef], counts: Mapping[Ident, int],
             cfg: PromConfig) -> list[_Batch]:
    """Batches of label values (label None = the whole metric) within the series, sample and
    query-length limits."""
    total = sum(counts.get(s.ident, 0) for s in all_series)
    label = best_label([s.labels for s in wanted], [s.labels for s in all_series])
    whole = _Batch(None, [], len(all_series), total, 0)
    if label is None and total <= cfg.max_samples and len(all_series) <= cfg.max_series_per_query:
        return [whole]
    label = label or _splitting_label(wanted)
    if label is None:
        return [whole]
    need = {s.labels[label] for s in wanted}
    groups: dict[str, list[SeriesRef]] = {}
    for s in all_series:
        if s.labels.get(label) in need:
            groups.setdefault(s.labels[label], []).append(s)
    out: list[_Batch] = []
    for value in sorted(groups):
        n, chars = len(groups[value]), len(re_alternation([value])) + 1
        samples = sum(counts.get(s.ident, 0) for s in groups[value])
        last = out[-1] if out else None
        if (last is not None and last.series + n <= cfg.max_series_per_query and last.samples + samples
                <= cfg.max_samples and last.chars + chars <= cfg.max_query_chars):
            last.values.append(value)
            last.series, last.samples, last.chars = last.series + n, last.samples + samples, last.chars + chars
        else:
            out.append(_Batch(label, [value], n, samples, chars))
    return out


def _splitting_label(series: Sequence[SeriesRef]) -> str | None:
    """The label with the most distinct values (to split a whole metric into batches)."""
    names = {k for s in series for k in s.labels}
    scored = [(len({s.labels.get(n) for s in series}), n) for n in names
              if all(n in s.labels for s in series)]
    scored = [x for x in scored if x[0] > 1]
    return max(scored)[1] if scored else None


def pull_raw(client: PromClient, wanted: Sequence[SeriesRef], all_series: Sequence[SeriesRef],
             counts: Mapping[Ident, int], extra: Sequence[str], lo: int, hi: int) -> dict[Ident, Raw]:
    """Raw samples of the ``wanted`` series (all of one metric) in ``[lo, hi]``."""
    wanted = [s for s in wanted if counts.get(s.ident, 0) > 0]
    if not wanted:
        return {}
    cfg = client.config
    metric = wanted[0].metric
    keep = {s.ident for s in wanted}
    parts: list[dict[Ident, Raw]] = []
    for batch in _batches(wanted, all_series, counts, cfg):
        label, values, samples = batch.label, batch.values, batch.samples
        sel = selector(metric, extra, label, values)
        chosen = set(values)
        in_batch = [s for s in all_series if label is None or s.labels.get(label) in chosen]
        densest = max((counts.get(s.ident, 0) for s in in_batch), default=0)
        if densest <= cfg.max_points_per_series and samples <= cfg.max_samples:
            chunks = [(lo, hi)]
        else:
            chunks = time_chunks(client, sel, lo, hi, max(densest / cfg.max_points_per_series,
                                                          samples / cfg.max_samples))
        for a, b in chunks:
            got = _raw_query(client, sel, a, b)
            parts.append({k: v for k, v in got.items() if k in keep})
    return _merge(parts)


def time_chunks(client: PromClient, sel: str, lo: int, hi: int, needed: float) -> list[tuple[int, int]]:
    """Consecutive ranges covering ``[lo, hi]`` in each of which the selector's series hold at most
    ``max_points_per_series`` samples each and ``max_samples`` in all, from exact counts per series
    in fine buckets (one query_range of ``count_over_time``, about 4 buckets per chunk needed).
    A bucket too full on its own is split again the same way."""
    cfg = client.config
    n_fine = int(min(cfg.max_points_per_series, hi - lo + 1, max(16, 4 * math.ceil(needed))))
    w = math.ceil((hi - lo + 1) / n_fine)
    k = math.ceil((hi - lo + 1) / w)
    result = client.query_range(bucket_count(sel, w, client.flavor()), lo - 1 + w, lo - 1 + w * k, w)
    per_bucket = np.zeros((len(result), k), dtype=np.int64)
    for i, item in enumerate(result):
        for t, v in item.get("values") or []:
            per_bucket[i, (round(float(t) * 1000.0) - (lo - 1 + w)) // w] = int(float(v))
    chunks: list[tuple[int, int]] = []
    first, load = 0, np.zeros(len(result), dtype=np.int64)
    for j in range(k + 1):
        col = per_bucket[:, j] if j < k else None
        full = col is not None and (bool((load + col > cfg.max_points_per_series).any())
                                    or int(load.sum() + col.sum()) > cfg.max_samples)
        if (col is None or full) and j > first:
            chunks.append((lo + first * w, min(hi, lo - 1 + j * w)))
            first, load = j, np.zeros(len(result), dtype=np.int64)
        if col is None:
            break
        if bool((col > cfg.max_points_per_series).any()) or int(col.sum()) > cfg.max_samples:
            a, b = lo + j * w, min(hi, lo - 1 + (j + 1) * w)
            chunks.extend(time_chunks(client, sel, a, b, needed) if b > a else [(a, b)])
            first = j + 1
            continue
        load = load + col
    return chunks
