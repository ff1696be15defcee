"""The root-cause report's data for one job over a diagnosis's window: the SLA's own metric, each
rank's step phases, the suspect's hardware signals, the fabric's heatmap, the incidents touching
the job. The store is read here, once; ``report.rca`` only renders this object."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from suanli.analysis.fabric import Heatmap
from suanli.analysis.ledger import JobLedger
from suanli.analysis.window import Window
from suanli.incidents.model import Incident
from suanli.inventory import Inventory
from suanli.pipeline.model import Diagnosis
from suanli.rules.language import RuleSet, load_rules
from suanli.store.api import Store

__all__ = ["PHASES", "Line", "Panel", "PhaseTimeline", "RcaData", "normal_band", "rca_data", "sla_threshold"]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
PHASES = ("data_load", "forward", "backward", "allreduce", "optimizer")
SLA_METRIC = "suanli_sla_latency_seconds"
HW_METRICS: dict[str, tuple[str, ...]] = {
    "gpu": ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
            "suanli_pcie_aer_errors_total", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"),
    "switch_port": ("suanli_switch_port_crc_errors_total", "suanli_port_pre_fec_ber"),
    "nic": ("suanli_rdma_retransmits_total", "suanli_port_pre_fec_ber", "node_infiniband_link_downed_total"),
    "storage": ("suanli_storage_read_latency_seconds",),
}
"""The suspect's own signals, by its kind."""
COUNTERS = frozenset({"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "suanli_pcie_aer_errors_total",
                      "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "suanli_switch_port_crc_errors_total",
                      "suanli_rdma_retransmits_total", "node_infiniband_link_downed_total"})
"""Counters are shown as per-second rates."""
SYMPTOM_METRICS: dict[str, tuple[str, ...]] = {
    "nic": ("suanli_rdma_retransmits_total",),
    "gpu": ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER",),
    "switch_port": ("suanli_switch_port_crc_errors_total",),
}
"""Where a fault shows on another part (the retransmits on the NICs behind a port): the signal
the incident's own alerts name on that part, one panel per metric, one line per part."""
MAX_SYMPTOM_PARTS = 8
BAND_PCT = (5.0, 95.0)
"""The normal band: these percentiles of the panel's samples before the fault began."""


@dataclass(frozen=True)
class Line:
    name: str
    ts: F64
    values: F64


@dataclass(frozen=True)
class Panel:
    """One metric of the suspect, or of the parts where its fault shows (a rate for counters)."""

    metric: str
    per_second: bool
    lines: tuple[Line, ...]
    entity: str = ""
    """Whose signal this is: the suspect's id, or "symptom on N parts" for a symptom panel."""
    symptom: bool = False
    band: tuple[float, float] | None = None
    """The normal band (:data:`BAND_PCT` of the samples before the fault); None: too few samples."""


@dataclass(frozen=True)
class PhaseTimeline:
    """Median seconds per phase per step, and each rank's step time (NaN where it has none)."""

    steps: I64
    phase_median_s: dict[str, list[float]]
    ranks: I64
    rank_step_s: F64
    step_start_s: F64
    """When each step began (its earliest span), to mark clock times on the step axis."""


@dataclass(frozen=True)
class RcaData:
    job: str
    cluster: str
    window: Window
    sla_id: str | None
    sla_lines: tuple[Line, ...]
    phases: PhaseTimeline | None
    phases_note: str
    """Why ``phases`` is None (no spans, no step numbers)."""
    incidents: list[Incident]
    suspect: Incident | None
    hardware: tuple[Panel, ...]
    heatmap: Heatmap | None
    ledger: JobLedger | None
    sla_of: dict[str, str | None]
    """Each impacted job's SLA (the impact matrix)."""
    sla_threshold_s: float | None = None
    """The latency above which the rule pack's SLA rule fires (None: no such rule)."""


def rca_data(diag: Diagnosis, store: Store, inventory: Inventory, job: str, sla_id: str | None) -> RcaData:
    """Everything the report shows about ``job`` in the diagnosis's window."""
    win = diag.window
    incidents = [i for i in diag.incidents if job in i.impact.jobs or i.root_id == job]
    suspect = max(incidents, key=lambda i: i.confidence, default=None)
    sla = sla_id or inventory.jobs[job].sla_id
    phases, note = _phases(store, job, win)
    ledger = diag.results.ledger
    jobs = sorted({j for inc in incidents for j in inc.impact.jobs if j in inventory.jobs})
    return RcaData(job, inventory.cluster, win, sla, _sla_lines(store, sla, win), phases, note, incidents, suspect,
                   _hardware(store, inventory, suspect, win), diag.results.fabric.heatmap if diag.results.fabric else None,
                   next((j for j in ledger.jobs if j.job_id == job), None) if ledger else None,
                   {j: inventory.jobs[j].sla_id for j in jobs}, sla_threshold(load_rules(None)))


