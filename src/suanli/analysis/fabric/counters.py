"""Fabric counters: CRC error ratio per switch port, pre-FEC BER (switch and NIC side), RDMA
retransmits, InfiniBand symbol errors and link-downs per NIC, and NIC series that stop.

Every increase is judged by :func:`suanli.analysis.changepoint.sudden_increase` on log10 of the
signal against the series' own early baseline, AND by an absolute floor (a change from 1e-15 to
1e-13 is sudden but harmless). Pure functions over (ts, values) arrays; the store adapter is in
:mod:`suanli.analysis.fabric`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from suanli.analysis.changepoint import ChangeConfig, ChangePoint, sudden_increase

__all__ = ["CounterAnomaly", "CounterConfig", "aligned_ratio", "detect_signal", "link_downs",
           "rolling_mean", "stopped_series"]

F64 = npt.NDArray[np.float64]


def _log_change(min_sigma: float, floor: float) -> ChangeConfig:
    return ChangeConfig(log10=True, min_sigma=min_sigma, floor=floor)


@dataclass(frozen=True)
class CounterConfig:
    """Thresholds of the fabric counter checks (each also needs a sudden increase)."""

    smooth_scrapes: int = 4
    """Error rates are trailing means over this many scrapes: CRC errors come in bursts, and a
    port that errs every other minute is as broken as one that errs all the time."""
    crc_change: ChangeConfig = field(default_factory=lambda: _log_change(0.25, 1e-12))
    """Change test on log10(CRC errors / packets); ratios under 1e-12 count as 1e-12."""
    min_crc_ratio: float = 1e-6
    """CRC error ratio after the change must reach this (healthy links: < 1e-9)."""
    ber_change: ChangeConfig = field(default_factory=lambda: _log_change(0.2, 1e-16))
    """Change test on log10(pre-FEC BER)."""
    min_ber_decades: float = 1.0
    """A pre-FEC BER rise counts from this many orders of magnitude (see also
    ``FindingConfig.optical_decades``; a bad-CRC port's BER rose 0.8 decades in a public scenario)."""
    min_ber: float = 1e-10
    """... and at least this BER after the change (healthy HDR/NDR optics: 1e-13 .. 1e-11; the
    seed's degrading optic: 1e-12 -> 5e-10)."""
    rate_change: ChangeConfig = field(default_factory=lambda: _log_change(0.25, 1e-3))
    """Change test on log10 of per-second error rates (retransmits, symbol errors)."""
    min_retransmit_rate: float = 1.0
    """RDMA retransmits per second after the change, to count as retransmitting."""
    min_symbol_error_rate: float = 0.05
    """IB symbol errors per second after the change, to count."""
    min_pcie_errors: float = 20.0
    """PCIe AER errors + replays on a GPU over the window above which its NIC's retransmits and
    its slowness are its own hardware fault (health's pcie_riser), not the fabric's (healthy: 0-2)."""
    stale_after_scrapes: float = 4.0
    """A series stopped when its last sample is this many scrape intervals before the end..."""
    min_stale_s: float = 60.0
    """... and at least this many seconds before it."""


@dataclass(frozen=True)
class CounterAnomaly:
    """One signal that rose at one entity."""

    entity_kind: str
    entity_id: str
    signal: str          # crc_ratio | pre_fec_ber | rdma_retransmits | symbol_errors | link_downed | stopped
    onset_s: float
    detected_at_s: float
    before: float
    after: float


def rolling_mean(values: F64, k: int) -> F64:
    """Trailing mean over k samples, NaN samples skipped (NaN where all k are NaN)."""
    if k <= 1 or len(values) == 0:
        return values
    ok = np.isfinite(values)
    csum = np.cumsum(np.where(ok, values, 0.0))
    ccnt = np.cumsum(ok)
    s = csum - np.concatenate([np.zeros(k), csum[:-k]])[: len(values)]
    c = ccnt - np.concatenate([np.zeros(k), ccnt[:-k]])[: len(values)]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(c > 0, s / np.maximum(c, 1), np.nan)


def aligned_ratio(num_ts: F64, num: F64, den_ts: F64, den: F64) -> tuple[F64, F64]:
    """num/den at the numerator's times (den interpolated; NaN outside its range or when <= 0)."""
    ok = np.isfinite(den) & np.isfinite(den_ts)
    if ok.sum() < 2 or len(num_ts) == 0:
        return num_ts, np.full(len(num_ts), np.nan)
    order = np.argsort(den_ts[ok])
    dts, dv = den_ts[ok][order], den[ok][order]
    d = np.interp(num_ts, dts, dv, left=np.nan, right=np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(d > 0, num / d, np.nan)
    return num_ts, r


def detect_signal(kind: str, entity: str, signal: str, ts: F64, values: F64,
                  change: ChangeConfig, min_after: float, min_decades: float = 0.0) -> CounterAnomaly | None:
    """A sudden increase to at least ``min_after`` (and ``min_decades`` orders up), or None."""
    cp: ChangePoint | None = sudden_increase(ts, values, change)
    if cp is None or cp.after < min_after:
        return None
    if min_decades > 0 and np.log10(max(cp.after, 1e-300) / max(cp.before, change.floor)) < min_decades:
        return None
    return CounterAnomaly(kind, entity, signal, cp.onset_s, cp.detected_at_s, cp.before, cp.after)


def link_downs(kind: str, entity: str, ts: F64, values: F64) -> CounterAnomaly | None:
    """A link-down counter that went up between two samples. Drops (exporter restarts) and the
    value right after them are ignored, so a restarted exporter showing an old count is no event."""
    ok = np.isfinite(ts) & np.isfinite(values)
    t, v = ts[ok], values[ok]
    order = np.argsort(t, kind="stable")
    t, v = t[order], v[order]
    if len(v) < 2:
        return None
    dv = np.diff(v)
    up = np.flatnonzero(dv > 0)
    if len(up) == 0:
        return None
    i = int(up[0]) + 1
    return CounterAnomaly(kind, entity, "link_downed", float(t[i - 1]), float(t[i]), float(v[i - 1]),
                          float(v[i]))


def stopped_series(last_ts: dict[str, float], scrape_s: float, end_s: float,
                   config: CounterConfig = CounterConfig()) -> dict[str, float]:
    """Entities whose series end well before ``end_s``: entity -> last sample time."""
    gap = max(config.stale_after_scrapes * scrape_s, config.min_stale_s)
    return {e: t for e, t in last_ts.items() if t < end_s - gap}
