"""Vectorised PromQL arithmetic over many series at many evaluation times.

``SeriesBlock`` packs S series into one sorted array (series i's samples shifted by i * offset),
so one ``searchsorted`` finds, for every (series, time), the samples an instant or range selector
sees. The semantics are Prometheus' (v2.x/3.x engine):

- instant selector: the latest sample in ``(t - lookback, t]`` (lookback 5 m), absent otherwise;
- ``rate(x[w])``: samples in ``(t - w, t]``, at least two; increase with the counter-reset rule
  (a drop adds the previous value), extrapolated as ``extrapolatedRate`` does (to the window edges
  when the gap is under 1.1 average intervals, else by half an interval; never below zero for a
  counter), divided by ``w``. ``v2=True`` gives Prometheus 2.x edges (``[t - w, t]``) instead. A NaN first or last sample makes the rate NaN (so a comparison on
  it is false), as in Prometheus.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["SeriesBlock"]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


class SeriesBlock:
    """S series (each sorted by time) packed for vectorised lookups."""

    def __init__(self, ts_list: Sequence[F64], values_list: Sequence[F64]) -> None:
        self.n_series = len(ts_list)
        lengths = np.array([len(t) for t in ts_list], dtype=np.int64)
        self.starts: I64 = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) \
            if self.n_series else np.zeros(0, np.int64)
        self.ends: I64 = self.starts + lengths
        ts = np.concatenate(list(ts_list)) if self.n_series else np.zeros(0)
        self.values: F64 = (np.concatenate(list(values_list)) if self.n_series else np.zeros(0)).astype(np.float64)
        self.ts: F64 = ts.astype(np.float64)
        self.base = float(ts.min()) if ts.size else 0.0
        span = float(ts.max()) - self.base if ts.size else 0.0
        self.offset = float(math.ceil(span) + 10 * 86400 + 1)   # an integer: grid times stay exact
        row = np.repeat(np.arange(self.n_series, dtype=np.float64), lengths)
        self.keys: F64 = (self.ts - self.base) + row * self.offset
        self._corr: F64 | None = None

    def _q(self, times: F64) -> F64:
        rows = np.arange(self.n_series, dtype=np.float64)[:, None] * self.offset
        return rows + (np.asarray(times, dtype=np.float64)[None, :] - self.base)

    def instant(self, times: F64, lookback_s: float, v2: bool = False) -> F64:
        """[S, T] value of the latest sample within ``(t - lookback, t]`` (``[..]`` with ``v2``), NaN where none."""
        out = np.full((self.n_series, len(times)), np.nan)
        if self.ts.size == 0:
            return out
        q = self._q(times)
        idx = np.searchsorted(self.keys, q, side="right") - 1
        lo = self.starts[:, None]
        ok = idx >= lo
        safe = np.where(ok, idx, 0)
        edge = np.asarray(times)[None, :] - lookback_s
        ok &= (self.ts[safe] >= edge) if v2 else (self.ts[safe] > edge)
        out[ok] = self.values[safe[ok]]
        return out

    def _corrections(self) -> F64:
        """Cumulative counter-reset corrections: at sample i, the sum of previous values at drops."""
        if self._corr is None:
            v = self.values
            drop = np.zeros(v.size, dtype=np.float64)
            if v.size > 1:
                with np.errstate(invalid="ignore"):
                    is_drop = v[1:] < v[:-1]
                prev = np.where(is_drop, v[:-1], 0.0)
                drop[1:] = prev
                drop[self.starts[self.ends > self.starts]] = 0.0   # no drop across series borders
            self._corr = np.cumsum(drop)
        return self._corr

    def rate(self, times: F64, window_s: float, v2: bool = False) -> F64:
        """[S, T] per-second ``rate(x[window])`` as Prometheus 3 computes it (``v2``: as Prometheus
        2.x: window closed on the left, zero point applied before the extrapolation threshold);
        NaN where absent."""
        times = np.asarray(times, dtype=np.float64)
        out = np.full((self.n_series, len(times)), np.nan)
        if self.ts.size == 0:
            return out
        q = self._q(times)
        last = np.searchsorted(self.keys, q, side="right") - 1
        first = np.searchsorted(self.keys, q - window_s, side="left" if v2 else "right")
        ok = (last - first >= 1) & (first >= self.starts[:, None]) & (last < self.ends[:, None])
        f = np.where(ok, first, 0)
        la = np.where(ok, last, 0)
        corr = self._corrections()
        v, ts = self.values, self.ts
        result = (v[la] + corr[la]) - (v[f] + corr[f])
        t_end = times[None, :]
        t_start = t_end - window_s
        sampled = ts[la] - ts[f]
        n = (la - f).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            avg = sampled / n
            to_start = ts[f] - t_start
            to_end = t_end - ts[la]
            thr = avg * 1.1
            to_zero = np.where((result > 0) & (v[f] >= 0), sampled * (v[f] / result), np.inf)
            if v2:
                to_start = np.minimum(to_start, to_zero)
                to_start = np.where(to_start >= thr, avg / 2, to_start)
            else:
                to_start = np.minimum(np.where(to_start >= thr, avg / 2, to_start), to_zero)
            ext = sampled + to_start + np.where(to_end >= thr, avg / 2, to_end)
            val = result * (ext / sampled) / window_s
        out[ok] = val[ok]
        return out
