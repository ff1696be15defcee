"""The efficiency ledger: per job MFU, goodput, where the time went, what it cost, when it ends.

``analyze(store, inventory, config)`` is the thin adapter: it reads each inventory job's spans,
power and utilisation series through the Store protocol and hands arrays to the pure functions
of :mod:`suanli.analysis.ledger.goodput`, :mod:`suanli.analysis.ledger.economics` and
:mod:`suanli.analysis.ledger.job`. Definitions: docs/ledger.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from suanli.analysis.findings import Finding
from suanli.analysis.ledger.economics import EconomicsConfig, energy_j, low_util_s
from suanli.analysis.ledger.flops import FlopsFormula
from suanli.analysis.ledger.goodput import GoodputConfig, split_job
from suanli.analysis.ledger.job import JobInputs, JobLedger, build_job_ledger
from suanli.analysis.ledger.peaks import peak_flops_per_s
from suanli.analysis.result import EntityValues
from suanli.analysis.window import Window, resolve_window
from suanli.errors import InputError
from suanli.inventory.catalog import Inventory
from suanli.inventory.model import Job
from suanli.store.api import SpanFrame, Store

__all__ = ["TABLE_COLUMNS", "JobLedger", "LedgerConfig", "LedgerResult", "analyze", "ledger_for_job"]

F64 = npt.NDArray[np.float64]

TABLE_COLUMNS: tuple[str, ...] = (
    "job", "MFU", "HFU", "goodput", "compute", "comm.", "data", "ckpt", "failures", "other",
    "$/eff. PFLOP", "energy kWh", "waste", "finish (P10-P90)", "cost to finish",
)


@dataclass(frozen=True)
class LedgerConfig:
    """Everything the ledger can be tuned with; each part documents its own fields."""

    formula: FlopsFormula = "palm"
    """FLOPs-per-token convention when spans carry no ``train.model_flops``: ``palm``
    (6N + 12·L·H·Q·T) or ``megatron`` (Narayanan et al. 2021)."""
    goodput: GoodputConfig = field(default_factory=GoodputConfig)
    """How spans become the time split."""
    economics: EconomicsConfig = field(default_factory=EconomicsConfig)
    """Waste threshold, forecast window and interruption prior."""
    power_metric: str = "DCGM_FI_DEV_POWER_USAGE"
    """Power series (W) integrated into the energy ledger."""
    util_metric: str = "DCGM_FI_DEV_GPU_UTIL"
    """Utilisation series (%) behind the GPU waste rate."""


@dataclass
class LedgerResult:
    """The ledger of every job with spans, plus (optional) findings."""

    jobs: list[JobLedger] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """``job: why`` for inventory jobs that could not be ledgered (no spans, unknown peak)."""

    def efficiency_json(self) -> dict[str, Any]:
        """The ``efficiency`` section of spec/diagnosis.md (plus extra keys per job)."""
        return {"jobs": [j.to_json() for j in self.jobs]}

    def values(self) -> EntityValues:
        """Per job values the rules may read: mfu, goodput, step_time_s, and the six shares."""
        out: dict[str, dict[str, float]] = {}
        for j in self.jobs:
            vals = {"goodput": j.goodput, "step_time_s": j.split.median_step_s,
                    **{f"share_{k}": v for k, v in j.time_split().items()}}
            if j.mfu is not None:
                vals["mfu"] = j.mfu
            out[j.job_id] = {k: float(v) for k, v in vals.items() if np.isfinite(v)}
        return out

    def table_rows(self) -> list[tuple[str, ...]]:
        """One row of strings per job, in ``TABLE_COLUMNS`` order (for a Rich table)."""
        rows = []
        for j in self.jobs:
            s = j.time_split()
            fc = j.forecast
            cpp = j.cost_per_effective_pflop()
            rows.append((
                j.job_id, _pct(j.mfu), _pct(j.hfu), _pct(j.goodput),
                *(_pct(s[k]) for k in ("compute", "communication", "data_loading", "checkpoint",
                                       "failures", "other")),
                "-" if cpp is None else f"{cpp:.4g}",
                "-" if j.energy_j is None else f"{j.energy_j / 3.6e6:.1f}",
                _pct(j.waste_rate),
                "-" if fc is None else f"{_day(fc.finish_s[0])} .. {_day(fc.finish_s[2])}",
                "-" if fc is None else f"{fc.cost[1]:,.0f}"))
        return rows


def _pct(x: float | None) -> str:
    return "-" if x is None or not np.isfinite(x) else f"{100 * x:.1f}%"


def _day(ts: float) -> str:
    from suanli.timefmt import to_rfc3339
    return (to_rfc3339(ts) or "-")[:16].replace("T", " ")


def _job_gpus(job: Job, steps: SpanFrame) -> list[str]:
    gpus = {r.gpu for r in job.ranks}
    if not gpus:
        gpus = {g for g in steps.gpu_id.tolist() if isinstance(g, str)}
    return sorted(gpus)


def _peak_and_price(job: Job, gpus: Sequence[str], inv: Inventory) -> tuple[float | None, float | None]:
    peaks: dict[str, float] = {}
    prices: list[float] = []
    for g in gpus:
        gpu = inv.gpus.get(g)
        model = gpu.model if gpu is not None and gpu.model else None
        if model is None and len(inv.gpu_models) == 1:
            model = next(iter(inv.gpu_models))
        if model is not None and model not in peaks:
            try:
                peaks[model] = peak_flops_per_s(model, job.precision, inv.gpu_models)
            except InputError:
                peaks[model] = float("nan")
        price = inv.gpu_price(g) if gpu is not None else None
        if price is not None:
            prices.append(price)
    good = [p for p in peaks.values() if np.isfinite(p)]
    return (float(np.mean(good)) if good else None, float(np.mean(prices)) if prices else None)


def _metric_inputs(store: Store, cfg: LedgerConfig, gpus: list[str], start: float, end: float
                   ) -> tuple[float | None, float | None, float | None]:
    """(energy J, low-utilisation s, observed utilisation s) of the job's GPUs in [start, end]."""
    power = store.series(cfg.power_metric, gpus, start, end) if gpus else []
    energy = sum(energy_j(s.ts, s.values, start, end) for s in power) if power else None
    util = store.series(cfg.util_metric, gpus, start, end) if gpus else []
    if not util:
        return energy, None, None
    pairs = [low_util_s(s.ts, s.values, start, end, cfg.economics.util_idle_pct) for s in util]
    return energy, sum(p[0] for p in pairs), sum(p[1] for p in pairs)


