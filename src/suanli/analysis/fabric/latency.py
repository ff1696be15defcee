"""The node-to-node one-way latency matrix from ``suanli_link_latency_seconds{src,dst}`` probes.

Probes are sparse (a large cluster samples pairs), so the matrix is kept as probed pairs x
windows, never as a dense N x N x W cube. Per pair the baseline is robust: the
``baseline_quantile`` of its window medians (a fault covering less than 1 - q of the range does
not move it) with a MAD scale. A pair is anomalous in a window when its median is both
``min_ratio`` times its baseline and ``min_z`` robust sigmas above it; anomalous overall when that
holds in ``min_windows`` windows and in most windows after the first one.

Classification (:func:`classify`): a node whose row AND column are mostly anomalous is node-level;
a pair anomalous one way whose reverse is probed and healthy is directional (the mark of an
optical module); the rest are link-level and go to tomography.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["LatencyClasses", "LatencyConfig", "LatencyMatrix", "PairAnomalies", "build_matrix",
           "classify", "detect"]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class LatencyConfig:
    """Thresholds of the latency matrix analysis."""

    window_s: float = 60.0
    """Width of one matrix window; the per-pair value in a window is the median of its probes."""
    baseline_quantile: float = 0.25
    """Per-pair baseline = this quantile of the pair's window medians."""
    rel_sigma: float = 0.05
    """Floor on a pair's scale as a share of its baseline (probe jitter is a few per cent)."""
    min_ratio: float = 1.5
    """A window is anomalous only when its latency is at least this multiple of the baseline."""
    min_z: float = 6.0
    """... and at least this many robust sigmas above it."""
    min_windows: int = 2
    """A pair is anomalous when at least this many windows are."""
    min_share_after_onset: float = 0.5
    """... and at least this share of the windows from its first anomalous one on."""
    node_fraction: float = 0.5
    """Node-level: at least this share of the node's probed row AND column pairs are anomalous."""
    min_node_pairs: int = 2
    """Node-level needs at least this many anomalous pairs in its row and in its column."""


@dataclass(frozen=True)
class LatencyMatrix:
    """Probed pairs x windows. ``latency_s[p, w]`` is NaN where pair p had no probe in window w."""

    nodes: tuple[str, ...]
    src: I64
    dst: I64
    window_start_s: F64
    latency_s: F64

    def dense(self, values: F64) -> F64:
        """Per-pair values (len = pairs) as an N x N matrix, NaN where not probed."""
        n = len(self.nodes)
        out = np.full((n, n), np.nan)
        out[self.src, self.dst] = values
        return out


@dataclass(frozen=True)
class PairAnomalies:
    """Per probed pair: baseline, late level, ratio, anomalous flag and onset (NaN if none)."""

    baseline_s: F64
    level_s: F64
    ratio: F64
    anomalous: npt.NDArray[np.bool_]
    onset_s: F64


@dataclass(frozen=True)
class LatencyClasses:
    """Anomalous pairs sorted into node-level, directional and link-level (pair indices)."""

    node_level: dict[str, str]
    """node id -> "both" | "tx" | "rx" (row and column, row only, column only)."""
    directional: I64
    link_level: I64


