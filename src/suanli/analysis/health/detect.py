"""Per-GPU hardware detectors: pure functions over one GPU's cleaned series, its node peers and its
hardware events, each returning the evidence of one fault category (or None).

Baselines are robust: a GPU is compared with its own early window (median of the first
``baseline_frac`` of its samples) and with its peers at the same instants (median over the peers,
interpolated to the GPU's sample times), never only with fixed limits. Heat and a lost GPU are
judged against the node's other GPUs (they share its cooling and its exporter); NVLink traffic
against the GPUs doing the same work (:mod:`.peers`), so a job's stall is never a GPU's fault,
and a link that was bad before the window opened still stands out from its peers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from suanli.analysis.categories import policy
from suanli.analysis.health import events as hw
from suanli.analysis.median import median, nanmedian
from suanli.analysis.peer_median import Track, peer_median_at, tracks_median_at

__all__ = ["DetectConfig", "Detection", "GpuData", "confirmed_onset", "detect_lost", "detect_nvlink",
           "detect_pcie", "detect_thermal", "first_ts"]

F64 = npt.NDArray[np.float64]
Pair = tuple[F64, F64]
UNCORRECTED_AER_BONUS = 0.05
"""A riser whose AER errors include uncorrected ones is that much surer (up to the category's cap)."""


@dataclass(frozen=True)
class DetectConfig:
    """Thresholds of the per-GPU detectors."""

    baseline_frac: float = 0.25
    """Share of a GPU's first samples that form its own baseline."""
    confirm_s: float = 120.0
    """A counter's onset is the first increase followed, within this time, by ``confirm_count``."""
    confirm_count: float = 3.0
    """Increase that confirms an onset (isolated single errors are noise)."""
    aer_min_count: float = 20.0
    """PCIe AER errors in the window (counter or log records) that make a riser suspect ..."""
    replay_min_increase: float = 50.0
    """... or PCIe replay-counter increase in the window ..."""
    peer_factor: float = 10.0
    """... provided it is this many times the fleet median (at least ``peer_floor``)."""
    peer_floor: float = 1.0
    """Floor of the fleet median in the peer comparison."""
    temp_limit_c: float = 87.0
    """GPU temperature at or above which a GPU is hot (H100 slowdown starts near 87-90 °C)."""
    memory_temp_limit_c: float = 95.0
    """HBM temperature at or above which a GPU is hot."""
    temp_excess_c: float = 15.0
    """... or this much above both its own baseline and its node peers."""
    temp_excess_floor_c: float = 80.0
    """... provided it is at least this hot (a GPU that starts work while its node peers idle
    warms by 30 °C and is not at fault)."""
    temp_rise_c: float = 5.0
    """The onset of heat is the first sample of the rise that stays this far over the baseline."""
    sustain_s: float = 120.0
    """How long heat or thermal throttling must last."""
    thermal_throttle_mask: int = 0x60
    """Throttle-reason bits that mean thermal: 0x20 SW thermal, 0x40 HW thermal slowdown."""
    slowdown_mask: int = 0x88
    """Bits reported as evidence with heat: 0x8 HW slowdown, 0x80 HW power brake."""
    sbe_min_increase: float = 3.0
    """Fewest SBEs in the window that can mark memory degradation ..."""
    sbe_background_per_h: float = 10.0
    """... provided a healthy card's steady background could not have counted them: the highest
    steady rate healthy cards show is a few per hour (public samples: one SBE in 15 minutes on one
    GPU of 64; the simulator's counter noise 0.5-4/h); this bar leaves 2.5x headroom ..."""
    sbe_alpha: float = 1e-3
    """... that is, P(at least that many | Poisson at ``sbe_background_per_h`` over the span) is
    below this; or the rate rose: P(at least the later half's count | the window's count spread
    evenly over time) is below this."""
    stop_gap_s: float = 120.0
    """A GPU whose series end this long (or 4 scrapes) before the window while peers go on is lost."""
    nvlink_drop_frac: float = 0.3
    """NVLink bandwidth below (1 - this) x its own baseline, and below that share of its peers'
    own ratio while the peers hold at least that share of theirs, is degraded; so is bandwidth
    below (1 - this) x what its peers move at the same instants (a link already bad when the
    window opened)."""
    idle_util_pct: float = 10.0
    """An idle GPU (utilisation below this) is not NVLink-degraded, only idle."""
    clock_departure_frac: float = 0.05
    """A hot GPU's SM clock is evidence only when it departs this share or more from its node
    peers' (a clock equal to its peers' shows nothing)."""
    nvlink_min_baseline_Bps: float = 1e8
    """A GPU (or peer) whose own NVLink baseline is below this moves no traffic a link fault could
    lower (an idle H100 reads ~1 MB/s; a training GPU tens of GB/s): it is not judged."""


@dataclass
class GpuData:
    """One GPU's cleaned series (metric -> (ts, values)), AER counters by severity, and events."""

    gpu_id: str
    node: str
    series: dict[str, Pair] = field(default_factory=dict)
    aer: dict[str, Pair] = field(default_factory=dict)
    events: list[hw.HwEvent] = field(default_factory=list)
    _tracks: dict[str, Track | None] = field(default_factory=dict, repr=False, compare=False)

    def track(self, metric: str) -> Track | None:
        """The metric's series prepared for reading at a peer's times (once: a GPU is the peer of
        every other GPU of its node); None without it or with fewer than two finite points."""
        if metric not in self._tracks:
            self._tracks[metric] = Track.of(*self.series[metric]) if metric in self.series else None
        return self._tracks[metric]


def _peer_median(ts: F64, peers: Sequence[GpuData], metric: str) -> F64:
    """The median of the peers' ``metric`` at ``ts`` (NaN where none has data)."""
    return tracks_median_at(ts, [tr for p in peers if (tr := p.track(metric)) is not None])


@dataclass(frozen=True)
class Detection:
    category: str
    onset_s: float
    confidence: float
    evidence: tuple[str, ...]
    end_s: float | None = None
    detected_s: float | None = None
    """When the evidence first met its own bar (a sustained condition: its run start plus the
    ``sustain_s`` it must last); None where the onset itself is the evidence (an Xid line)."""


def _median_interval(ts: F64) -> float:
    return median(np.diff(ts)) if ts.size > 1 else 15.0


def confirmed_onset(cd: hw.CounterDelta, config: DetectConfig) -> float | None:
    """First increase followed within ``confirm_s`` by at least ``confirm_count`` in all."""
    idx = np.flatnonzero(cd.increments > 0)
    csum = np.cumsum(cd.increments)
    for i in idx:
        j = np.searchsorted(cd.ts, cd.ts[i] + config.confirm_s, side="right") - 1
        if csum[j] - csum[i] + cd.increments[i] >= config.confirm_count:
            return float(cd.ts[i])
    return cd.onset_s


def first_ts(g: GpuData) -> float:
    """Earliest time anything was seen for this GPU (0.0 when nothing was)."""
    firsts = [float(p[0][0]) for p in (*g.series.values(), *g.aer.values()) if p[0].size]
    firsts += [e.ts for e in g.events]
    return min(firsts) if firsts else 0.0


def _baseline(v: F64, frac: float) -> float:
    ok = v[np.isfinite(v)]
    if ok.size == 0:
        return float("nan")
    return median(ok[: max(1, int(ok.size * frac))])


def _fmt_count(x: float) -> str:
    return f"{x:,.0f}"


def detect_pcie(g: GpuData, fleet_aer_median: float, fleet_replay_median: float, window_end_s: float,
                config: DetectConfig) -> Detection | None:
    """PCIe riser / link: AER errors and replays well above the fleet, with its heat as evidence."""
    deltas = {sev: hw.counter_delta(*p) for sev, p in g.aer.items()}
    aer_total = sum(d.total for d in deltas.values())
    aer_logs = [e for e in g.events if e.kind == "aer"]
    aer_log_count = float(sum(e.count for e in aer_logs))
    replay = hw.counter_delta(*g.series[hw.PCIE_REPLAY]) if hw.PCIE_REPLAY in g.series else None
    replay_total = replay.total if replay else 0.0
    aer_ref = config.peer_factor * max(fleet_aer_median, config.peer_floor)
    rep_ref = config.peer_factor * max(fleet_replay_median, config.peer_floor)
    aer_bad = max(aer_total, aer_log_count) >= max(config.aer_min_count, aer_ref)
    rep_bad = replay_total >= max(config.replay_min_increase, rep_ref)
    if not (aer_bad or rep_bad):
        return None
    onsets = [confirmed_onset(d, config) for d in deltas.values() if d.total > 0]
    if replay and replay.total > 0:
        onsets.append(confirmed_onset(replay, config))
    onsets += [e.ts for e in aer_logs]
    valid = [o for o in onsets if o is not None]
    onset = min(valid) if valid else first_ts(g)
    evidence = []
    if aer_total > 0 or aer_logs:
        # the first increase arrived over the scrape interval before the onset sample
        step = _median_interval(next(iter(g.aer.values()))[0]) if g.aer else 0.0
        span_min = max((window_end_s - onset + step) / 60.0, 1.0)
        parts = ", ".join(f"{_fmt_count(d.total)} {sev}" for sev, d in sorted(deltas.items()) if d.total)
        evidence.append(f"{g.gpu_id} PCIe AER {max(aer_total, aer_log_count) / span_min:,.0f} errors/min "
                        f"({parts or 'from the kernel log'}; fleet median {fleet_aer_median:,.0f} errors "
                        "in the window)")
    if aer_log_count:
        evidence.append(f"{g.gpu_id} kernel log: {aer_log_count:,.0f} AER records")
    if replay_total:
        evidence.append(f"{g.gpu_id} PCIe replay counter +{_fmt_count(replay_total)} replays "
                        f"(fleet median +{fleet_replay_median:,.0f} replays)")
    conf_of = policy("pcie_riser").confidence
    conf = conf_of.strong if (aer_bad and rep_bad) else conf_of.weak
    if "uncorrected" in deltas and deltas["uncorrected"].total > 0:
        conf = min(conf + UNCORRECTED_AER_BONUS, conf_of.cap)
    crossed = [t for t in (_crossing(list(deltas.values()), max(config.aer_min_count, aer_ref)) if aer_bad else None,
                           _crossing([replay] if replay else [], max(config.replay_min_increase, rep_ref))
                           if rep_bad else None) if t is not None]
    return Detection("pcie_riser", onset, conf, tuple(evidence),
                     detected_s=max(min(crossed), onset) if crossed else None)


def _crossing(deltas: Sequence[hw.CounterDelta], bar: float) -> float | None:
    """When the counters' summed increase first reached ``bar`` (the finding's own threshold)."""
    if not deltas:
        return None
    ts = np.concatenate([d.ts for d in deltas])
    inc = np.concatenate([d.increments for d in deltas])
    order = np.argsort(ts, kind="stable")
    total = np.cumsum(np.nan_to_num(inc[order]))
    hit = np.flatnonzero(total >= bar)
    return float(ts[order][hit[0]]) if hit.size else None


def _hot_flag(g: GpuData, metric: str, limit_c: float, peers: Sequence[GpuData],
              config: DetectConfig) -> tuple[F64, npt.NDArray[np.bool_], float, float]:
    ts, v = g.series[metric]
    base = _baseline(v, config.baseline_frac)
    peer = _peer_median(ts, peers, metric)
    excess = ((v - base >= config.temp_excess_c) & ~(v - peer < config.temp_excess_c)
              & (v >= config.temp_excess_floor_c))
    flag = np.isfinite(v) & ((v >= limit_c) | excess)
    return ts, flag, base, nanmedian(peer) if np.isfinite(peer).any() else float("nan")


def _ramp_start(ts: F64, v: F64, onset_s: float, level: float) -> float:
    """Walk back from ``onset_s`` over the samples still above ``level``: the heat's first sample."""
    i = int(np.searchsorted(ts, onset_s))
    while i > 0 and (not np.isfinite(v[i - 1]) or v[i - 1] >= level):
        i -= 1
    return float(ts[min(i, len(ts) - 1)])


def detect_thermal(g: GpuData, peers: Sequence[GpuData], config: DetectConfig) -> Detection | None:
    """Heat over the limit (or far above own baseline and peers), or thermal throttle reasons."""
    onsets: list[float] = []
    met: list[float] = []
    evidence: list[str] = []
    for metric, limit, label in ((hw.GPU_TEMP, config.temp_limit_c, "temperature"),
                                 (hw.MEMORY_TEMP, config.memory_temp_limit_c, "memory temperature")):
        if metric not in g.series:
            continue
        ts, flag, base, peer = _hot_flag(g, metric, limit, peers, config)
        gap = 3 * _median_interval(ts)
        onset, dur = hw.sustained_onset(ts, flag, config.sustain_s, gap)
        if onset is not None:
            met.append(onset + config.sustain_s)
            onsets.append(_ramp_start(ts, g.series[metric][1], onset, base + config.temp_rise_c))
            peak = float(np.nanmax(g.series[metric][1][flag]))
            evidence.append(f"{g.gpu_id} {label} {peak:.0f} °C for {dur / 60:.0f} min "
                            f"(own baseline {base:.0f} °C, node peers {peer:.0f} °C)")
    if hw.THROTTLE in g.series:
        ts, v = g.series[hw.THROTTLE]
        bits = np.where(np.isfinite(v), v, 0).astype(np.int64)
        flag = (bits & config.thermal_throttle_mask) != 0
        onset, dur = hw.sustained_onset(ts, flag, config.sustain_s, 3 * _median_interval(ts))
        if onset is not None:
            onsets.append(onset)
            met.append(onset + config.sustain_s)
            names = sorted({n for b in np.unique(bits[flag]) for n in hw.decode_throttle(int(b))
                            if n.endswith(("thermal_slowdown", "hw_slowdown", "power_brake_slowdown"))})
            evidence.append(f"{g.gpu_id} clock throttle reasons {', '.join(names)} for {dur / 60:.0f} min")
    if not onsets:
        return None
    if hw.SM_CLOCK in g.series:
        ts, v = g.series[hw.SM_CLOCK]
        late = v[ts >= min(onsets)]
        clk = _peer_median(ts, peers, hw.SM_CLOCK)
        late_peer = clk[ts >= min(onsets)]
        if np.isfinite(late).any() and np.isfinite(late_peer).any():
            own, peer = nanmedian(late), nanmedian(late_peer)
            if abs(own - peer) >= config.clock_departure_frac * peer:
                evidence.append(f"{g.gpu_id} SM clock {own:.0f} MHz (node peers {peer:.0f} MHz)")
    conf_of = policy("gpu_thermal").confidence
    conf = conf_of.strong if len(onsets) > 1 else conf_of.weak
    return Detection("gpu_thermal", min(onsets), conf, tuple(evidence), detected_s=min(met))


def last_valid_s(g: GpuData, metrics: Sequence[str]) -> float | None:
    """Latest time any of these metrics had a real reading."""
    last = [float(ts[np.isfinite(v)][-1]) for m in metrics if m in g.series
            for ts, v in [g.series[m]] if np.isfinite(v).any()]
    return max(last) if last else None


def detect_lost(g: GpuData, peers: Sequence[GpuData], window_end_s: float,
                gauge_metrics: Sequence[str], config: DetectConfig) -> Detection | None:
    """Xid 79 / 119 / 120, or the GPU's series stop while its node peers go on."""
    xids = [e for e in g.events if e.kind == "xid" and hw.xid_category(e.code or 0) == "gpu_lost"]
    evidence = [f"{g.gpu_id} Xid {e.code} ({e.meaning or hw.xid_meaning(e.code or 0)}) [{e.source}]"
                for e in xids]
    onsets = [e.ts for e in xids]
    last = last_valid_s(g, gauge_metrics)
    ts_any = next((p[0] for p in g.series.values() if p[0].size), np.zeros(0))
    gap = max(config.stop_gap_s, 4 * _median_interval(ts_any))
    peer_last = [x for x in (last_valid_s(p, gauge_metrics) for p in peers) if x is not None]
    peers_alive = bool(peer_last) and median(peer_last) >= window_end_s - gap
    if last is not None and last < window_end_s - gap and peers_alive:
        onsets.append(last + _median_interval(ts_any))
        evidence.append(f"{g.gpu_id} telemetry stopped at its last reading "
                        f"{(window_end_s - last) / 60:.1f} min before the window end; node peers continue")
    if not onsets:
        return None
    evidence += hw.fatal_aer_before(g.events, min(onsets))
    conf_of = policy("gpu_lost").confidence
    return Detection("gpu_lost", min(onsets), conf_of.strong if xids else conf_of.weak, tuple(evidence))


def _own_ratio(p: Pair, config: DetectConfig) -> Pair | None:
    """A series over its own baseline (None when the baseline is no traffic to lose)."""
    base = _baseline(p[1], config.baseline_frac)
    return (p[0], p[1] / base) if base >= config.nvlink_min_baseline_Bps else None


def _busy(g: GpuData, ts: F64, config: DetectConfig) -> npt.NDArray[np.bool_]:
    """Where the GPU is busy (utilisation at or above ``idle_util_pct``; everywhere without the series)."""
    if hw.GPU_UTIL in g.series:
        uts, uv = g.series[hw.GPU_UTIL]
        ok = np.isfinite(uv)
        if ok.sum() > 1:
            return np.asarray(np.interp(ts, uts[ok], uv[ok]) >= config.idle_util_pct)
    return np.ones(ts.shape, dtype=bool)


def _nvlink_flag(g: GpuData, peers: Sequence[GpuData], config: DetectConfig) -> tuple[F64, F64, npt.NDArray[np.bool_]]:
    """(ts, peers' median ratio, flag): the GPU's bandwidth is below ``keep`` of its own baseline
    and of its peers' ratio while the peers hold their own pace and the GPU is busy."""
    ts, v = g.series[hw.NVLINK_BW]
    base = _baseline(v, config.baseline_frac)
    keep = 1.0 - config.nvlink_drop_frac
    # each peer relative to its own baseline: a job that stalls, slows or ends lowers all its GPUs'
    # traffic together, and that is no link fault; a bad link lowers one GPU's while its peers,
    # doing the same work, keep their pace
    if not base >= config.nvlink_min_baseline_Bps:
        return ts, np.full(ts.shape, np.nan), np.zeros(ts.shape, dtype=bool)
    peer_ratio = peer_median_at(ts, [r for r in (_own_ratio(p.series[hw.NVLINK_BW], config) for p in peers
                                                 if hw.NVLINK_BW in p.series) if r is not None])
    ratio = v / base
    with np.errstate(invalid="ignore"):
        flag = np.isfinite(ratio) & (ratio < keep) & (peer_ratio >= keep) & (ratio < keep * peer_ratio)
    return ts, peer_ratio, flag & _busy(g, ts, config)


def _nvlink_peer_flag(g: GpuData, peers: Sequence[GpuData], config: DetectConfig) -> tuple[F64, npt.NDArray[np.bool_]]:
    """(peers' median bandwidth, flag): the busy GPU moves less than ``keep`` of what its peers doing
    the same work move at the same instants, while they move traffic. A link that was already bad
    when the window opened has no healthy baseline of its own to fall from; its peers are one."""
    ts, v = g.series[hw.NVLINK_BW]
    peer = _peer_median(ts, peers, hw.NVLINK_BW)
    with np.errstate(invalid="ignore"):
        flag = (np.isfinite(v) & (peer >= config.nvlink_min_baseline_Bps)
                & (v < (1.0 - config.nvlink_drop_frac) * peer))
    return peer, flag & _busy(g, ts, config)


def _nvlink_bandwidth(g: GpuData, peers: Sequence[GpuData], config: DetectConfig) -> tuple[float, str] | None:
    """(onset, evidence) of NVLink bandwidth gone low: against its own baseline (a drop in the
    window) or against its peers at the same instants (low all along)."""
    ts, peer_ratio, own = _nvlink_flag(g, peers, config)
    peer_bw, low = _nvlink_peer_flag(g, peers, config)
    flag = own | low
    onset, dur = hw.sustained_onset(ts, flag, config.sustain_s, 3 * _median_interval(ts))
    if onset is None:
        return None
    v = g.series[hw.NVLINK_BW][1]
    bw = nanmedian(v[flag])
    base = _baseline(v, config.baseline_frac)
    parts = []
    if own.any():
        parts.append(f"{bw / base:.0%} of its own baseline {base / 1e9:.1f} GB/s; its {len(peers)} peers doing "
                     f"the same work at {np.nanmedian(peer_ratio[own]):.0%} of theirs")
    if low.any():
        peer_med = nanmedian(peer_bw[low])
        parts.append(f"{nanmedian(v[low]) / peer_med:.0%} of the {peer_med / 1e9:.1f} GB/s its "
                     f"{len(peers)} peers doing the same work move at the same time")
    return onset, f"{g.gpu_id} NVLink bandwidth {bw / 1e9:.1f} GB/s for {dur / 60:.0f} min ({'; '.join(parts)})"


def detect_nvlink(g: GpuData, peers: Sequence[GpuData], config: DetectConfig) -> Detection | None:
    """Xid 74 (NVLink), or NVLink bandwidth far below its own baseline, or far below what its
    peers doing the same work (:mod:`.peers`) move at the same time, while they keep their pace."""
    xids = [e for e in g.events if e.kind == "xid" and hw.xid_category(e.code or 0) == "nvlink_degradation"]
    evidence = [f"{g.gpu_id} Xid {e.code} ({e.meaning or hw.xid_meaning(e.code or 0)}) [{e.source}]"
                for e in xids]
    onsets = [e.ts for e in xids]
    found = _nvlink_bandwidth(g, peers, config) if hw.NVLINK_BW in g.series and peers else None
    if found is not None:
        onsets.append(found[0])
        evidence.append(found[1])
    if not onsets:
        return None
    conf_of = policy("nvlink_degradation").confidence
    return Detection("nvlink_degradation", min(onsets), conf_of.strong if len(evidence) > 1 else conf_of.weak,
                     tuple(evidence))


def fleet_median(values: Mapping[str, float]) -> float:
    """Median of per-GPU numbers (0 for an empty fleet)."""
    return median(list(values.values())) if values else 0.0
