"""Fabric counters: CRC error ratio per switch port, pre-FEC BER (switch and NIC side), RDMA
retransmits, InfiniBand symbol errors and link-downs per NIC, and NIC series that stop.

CRC errors and pre-FEC BER are judged as *episodes* (:func:`episode`): a run of scrapes in which
the signal is at a level that matters, wherever in the window it lies. That holds for a step, a
ramp, a fault that rises and recovers inside the window and one already running when the window
opens, and it needs no clean baseline. A CRC episode needs both an error ratio against the port's
own traffic (``min_crc_ratio``) and an error rate that costs the collective crossing the port a
share of its time (``retransmit_cost_s`` x errors/s >= ``min_time_share``): a few errors per hour
on a busy port are neither, and on an idle port (a few hundred packets per second of management
traffic) a lone error gives a large ratio but costs nothing. A lower rate (``min_weak_crc_per_s``)
is kept as a *weak* episode: a finding only when the jobs crossing the port show the effect
(:mod:`suanli.analysis.fabric.findings`). A port that carries a multi-node job's collective is also
judged against the ports carrying the same collective on the same rail at the same instants
(:mod:`suanli.analysis.fabric.peers`): its CRC ratio must be ``peer_factor`` times theirs, so
errors every port of the collective counts alike are no one port's fault. A BER episode is a level ``min_ber_decades`` above the
port's own early level or above the median of every port (peers: a fault already running has no
own baseline).

Retransmits and symbol errors are judged by :func:`suanli.analysis.changepoint.sudden_increase` on
log10 of the rate against the series' own early baseline, AND by an absolute floor. Pure functions
over (ts, values) arrays; the store adapter is in :mod:`suanli.analysis.fabric`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from suanli.analysis.changepoint import ChangeConfig, ChangePoint, sudden_increase
from suanli.analysis.median import median

__all__ = ["CounterAnomaly", "CounterConfig", "aligned_ratio", "ber_episode", "crc_episode", "detect_signal",
           "episode", "link_downs", "rolling_mean", "stopped_series"]

F64 = npt.NDArray[np.float64]


def _log_change(min_sigma: float, floor: float) -> ChangeConfig:
    return ChangeConfig(log10=True, min_sigma=min_sigma, floor=floor)


@dataclass(frozen=True)
class CounterConfig:
    """Thresholds of the fabric counter checks (each also needs a sudden increase)."""

    smooth_scrapes: int = 4
    """Error rates are trailing means over this many scrapes: CRC errors come in bursts, and a
    port that errs every other minute is as broken as one that errs all the time."""
    min_crc_ratio: float = 1e-6
    """CRC errors per packet on the port's own traffic (healthy links: < 1e-9; a bad cable: 1e-4)."""
    retransmit_cost_s: float = 1e-3
    """Time one lost packet costs the flow that crosses the port (a transport retransmission:
    RoCE go-back-N or an InfiniBand retry, about a millisecond)."""
    min_time_share: float = 1e-3
    """errors/s x ``retransmit_cost_s`` from which a CRC episode is strong on its own: 1 error/s
    (3,600/h) costs the crossing collective 0.1 % of its time; healthy ports count 0-20/h."""
    min_weak_crc_per_s: float = 0.05
    """From this rate (180/h, well above a background of a few per hour) an episode is weak: a
    finding only when the jobs crossing the port slow (retransmits, latency)."""
    peer_factor: float = 10.0
    """A port's CRC ratio, and a NIC's symbol error rate, must be at least this many times the
    median of its collective peers' at the same instants (where it has peers): clearly worse than
    the ports / NICs carrying the same job's collective on the same rail, not only bad against its
    own traffic or its own past."""
    min_episode_scrapes: int = 6
    """An episode lasts at least this many scrapes: longer than ``smooth_scrapes``, so one burst
    (an exporter reading an old count once) cannot make one."""
    min_ber_decades: float = 1.5
    """A pre-FEC BER episode sits this many orders of magnitude above the port's own early level
    and above the median of every port (a bad-CRC port's BER rose 0.8 decades in a public scenario)."""
    min_ber: float = 1e-10
    """... and at least this BER (healthy HDR/NDR optics: 1e-13 .. 1e-11; the seed's degrading
    optic: 1e-12 -> 5e-10)."""
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
    weak: bool = False
    """A CRC episode under the strong rate: a finding only with an effect on the crossing jobs."""
    errors_per_s: float = float("nan")
    """CRC errors per second in the episode (median)."""
    peer: float = float("nan")
    """The median CRC ratio of the port's collective peers in the episode (NaN: no peers)."""
    peers: int = 0
    """How many collective peers it was judged against."""


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
                  change: ChangeConfig, min_after: float) -> CounterAnomaly | None:
    """A sudden increase to at least ``min_after``, or None."""
    cp: ChangePoint | None = sudden_increase(ts, values, change)
    if cp is None or cp.after < min_after:
        return None
    return CounterAnomaly(kind, entity, signal, cp.onset_s, cp.detected_at_s, cp.before, cp.after)


