"""The earliest and latest sample time of a set of metrics inside a window, to the millisecond,
without pulling samples.

A query_range of ``count(count_over_time(m1[w])) or count(count_over_time(m2[w])) ...`` with step
``w`` says which of up to ``fanout`` buckets ``(t-w, t]`` hold a sample (each ``count`` is one
label-less element where its metric has samples, and ``or`` keeps the first present: the
matching works on one element per metric, not on every series); the search descends into the
first (or last) such bucket until buckets are 1 ms wide. A window of ``n`` ms costs about
``log(n) / log(fanout)`` queries per edge (4 for a day at the default fanout of 100).

Bucket ``(t-w, t]`` is ``[w ms]`` in VictoriaMetrics and ``[w-1 ms]`` in Prometheus (whose ranges
include their left end). Prometheus has no zero-width range, so a 1 ms bucket ``{t}`` is written
as the series counted in ``[t-2, t]`` but not in ``[t-2, t-1]``, or counted more often there.
Metrics are counted one by one (counting a ``{__name__=~...}`` selector would drop the names and
fail on series that differ only by name).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from suanli.store.promql.client import PromClient, TooManySamples
from suanli.store.promql.selectors import selector

__all__ = ["bucket_count", "first_sample_ms", "last_sample_ms"]


def bucket_count(sel: str, w: int, flavor: str) -> str:
    """Samples per series in the bucket ``(t-w, t]`` (w in ms) evaluated at ``t``."""
    if flavor == "victoriametrics":
        return f"count_over_time({sel}[{w}ms])"
    if w >= 2:
        return f"count_over_time({sel}[{w - 1}ms])"
    two, one = f"count_over_time({sel}[2ms])", f"count_over_time({sel}[1ms] offset 1ms)"
    return f"(({two} unless {one}) or ({two} - {one} > 0))"


def _present(client: PromClient, sels: Sequence[str], lo: int, hi: int, w: int) -> list[int]:
    """Ends ``t`` of the buckets ``(t-w, t]`` tiling ``[lo, hi]`` (the last may overhang) that hold a
    sample; one query per group of metrics that fits ``max_query_chars``."""
    flavor = client.flavor()
    k = math.ceil((hi - lo + 1) / w)
    ends: set[int] = set()
    for group in _groups([f"count({bucket_count(s, w, flavor)})" for s in sels], client.config.max_query_chars):
        result = client.query_range(" or ".join(group), lo - 1 + w, lo - 1 + w * k, w)
        for item in result:
            ends.update(round(float(p[0]) * 1000.0) for p in item.get("values") or [])
    return sorted(ends)


def _groups(exprs: Sequence[str], max_chars: int) -> list[list[str]]:
    out: list[list[str]] = [[]]
    size = 0
    for e in exprs:
        if out[-1] and size + len(e) + 4 > max_chars:
            out.append([])
            size = 0
        out[-1].append(e)
        size += len(e) + 4
    return out


def _search(client: PromClient, sels: Sequence[str], lo: int, hi: int, fanout: int, last: bool) -> int | None:
    """The edge in ``[lo, hi]``; a query the server refuses as too big is split by metrics, then by time."""
    w = max(1, math.ceil((hi - lo + 1) / fanout))
    try:
        ends = _present(client, sels, lo, hi, w)
    except TooManySamples:
        if len(sels) > 1:
            parts = (sels[: len(sels) // 2], sels[len(sels) // 2:])
            hits = [e for e in (_search(client, p, lo, hi, fanout, last) for p in parts) if e is not None]
            return (max(hits) if last else min(hits)) if hits else None
        if hi - lo < 1:
            raise
        mid = (lo + hi) // 2
        halves = [(mid + 1, hi), (lo, mid)] if last else [(lo, mid), (mid + 1, hi)]
        for a, b in halves:
            edge = _search(client, sels, a, b, fanout, last)
            if edge is not None:
                return edge
        return None
    for t in reversed(ends) if last else ends:
        a, b = max(lo, t - w + 1), min(hi, t)
        if a > b:
            continue
        if w == 1:
            return t
        inner = _search(client, sels, a, b, fanout, last)
        if inner is not None:
            return inner
    return None


def _selectors(metrics: Sequence[str], extra: Sequence[str]) -> list[str]:
    return [selector(m, extra) for m in metrics]


def first_sample_ms(client: PromClient, metrics: Sequence[str], extra: Sequence[str], lo: int, hi: int,
                    fanout: int = 100) -> int | None:
    """Time (ms) of the earliest sample of ``metrics`` in ``[lo, hi]``; None when there is none."""
    if not metrics or hi < lo:
        return None
    return _search(client, _selectors(metrics, extra), lo, hi, fanout, last=False)


def last_sample_ms(client: PromClient, metrics: Sequence[str], extra: Sequence[str], lo: int, hi: int,
                   fanout: int = 100) -> int | None:
    """Time (ms) of the latest sample of ``metrics`` in ``[lo, hi]``; None when there is none."""
    if not metrics or hi < lo:
        return None
    return _search(client, _selectors(metrics, extra), lo, hi, fanout, last=True)
