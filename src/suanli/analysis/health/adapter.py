"""GPU health: hardware events, health scores, DBE forecasts and hardware findings, read through
the Store protocol.

``analyze(store, inventory, window, config)`` gathers each GPU's DCGM series, PCIe AER counters
and Xid / AER log events in the window (:mod:`.inputs`), runs the per-GPU detectors
(:mod:`.detect`), fits the SBE intensity model (:mod:`.degradation`), scores health
(:mod:`.score`) and applies operator overrides (:mod:`.overrides`); weights and overrides come
in the config (the caller loads their files: an analysis reads no file). One finding per GPU and fault; where a GPU shows several, PCIe AER / replay
evidence wins over heat (a bad riser makes a GPU hot), memory failure over degradation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from suanli.analysis.categories import priority
from suanli.analysis.findings import Finding
from suanli.analysis.health import detect as hd
from suanli.analysis.health import events as hw
from suanli.analysis.health.degradation import (
    DegradationConfig,
    NhppFit,
    bin_event_times,
    fit_nhpp,
    recommend,
)
from suanli.analysis.health.inputs import GAUGES, InventoryLike, collect
from suanli.analysis.health.overrides import Override, latest_overrides
from suanli.analysis.health.score import HealthWeights, ScoreConfig, health_score, score_terms
from suanli.analysis.result import EntityValues
from suanli.analysis.window import Window, resolve_window
from suanli.store.api import Store

__all__ = ["HealthConfig", "HealthResult", "analyze"]

_DAY_S = 86400.0


@dataclass(frozen=True)
class HealthConfig:
    """Everything the health analysis reads from configuration (documented in docs/health.md)."""

    detect: hd.DetectConfig = field(default_factory=hd.DetectConfig)
    """Thresholds of the hardware detectors."""
    degradation: DegradationConfig = field(default_factory=DegradationConfig)
    """SBE intensity fit, DBE forecast and retirement rule."""
    score: ScoreConfig = field(default_factory=ScoreConfig)
    """Saturations of the health-score terms."""
    weights: HealthWeights = field(default_factory=HealthWeights)
    """Health-score weights in use (0.4/0.3/0.3; the pipeline loads a refitted version from its
    file, :func:`suanli.analysis.health.weights.load_weights`)."""
    overrides: tuple[Override, ...] = ()
    """Operator overrides (the pipeline reads them from the audit file,
    :func:`suanli.analysis.health.overrides.load_overrides`); the newest per GPU is in force."""


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


@dataclass
class HealthResult:
    findings: list[Finding]
    gpus: dict[str, GpuHealth]
    horizon_days: float
    events: list[hw.HwEvent] = field(default_factory=list)

    def values(self) -> EntityValues:
        """Per-GPU numbers the rules read: health_score, p_dbe_30d, sbe_per_day."""
        return {g: {"health_score": h.health_score, "p_dbe_30d": h.p_dbe, "sbe_per_day": h.sbe_per_day}
                for g, h in self.gpus.items()}

    def predictions_json(self, only_at_risk: bool = False) -> list[dict[str, Any]]:
        """The ``predictions`` section of spec/diagnosis.md (plus interval keys), riskiest first."""
        out = []
        for h in sorted(self.gpus.values(), key=lambda x: (-x.p_dbe, x.gpu_id)):
            if only_at_risk and h.recommendation == "ok":
                continue
            d: dict[str, Any] = {
                "kind": "gpu", "id": h.gpu_id, "event": "dbe",
                "horizon_days": int(self.horizon_days) if float(self.horizon_days).is_integer()
                else self.horizon_days,
                "probability": round(h.p_dbe, 6), "health_score": round(h.health_score, 4),
                "recommendation": h.recommendation,
                "probability_interval": [round(h.p_dbe_interval[0], 6), round(h.p_dbe_interval[1], 6)],
                "sbe_per_day": round(h.sbe_per_day, 4),
                "sbe_per_day_interval": [round(h.sbe_per_day_interval[0], 4),
                                         round(h.sbe_per_day_interval[1], 4)],
            }
            if h.override is not None:
                d["override"] = h.override.to_json()
            out.append(d)
        return out


def _fit_forecast(data: Mapping[str, hd.GpuData], start: float, end: float,
                  config: DegradationConfig) -> tuple[list[str], NhppFit | None]:
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


def _scores(data: Mapping[str, hd.GpuData], ids: list[str], fit: NhppFit | None, config: HealthConfig,
            overrides: Mapping[str, Override]) -> dict[str, GpuHealth]:
    dc = config.degradation
    if fit is None:
        return {}
    rate, rate_lo, rate_hi = fit.intensity_now()
    p, p_lo, p_hi = fit.p_dbe(dc.horizon_days, dc.dbe_per_sbe)
    xid_counts = np.array([_hw_error_count(data[g]) for g in ids])
    corr = np.array([_level(data[g], hw.REMAP_CORR) for g in ids])
    unc = np.array([_level(data[g], hw.REMAP_UNCORR) + _level(data[g], hw.REMAP_FAIL) for g in ids])
    terms = score_terms(rate, corr, unc, xid_counts, config.score)
    scores = health_score(terms, config.weights)
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


def _detect_all(data: Mapping[str, hd.GpuData], health: Mapping[str, GpuHealth], end: float,
                config: HealthConfig) -> list[tuple[hd.Detection, str]]:
    dc = config.detect
    aer = {g: sum(hw.counter_delta(*p).total for p in d.aer.values()) for g, d in data.items()}
    rep = {g: hw.counter_delta(*d.series[hw.PCIE_REPLAY]).total for g, d in data.items()
           if hw.PCIE_REPLAY in d.series}
    aer_med, rep_med = hd.fleet_median(aer), hd.fleet_median(rep)
    by_node: dict[str, list[hd.GpuData]] = {}
    for d in data.values():
        by_node.setdefault(d.node, []).append(d)
    out: list[tuple[hd.Detection, str]] = []
    for g, d in data.items():
        if not d.series and not d.events and not d.aer:
            continue
        peers = [p for p in by_node[d.node] if p.gpu_id != g]
        h = health.get(g)
        note = (f"{g} forecast {h.sbe_per_day:,.1f} SBE/day, P(DBE within "
                f"{config.degradation.horizon_days:.0f} d) {h.p_dbe:.0%}") if h else ""
        pcie = hd.detect_pcie(d, aer_med, rep_med, end, dc)
        lost = hd.detect_lost(d, peers, end, GAUGES, dc)
        thermal = None if lost else hd.detect_thermal(d, peers, dc)
        mem = hd.detect_memory(d, h.sbe_per_day if h else 0.0, h.recommendation if h else "ok", note, dc)
        nvl = None if lost else hd.detect_nvlink(d, peers, dc)
        found = [det for det in (pcie, mem, lost, thermal, nvl) if det is not None]
        if found:
            out.append((_one_per_gpu(found), g))
    return out


def _one_per_gpu(found: list[hd.Detection]) -> hd.Detection:
    """One finding per GPU: the most specific category (the category table's order: the cause
    before its consequences), with the others' evidence appended."""
    ranked = sorted(found, key=lambda d: -priority(d.category))
    top = ranked[0]
    extra = tuple(e for d in ranked[1:] for e in d.evidence if e not in top.evidence)
    return dataclasses.replace(top, evidence=top.evidence + extra)


def analyze(store: Store, inventory: InventoryLike, window: Window | None = None,
            config: HealthConfig = HealthConfig()) -> HealthResult:
    """Hardware findings, health scores and DBE forecasts for every GPU of the inventory, from the
    data in ``window`` (None: the data's extent)."""
    win = resolve_window(store, window)
    if win is None:
        return HealthResult([], {}, config.degradation.horizon_days)
    data = collect(store, inventory, win)
    ids, fit = _fit_forecast(data, win.start, win.end, config.degradation)
    health = _scores(data, ids, fit, config, latest_overrides(list(config.overrides)))
    findings: list[Finding] = []
    for det, gid in _detect_all(data, health, win.end, config):
        findings.append(Finding(det.category, "gpu", gid, det.onset_s, det.end_s, det.confidence,
                                det.evidence, "health", detected_at=det.detected_s))
    events = [e for d in data.values() for e in d.events]
    return HealthResult(findings, health, config.degradation.horizon_days, events)