def sla_threshold(rules: RuleSet) -> float | None:
    """The lowest ``sla_latency > X`` of the rules (the line a person checks the SLA plot against)."""
    bars = [c.threshold for r in rules.rules for c in r.conditions
            if c.kind == "metric" and c.name == "sla_latency" and c.op in (">", ">=")]
    return min(bars) if bars else None


def _sla_lines(store: Store, sla: str | None, win: Window) -> tuple[Line, ...]:
    if not sla:
        return ()
    series = store.series(SLA_METRIC, entity_ids=[sla], start=win.start, end=win.end)
    return tuple(Line(s.key.entity_id or sla, s.ts, s.values) for s in series)


def _phases(store: Store, job: str, win: Window) -> tuple[PhaseTimeline | None, str]:
    frame = store.spans(job_id=job, start=win.start, end=win.end)
    if len(frame) == 0:
        return None, "No training spans for this job in the window."
    steps = frame.step[frame.step >= 0]
    if len(steps) == 0:
        return None, "Spans carry no step numbers."
    uniq = np.unique(steps)
    medians: dict[str, list[float]] = {}
    for phase in PHASES:
        sel = frame.name == phase
        if sel.any():
            dur, st = frame.end_s[sel] - frame.start_s[sel], frame.step[sel]
            medians[phase] = [float(np.median(dur[st == s])) if (st == s).any() else 0.0 for s in uniq]
    step_sel = frame.name == "train_step"
    ranks = np.unique(frame.rank[step_sel & (frame.rank >= 0)])
    z = np.full((len(ranks), len(uniq)), np.nan)
    r_index = {int(r): i for i, r in enumerate(ranks)}
    s_index = {int(s): i for i, s in enumerate(uniq)}
    for r, s, a, b in zip(frame.rank[step_sel], frame.step[step_sel], frame.start_s[step_sel],
                          frame.end_s[step_sel], strict=True):
        if int(r) in r_index and int(s) in s_index:
            z[r_index[int(r)], s_index[int(s)]] = b - a
    begun = np.array([float(frame.start_s[frame.step == s].min()) for s in uniq], dtype=np.float64)
    return PhaseTimeline(uniq.astype(np.int64), medians, ranks.astype(np.int64), z, begun), ""


def _hardware(store: Store, inventory: Inventory, inc: Incident | None, win: Window) -> tuple[Panel, ...]:
    if inc is None:
        return ()
    panels = [p for metric in HW_METRICS.get(inc.root_kind, ())
              if (p := _panel(store, metric, [inc.root_id], inc.root_id, inc.start, win))]
    parts: dict[str, list[str]] = {}
    for eid in sorted({s.entity_id for s in inc.signals} | inc.symptom_ids):
        kind = inventory.kind_of(eid)
        if eid != inc.root_id and kind is not None and kind in SYMPTOM_METRICS:
            parts.setdefault(kind, []).append(eid)
    for part, ids in parts.items():
        for metric in SYMPTOM_METRICS[part]:
            where = ids[0] if len(ids) == 1 else f"{len(ids)} {part.replace('_', ' ')}s"
            p = _panel(store, metric, ids[:MAX_SYMPTOM_PARTS], f"symptom on {where}", inc.start, win)
            if p:
                panels.append(replace(p, symptom=True))
    return tuple(panels)


def _panel(store: Store, metric: str, ids: list[str], entity: str, fault_s: float, win: Window) -> Panel | None:
    counter = metric in COUNTERS
    read = store.rate if counter else store.series
    series = read(metric, entity_ids=ids, start=win.start, end=win.end)
    if not series:
        return None
    many = len({s.key.entity_id for s in series}) > 1
    lines = tuple(Line("/".join([*([s.key.entity_id or ""] if many else []),
                                 *(f"{k}={v}" for k, v in s.key.labels if k in ("severity", "port", "nic"))])
                       or metric, s.ts, s.values) for s in series)
    return Panel(metric, counter, lines, entity, band=normal_band(lines, fault_s))


def normal_band(lines: tuple[Line, ...], fault_s: float) -> tuple[float, float] | None:
    """The 5th..95th percentile of every finite sample before ``fault_s`` (at least 5 of them)."""
    before = np.concatenate([ln.values[(ln.ts < fault_s) & np.isfinite(ln.values)] for ln in lines])
    if before.size < 5:
        return None
    lo, hi = np.percentile(before, BAND_PCT)
    return float(lo), float(hi)
