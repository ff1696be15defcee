"""GPU health: hardware events, health scores, DBE forecasts and hardware findings, read through
the Store protocol.

``analyze(store, inventory, window, config)`` gathers each GPU's DCGM series, PCIe AER counters
and Xid / AER log events in the window (:mod:`.inputs`), fits the SBE intensity model, scores
health and applies operator overrides (:mod:`.forecast`), and runs the per-GPU detectors
(:mod:`.detect`), each GPU judged against its node peers or its peers doing the same work
(:mod:`.peers`). Weights and overrides come in the config (the caller loads their files: an
analysis reads no file). One finding per GPU and fault; where a GPU shows several, the category
table's order names it: PCIe AER / replay evidence wins over heat (a bad riser makes a GPU hot),
memory failure over degradation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from suanli.analysis.categories import priority
from suanli.analysis.findings import Finding
from suanli.analysis.health import detect as hd
from suanli.analysis.health import events as hw
from suanli.analysis.health.degradation import DegradationConfig
from suanli.analysis.health.forecast import GpuHealth, fit_forecast, gpu_health
from suanli.analysis.health.inputs import GAUGES, InventoryLike, collect
from suanli.analysis.health.memory import detect_memory
from suanli.analysis.health.overrides import Override, latest_overrides
from suanli.analysis.health.peers import work_peers
from suanli.analysis.health.score import HealthWeights, ScoreConfig
from suanli.analysis.result import EntityValues
from suanli.analysis.window import Window, resolve_window
from suanli.store.api import Store

__all__ = ["HealthConfig", "HealthResult", "analyze"]

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


def _detect_all(data: Mapping[str, hd.GpuData], health: Mapping[str, GpuHealth], end: float,
                work: Mapping[str, tuple[str, ...]], config: HealthConfig) -> list[tuple[hd.Detection, str]]:
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
        mem = detect_memory(d, h.sbe_per_day if h else 0.0, h.recommendation if h else "ok", note, dc)
        mates = [data[p] for p in work.get(g, ()) if p in data]
        nvl = None if lost else hd.detect_nvlink(d, mates, dc)
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
    ids, fit = fit_forecast(data, win.start, win.end, config.degradation)
    health = gpu_health(data, ids, fit, config.degradation, config.score, config.weights,
                        latest_overrides(list(config.overrides)))
    findings: list[Finding] = []
    work = work_peers(inventory.gpus, inventory.jobs)
    for det, gid in _detect_all(data, health, win.end, work, config):
        findings.append(Finding(det.category, "gpu", gid, det.onset_s, det.end_s, det.confidence,
                                det.evidence, "health", detected_at=det.detected_s))
    events = [e for d in data.values() for e in d.events]
    return HealthResult(findings, health, config.degradation.horizon_days, events)
