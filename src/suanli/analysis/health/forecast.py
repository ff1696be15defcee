"""Each GPU's health over the window: the SBE intensity fit, the DBE forecast, the health score and
the recommendation (ok / watch / retire), with an operator's override applied."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from suanli.analysis.health import detect as hd
from suanli.analysis.health import events as hw
from suanli.analysis.health.degradation import (
    DegradationConfig,
    NhppFit,
    bin_event_times,
    fit_nhpp,
    recommend,
)
from suanli.analysis.health.overrides import Override
from suanli.analysis.health.score import HealthWeights, ScoreConfig, health_score, score_terms

__all__ = ["GpuHealth", "fit_forecast", "gpu_health"]

_DAY_S = 86400.0


@dataclass
class GpuHealth:
    gpu_id: str
    health_score: float
    sbe_per_day: float
    sbe_per_day_interval: tuple[float, float]
    p_dbe: float
    p_dbe_interval: tuple[float, float]
    recommendation: str
    override: Override | None = None


def fit_forecast(data: Mapping[str, hd.GpuData], start: float, end: float,
                  config: DegradationConfig) -> tuple[list[str], NhppFit | None]:
    """The SBE intensity model fitted over the GPUs that report SBE counts (their ids, in order)."""
    ids = [g for g, d in data.items() if hw.SBE in d.series]
    if not ids:
        return [], None
    times = [(hw.event_times_from_counter(*data[g].series[hw.SBE]) - start) / _DAY_S for g in ids]
    obs = np.full(len(ids), max(end - start, 1.0) / _DAY_S)
    counts, edges, cover = bin_event_times(times, obs, config)
    return ids, fit_nhpp(counts, edges, cover, config, obs_days=obs)


def _new_evidence_after(d: hd.GpuData, ts: float) -> bool:
    for metric in (hw.SBE, hw.DBE, hw.REMAP_CORR, hw.REMAP_UNCORR, hw.REMAP_FAIL):
        if metric in d.series:
            cd = hw.counter_delta(*d.series[metric])
            if (cd.increments[cd.ts > ts] > 0).any():
                return True
    return any(e.ts > ts and e.kind == "xid" and hw.xid_category(e.code or 0) for e in d.events)


def _level(d: hd.GpuData, metric: str) -> float:
    if metric not in d.series:
        return 0.0
    v = d.series[metric][1]
    return float(v[np.isfinite(v)][-1]) if np.isfinite(v).any() else 0.0


def _hw_error_count(d: hd.GpuData) -> float:
    """Hardware Xid events (codes with a hardware category) plus DBEs in the window."""
    n = sum(e.count for e in d.events if e.kind == "xid" and hw.xid_category(e.code or 0))
    return n + (hw.counter_delta(*d.series[hw.DBE]).total if hw.DBE in d.series else 0.0)


def _failed_memory(d: hd.GpuData, rec: str) -> str:
    """A GPU whose row remapping failed is out of spare rows: retire; one with a DBE or an
    uncorrectable remap in the window: at least watch."""
    def grew(metric: str) -> bool:
        return metric in d.series and hw.counter_delta(*d.series[metric]).total > 0

    if grew(hw.REMAP_FAIL):
        return "retire"
    if rec == "ok" and (grew(hw.DBE) or grew(hw.REMAP_UNCORR)):
        return "watch"
    return rec


def gpu_health(data: Mapping[str, hd.GpuData], ids: list[str], fit: NhppFit | None, dc: DegradationConfig,
               score: ScoreConfig, weights: HealthWeights, overrides: Mapping[str, Override]) -> dict[str, GpuHealth]:
    """Score, forecast and recommendation of each fitted GPU; an operator's override in force
    wins (``healthy`` only until new hardware evidence arrives after it)."""
    if fit is None:
        return {}
    rate, rate_lo, rate_hi = fit.intensity_now()
    p, p_lo, p_hi = fit.p_dbe(dc.horizon_days, dc.dbe_per_sbe)
    xid_counts = np.array([_hw_error_count(data[g]) for g in ids])
    corr = np.array([_level(data[g], hw.REMAP_CORR) for g in ids])
    unc = np.array([_level(data[g], hw.REMAP_UNCORR) + _level(data[g], hw.REMAP_FAIL) for g in ids])
    terms = score_terms(rate, corr, unc, xid_counts, score)
    scores = health_score(terms, weights)
    out = {}
    for i, g in enumerate(ids):
        rec = recommend(float(rate[i]), float(p[i]), dc)
        ov = overrides.get(g)
        if ov is not None and ov.state == "retired":
            rec = "retire"
        elif ov is not None and ov.state == "healthy" and not _new_evidence_after(data[g], ov.ts):
            rec = "ok"
        else:
            rec = _failed_memory(data[g], rec)
        out[g] = GpuHealth(g, float(scores[i]), float(rate[i]), (float(rate_lo[i]), float(rate_hi[i])),
                           float(p[i]), (float(p_lo[i]), float(p_hi[i])), rec, ov)
    return out