def episode(bad: npt.NDArray[np.bool_], min_run: int) -> tuple[int, int] | None:
    """(first, last + 1) of the longest run of ``bad`` samples, if it has ``min_run`` of them."""
    if len(bad) == 0:
        return None
    edges = np.flatnonzero(np.diff(np.concatenate([[0], bad.astype(np.int8), [0]])))
    starts, ends = edges[::2], edges[1::2]
    if len(starts) == 0:
        return None
    i = int(np.argmax(ends - starts))
    return (int(starts[i]), int(ends[i])) if ends[i] - starts[i] >= min_run else None


def _median(x: F64) -> float:
    x = x[np.isfinite(x)]
    return median(x) if len(x) else float("nan")


def crc_episode(entity: str, ts: F64, errors_s: F64, packets_s: F64,
                cfg: CounterConfig = CounterConfig(), peer_ratio: F64 | None = None,
                peers: int = 0) -> CounterAnomaly | None:
    """A CRC episode on a port: per-second error and packet rates at the same times (resets already
    handled), judged after a ``smooth_scrapes`` trailing mean. Strong, else weak, else None.
    ``peer_ratio``: the median smoothed CRC ratio of its ``peers`` collective peers at ``ts`` (NaN
    where none reports): the port must be ``peer_factor`` times worse there."""
    k = cfg.smooth_scrapes
    e, p = rolling_mean(errors_s, k), rolling_mean(packets_s, k)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(p > 0, e / p, np.nan)
    high = np.nan_to_num(ratio) >= cfg.min_crc_ratio
    if peer_ratio is not None:
        with np.errstate(invalid="ignore"):
            high &= ~(ratio < cfg.peer_factor * peer_ratio)      # NaN (no peer data): own traffic only
    strong_rate = cfg.min_time_share / cfg.retransmit_cost_s
    for weak, floor in ((False, strong_rate), (True, cfg.min_weak_crc_per_s)):
        run = episode(high & (np.nan_to_num(e) >= floor), cfg.min_episode_scrapes)
        if run is None:
            continue
        i0, i1 = run
        raw = np.flatnonzero(np.nan_to_num(errors_s[max(0, i0 - k + 1): i0 + 1]) > 0)
        first = max(0, i0 - k + 1) + (int(raw[0]) if len(raw) else k - 1)
        before = _median(ratio[:first]) if first > 0 else float("nan")
        peer = _median(peer_ratio[i0:i1]) if peer_ratio is not None else float("nan")
        return CounterAnomaly("switch_port", entity, "crc_ratio", float(ts[first]),
                              float(ts[i0 + cfg.min_episode_scrapes - 1]), before if np.isfinite(before) else 0.0,
                              _median(ratio[i0:i1]), weak, _median(e[i0:i1]), peer, peers)
    return None


def ber_episode(kind: str, entity: str, ts: F64, ber: F64, peer_median: float,
                cfg: CounterConfig = CounterConfig()) -> CounterAnomaly | None:
    """A pre-FEC BER episode: ``min_ber`` and ``min_ber_decades`` above both the port's own early
    level and ``peer_median`` (the median BER of every port) for ``min_episode_scrapes``."""
    ok = np.isfinite(ber)
    if ok.sum() < cfg.min_episode_scrapes:
        return None
    v = ber[ok]
    own = median(v[:max(1, len(v) // 4)])
    ref = min(own, peer_median) if np.isfinite(peer_median) else own
    bar = max(cfg.min_ber, ref * 10 ** cfg.min_ber_decades)
    run = episode(v >= bar, cfg.min_episode_scrapes)
    if run is None:
        return None
    t = ts[ok]
    i0, i1 = run
    return CounterAnomaly(kind, entity, "pre_fec_ber", float(t[i0]), float(t[i0 + cfg.min_episode_scrapes - 1]),
                          ref, median(v[i0:i1]))


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
