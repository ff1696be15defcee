"""GPU health: hardware events, health scores, DBE forecasts and hardware findings, read through
the Store protocol.

``analyze(store, inventory, config)`` gathers each GPU's DCGM series, PCIe AER counters and
Xid / AER log events, runs the per-GPU detectors (:mod:`health_detect`), fits the SBE intensity
model (:mod:`degradation`), scores health (:mod:`health_score`) and applies operator overrides
(:mod:`overrides`). One finding per GPU and fault; where a GPU shows several, PCIe AER / replay
evidence wins over heat (a bad riser makes a GPU hot), memory failure over degradation.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from suanli.analysis import health_detect as hd
from suanli.analysis import hw_events as hw
from suanli.analysis.degradation import DegradationConfig, NhppFit, bin_event_times, fit_nhpp, recommend
from suanli.analysis.findings import Finding
from suanli.analysis.health_score import ScoreConfig, health_score, score_terms
from suanli.analysis.overrides import Override, latest_overrides, load_overrides
from suanli.analysis.weights import load_weights
from suanli.ingest.records import Event, SeriesKey
from suanli.inventory.model import Gpu
from suanli.store.api import Store

__all__ = ["HealthConfig", "HealthResult", "analyze"]

_GPU_METRICS = (hw.SBE, hw.DBE, hw.REMAP_CORR, hw.REMAP_UNCORR, hw.REMAP_FAIL, hw.XID_ERRORS,
                hw.PCIE_REPLAY, hw.NVLINK_BW, hw.THROTTLE, hw.GPU_TEMP, hw.MEMORY_TEMP, hw.SM_CLOCK,
                hw.POWER, hw.GPU_UTIL)
_GAUGES = (hw.GPU_TEMP, hw.POWER, hw.SM_CLOCK, hw.GPU_UTIL, hw.MEMORY_TEMP)
_PCI = re.compile(r"(?:[0-9a-f]{4,8}:)?([0-9a-f]{2}:[0-9a-f]{2})(?:\.[0-7])?", re.IGNORECASE)
_DAY_S = 86400.0


class InventoryLike(Protocol):
    @property
    def gpus(self) -> Mapping[str, Gpu]: ...


@dataclass(frozen=True)
class HealthConfig:
    """Everything the health analysis reads from configuration (documented in docs/health.md)."""

    detect: hd.DetectConfig = field(default_factory=hd.DetectConfig)
    """Thresholds of the hardware detectors."""
    degradation: DegradationConfig = field(default_factory=DegradationConfig)
    """SBE intensity fit, DBE forecast and retirement rule."""
    score: ScoreConfig = field(default_factory=ScoreConfig)
    """Saturations of the health-score terms."""
    weights_path: str | None = None
    """JSON file of versioned health-score weights (defaults 0.4/0.3/0.3 when None or absent)."""
    overrides_path: str | None = None
    """Append-only JSON-lines audit file of operator overrides (none when None)."""


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

    def values(self) -> dict[str, dict[str, float]]:
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


def _gpu_of_key(key: SeriesKey, inventory: InventoryLike, by_pci: Mapping[tuple[str, str], str]) -> str | None:
    if key.entity_kind == "gpu" and key.entity_id:
        return key.entity_id
    node = key.label("Hostname") or key.label("node") or (key.entity_id if key.entity_kind == "node" else None)
    idx = key.label("gpu")
    if node and idx is not None and idx.isdigit() and f"{node}/gpu{idx}" in inventory.gpus:
        return f"{node}/gpu{idx}"
    pci = key.label("pci_bus_id")
    m = _PCI.search(pci or "")
    return by_pci.get((node or "", m.group(1).lower())) if m else None


def _merge(pairs: list[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]]) -> hd.Pair:
    ts = np.concatenate([p[0] for p in pairs]).astype(np.float64)
    v = np.concatenate([p[1] for p in pairs]).astype(np.float64)
    order = np.argsort(ts, kind="stable")
    return ts[order], hw.clean(v[order])


def _collect(store: Store, inventory: InventoryLike, start: float | None,
             end: float | None) -> dict[str, hd.GpuData]:
    by_pci: dict[tuple[str, str], str] = {}
    for g in inventory.gpus.values():
        m = _PCI.search(g.pci_bus_id or "")
        if m:
            by_pci[(g.node, m.group(1).lower())] = g.id
    data = {g.id: hd.GpuData(g.id, g.node) for g in inventory.gpus.values()}
    raw: dict[tuple[str, str], list[tuple[Any, Any]]] = {}
    for metric in (*_GPU_METRICS, hw.CLOCKS_EVENT, hw.PCIE_AER):
        for s in store.series(metric, start=start, end=end):
            gid = _gpu_of_key(s.key, inventory, by_pci)
            if gid is None or gid not in data:
                continue
            sub = hw.THROTTLE if metric == hw.CLOCKS_EVENT else metric
            sub = sub if metric != hw.PCIE_AER else f"aer:{s.key.label('severity') or 'unknown'}"
            raw.setdefault((gid, sub), []).append((s.ts, s.values))
    for (gid, sub), pairs in raw.items():
        target = data[gid].aer if sub.startswith("aer:") else data[gid].series
        target[sub.removeprefix("aer:")] = _merge(pairs)
    for ev in store.events(kinds=["xid", "aer"], start=start, end=end):
        gid = _gpu_of_event(ev, by_pci)
        if gid in data:
            data[gid].events.append(hw.HwEvent(
                ev.ts, gid, ev.kind, float(ev.count), ev.code, ev.severity,
                hw.xid_meaning(ev.code) if ev.kind == "xid" and ev.code is not None else "",
                ev.source or "log"))
    for d in data.values():
        if not any(e.kind == "xid" for e in d.events) and hw.XID_ERRORS in d.series:
            d.events.extend(_dcgm_xids(d.gpu_id, *d.series[hw.XID_ERRORS]))
    return data


def _gpu_of_event(ev: Event, by_pci: Mapping[tuple[str, str], str]) -> str | None:
    if ev.entity_kind == "gpu":
        return ev.entity_id
    host = ev.host or (ev.entity_id if ev.entity_kind == "node" else None) or ""
    for m in _PCI.finditer(ev.message):
        gid = by_pci.get((host, m.group(1).lower()))
        if gid:
            return gid
    return None


def _dcgm_xids(gpu_id: str, ts: hd.F64, values: hd.F64) -> list[hw.HwEvent]:
    """``DCGM_FI_DEV_XID_ERRORS`` holds the last Xid code: each change to a non-zero code is an event."""
    ok = np.flatnonzero(np.isfinite(values))
    out = []
    for a, b in itertools.pairwise(ok):
        if values[b] != values[a] and values[b] > 0:
            code = int(values[b])
            out.append(hw.HwEvent(float(ts[b]), gpu_id, "xid", 1.0, code, None, hw.xid_meaning(code), "dcgm"))
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
    scores = health_score(terms, load_weights(config.weights_path))
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
        lost = hd.detect_lost(d, peers, end, _GAUGES, dc)
        thermal = None if lost else hd.detect_thermal(d, peers, dc)
        mem = hd.detect_memory(d, h.sbe_per_day if h else 0.0, h.recommendation if h else "ok", note, dc)
        nvl = None if lost else hd.detect_nvlink(d, peers, dc)
        found = [det for det in (pcie, mem, lost, thermal, nvl) if det is not None]
        if found:
            out.append((_one_per_gpu(found), g))
    return out


#: Which category names a GPU's fault when it shows several (the cause before its consequences:
#: a bad riser heats its GPU and can drop it off the bus; a DBE can hang it).
_PRIORITY = ("pcie_riser", "gpu_memory_failure", "gpu_lost", "gpu_thermal", "nvlink_degradation",
             "gpu_memory_degradation")


def _one_per_gpu(found: list[hd.Detection]) -> hd.Detection:
    """One finding per GPU: the highest-priority category, with the others' evidence appended."""
    ranked = sorted(found, key=lambda d: _PRIORITY.index(d.category))
    top = ranked[0]
    extra = tuple(e for d in ranked[1:] for e in d.evidence if e not in top.evidence)
    return dataclasses.replace(top, evidence=top.evidence + extra)


def analyze(store: Store, inventory: InventoryLike, config: HealthConfig = HealthConfig(),
            start: float | None = None, end: float | None = None) -> HealthResult:
    """Hardware findings, health scores and DBE forecasts for every GPU of the inventory."""
    rng = store.time_range()
    if rng is None:
        return HealthResult([], {}, config.degradation.horizon_days)
    w_start = rng[0] if start is None else start
    w_end = rng[1] if end is None else end
    data = _collect(store, inventory, start, end)
    ids, fit = _fit_forecast(data, w_start, w_end, config.degradation)
    overrides = latest_overrides(load_overrides(config.overrides_path)) if config.overrides_path else {}
    health = _scores(data, ids, fit, config, overrides)
    findings: list[Finding] = []
    for det, gid in _detect_all(data, health, w_end, config):
        findings.append(Finding(det.category, "gpu", gid, det.onset_s, det.end_s, det.confidence,
                                det.evidence, "health", detected_at=det.detected_s))
    events = [e for d in data.values() for e in d.events]
    return HealthResult(findings, health, config.degradation.horizon_days, events)