def build_matrix(nodes: tuple[str, ...], src: I64, dst: I64, ts: F64, latency_s: F64,
                 window_s: float, start_s: float | None = None) -> LatencyMatrix:
    """Window medians per pair from flat probe samples (node indices into ``nodes``)."""
    n = len(nodes)
    ok = np.isfinite(ts) & np.isfinite(latency_s) & (latency_s > 0) & (src != dst)
    src, dst, ts, lat = src[ok], dst[ok], ts[ok], latency_s[ok]
    if len(ts) == 0:
        e = np.zeros(0, dtype=np.int64)
        return LatencyMatrix(nodes, e, e, np.zeros(0), np.zeros((0, 0)))
    t0 = float(ts.min()) if start_s is None else start_s
    win = np.floor((ts - t0) / window_s).astype(np.int64)
    win = np.maximum(win, 0)
    n_w = int(win.max()) + 1
    pair_key = src.astype(np.int64) * n + dst.astype(np.int64)
    uniq, pair_idx = np.unique(pair_key, return_inverse=True)
    cell = pair_idx * n_w + win
    order = np.lexsort((lat, cell))
    cell_s, lat_s = cell[order], lat[order]
    starts = np.flatnonzero(np.r_[True, cell_s[1:] != cell_s[:-1]])
    counts = np.diff(np.r_[starts, len(cell_s)])
    lo = lat_s[starts + (counts - 1) // 2]
    hi = lat_s[starts + counts // 2]
    mat = np.full(len(uniq) * n_w, np.nan)
    mat[cell_s[starts]] = (lo + hi) / 2.0
    return LatencyMatrix(nodes, (uniq // n).astype(np.int64), (uniq % n).astype(np.int64),
                         t0 + window_s * np.arange(n_w, dtype=np.float64), mat.reshape(len(uniq), n_w))


def detect(m: LatencyMatrix, config: LatencyConfig = LatencyConfig()) -> PairAnomalies:
    """Robust per-pair baselines and anomaly flags (vectorised over pairs)."""
    lat = m.latency_s
    n_p = lat.shape[0]
    if n_p == 0 or lat.shape[1] == 0:
        z = np.zeros(n_p)
        return PairAnomalies(z, z, z, np.zeros(n_p, dtype=bool), np.full(n_p, np.nan))
    has = np.isfinite(lat).sum(axis=1) > 0
    safe = np.where(has[:, None], lat, 0.0)
    base = np.nanquantile(safe, config.baseline_quantile, axis=1)
    low = np.where(safe <= np.nanmedian(safe, axis=1)[:, None], safe, np.nan)
    mad = np.nanmedian(np.abs(low - base[:, None]), axis=1)
    sigma = np.maximum(1.4826 * np.nan_to_num(mad), config.rel_sigma * base)
    sigma = np.maximum(sigma, 1e-30)
    with np.errstate(invalid="ignore", divide="ignore"):
        bad = (lat >= config.min_ratio * base[:, None]) & ((lat - base[:, None]) >= config.min_z * sigma[:, None])
    probed = np.isfinite(lat)
    n_bad = bad.sum(axis=1)
    first = np.where(n_bad > 0, np.argmax(bad, axis=1), lat.shape[1])
    after = probed & (np.arange(lat.shape[1])[None, :] >= first[:, None])
    share = n_bad / np.maximum(after.sum(axis=1), 1)
    anomalous = has & (n_bad >= config.min_windows) & (share >= config.min_share_after_onset)
    level = np.full(n_p, np.nan)
    rows = np.flatnonzero(anomalous)
    if len(rows):
        sub = np.where(bad[rows], lat[rows], np.nan)
        level[rows] = np.nanmedian(sub, axis=1)
    normal = np.flatnonzero(has & ~anomalous)
    if len(normal):
        level[normal] = np.nanmedian(np.where(probed[normal], lat[normal], np.nan), axis=1)
    onset = np.where(anomalous, m.window_start_s[np.minimum(first, lat.shape[1] - 1)], np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = level / base
    return PairAnomalies(base, level, ratio, anomalous, onset)


def classify(m: LatencyMatrix, a: PairAnomalies, config: LatencyConfig = LatencyConfig()) -> LatencyClasses:
    """Node-level rows/columns first, then one-way pairs, the rest link-level."""
    n = len(m.nodes)
    probed_row = np.bincount(m.src, minlength=n)
    probed_col = np.bincount(m.dst, minlength=n)
    bad_row = np.bincount(m.src[a.anomalous], minlength=n)
    bad_col = np.bincount(m.dst[a.anomalous], minlength=n)
    row_hit = (bad_row >= config.min_node_pairs) & (bad_row >= config.node_fraction * np.maximum(probed_row, 1))
    col_hit = (bad_col >= config.min_node_pairs) & (bad_col >= config.node_fraction * np.maximum(probed_col, 1))
    node_level: dict[str, str] = {}
    for i in np.flatnonzero(row_hit | col_hit):
        node_level[m.nodes[i]] = "both" if row_hit[i] and col_hit[i] else ("tx" if row_hit[i] else "rx")
    in_node = np.zeros(n, dtype=bool)
    in_node[[m.nodes.index(x) for x in node_level]] = True
    rest = a.anomalous & ~in_node[m.src] & ~in_node[m.dst]
    key = m.src * n + m.dst
    rev_key = m.dst * n + m.src
    rev_healthy = np.zeros(len(key), dtype=bool)
    if len(key):
        order = np.argsort(key)
        pos = np.minimum(np.searchsorted(key[order], rev_key), len(key) - 1)
        rev_idx = order[pos]
        rev_found = key[rev_idx] == rev_key
        rev_healthy = rev_found & ~a.anomalous[rev_idx] & np.isfinite(a.baseline_s[rev_idx])
    directional = np.flatnonzero(rest & rev_healthy)
    link_level = np.flatnonzero(rest & ~rev_healthy)
    return LatencyClasses(node_level, directional.astype(np.int64), link_level.astype(np.int64))