def ledger_for_job(store: Store, inv: Inventory, job: Job, cfg: LedgerConfig, window: Window) -> JobLedger | None:
    """One job's ledger from its spans overlapping ``window``; None when there are none."""
    gp = cfg.goodput
    # the window's steps and their numbers, row for row (a live step reads its window, not the job)
    steps = store.spans(job.id, [gp.step_span], start=window.start, end=window.end, ids=False,
                        places=not job.ranks)                  # the GPUs: the inventory's ranks, else these
    attrs = store.span_numbers(job.id, gp.step_span, ["train.model_flops", "train.tokens"],
                               start=window.start, end=window.end)
    others = store.spans(job.id, [*gp.compute_phases, *gp.comm_phases, *gp.data_phases,
                                  *gp.checkpoint_spans, *gp.init_spans], start=window.start, end=window.end,
                         ids=False, places=False)
    if len(steps) + len(others) == 0:
        return None
    split = split_job(steps, others, gp, attrs["train.model_flops"], attrs["train.tokens"], window_end_s=window.end)
    gpus = _job_gpus(job, steps)
    peak, price = _peak_and_price(job, gpus, inv)
    energy, low_s, seen_s = _metric_inputs(store, cfg, gpus, split.start_s, split.end_s)
    inputs = JobInputs(n_gpus=max(len(gpus), split.n_ranks), peak_flops_per_gpu=peak,
                       price_per_gpu_h=price, energy_j=energy, low_util_s=low_s,
                       util_observed_s=seen_s)
    return build_job_ledger(job, split, inputs, cfg.formula, cfg.economics)


def analyze(store: Store, inventory: Inventory, window: Window | None = None,
            config: LedgerConfig | None = None) -> LedgerResult:
    """The ledger of every inventory job with spans in ``window`` (None: the data's extent)."""
    cfg = config if config is not None else LedgerConfig()
    result = LedgerResult()
    win = resolve_window(store, window)
    for job in inventory.jobs.values():
        led = ledger_for_job(store, inventory, job, cfg, win) if win is not None else None
        if led is None:
            result.skipped.append(f"{job.id}: no spans")
            continue
        if led.mfu is None:
            result.skipped.append(f"{job.id}: no MFU (unknown peak FLOP/s or model FLOPs)")
        result.jobs.append(led)
    return result
