"""One job's ledger from its spans and numbers (pure; the store adapter is suanli.analysis.ledger)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from suanli.analysis.ledger.economics import (
    EconomicsConfig,
    Forecast,
    forecast_finish,
    windowed_rate,
)
from suanli.analysis.ledger.flops import FlopsFormula, flops_per_token
from suanli.analysis.ledger.goodput import JobSplit
from suanli.analysis.median import nanmedian
from suanli.inventory.model import Job
from suanli.timefmt import to_rfc3339

__all__ = ["PRODUCTIVE", "SPEC_SPLIT", "JobInputs", "JobLedger", "build_job_ledger", "hfu_ratio"]

F64 = npt.NDArray[np.float64]

# spec/diagnosis.md time_split key -> the goodput categories it sums.
SPEC_SPLIT: dict[str, tuple[str, ...]] = {
    "compute": ("compute",),
    "communication": ("exposed_communication", "straggler_wait"),
    "data_loading": ("data_loading",),
    "checkpoint": ("checkpoint",),
    "failures": ("failure_downtime", "failure_lost_progress"),
    "other": ("step_other", "init", "idle"),
}

# Goodput as Google's ml-goodput-measurement defines it: the share of wall time in productive,
# preserved training steps (a step not lost to a rollback), whatever the step spent it on; badput
# is the rest (init, checkpoint save/load, failure downtime and lost progress, idle) and data
# stalls inside steps. The compute share (time_split["compute"]) is a different, smaller number.
PRODUCTIVE: tuple[str, ...] = ("compute", "exposed_communication", "straggler_wait", "step_other")


@dataclass(frozen=True)
class JobInputs:
    """What the adapter gathered for one job besides its spans."""

    n_gpus: int
    peak_flops_per_gpu: float | None
    price_per_gpu_h: float | None
    energy_j: float | None = None
    low_util_s: float | None = None
    util_observed_s: float | None = None


@dataclass(frozen=True)
class JobLedger:
    """The efficiency ledger of one job over its observed wall time."""

    job_id: str
    split: JobSplit
    n_gpus: int
    step_flops: F64                      # model FLOPs per productive step (split.steps order)
    step_mfu: F64                        # MFU per productive step
    mfu: float | None                    # model FLOPs of productive steps / (peak x step GPU-time)
    hfu: float | None                    # hardware FLOPs (with recomputation) likewise
    effective_mfu: float | None          # model FLOPs of productive steps / (peak x wall GPU-time)
    goodput: float                       # share of GPU-time in productive steps, data stalls excluded
    tokens: float                        # tokens of productive steps
    cost: float | None                   # GPUs x wall hours x price
    lost_cost: dict[str, float] = field(default_factory=dict)
    energy_j: float | None = None
    waste_rate: float | None = None      # share of GPU time with utilisation under the threshold
    forecast: Forecast | None = None
    flops_source: str = "none"           # "spans", "inventory" or "none"

    @property
    def effective_pflop(self) -> float:
        return float(np.nansum(self.step_flops)) / 1e15

    def time_split(self) -> dict[str, float]:
        """The six spec keys, summing to 1 (0 everywhere for a job without time)."""
        shares = self.split.shares()
        return {k: sum(shares.get(c, 0.0) for c in cats) for k, cats in SPEC_SPLIT.items()}

    def cost_per_effective_pflop(self) -> float | None:
        pf = self.effective_pflop
        return self.cost / pf if self.cost is not None and pf > 0 else None

    def cost_per_useful_gpu_h(self) -> float | None:
        useful_h = self.goodput * self.n_gpus * self.split.wall_s / 3600.0
        return self.cost / useful_h if self.cost is not None and useful_h > 0 else None

    def mfu_timeline(self, points: int = 60) -> list[list[Any]]:
        """MFU over time: ``[[step start RFC 3339, MFU], ...]``, consecutive steps averaged
        (FLOPs over GPU-time) into at most ``points`` bins."""
        st = self.split.steps
        ok = np.isfinite(self.step_mfu)
        if not ok.any():
            return []
        order = np.argsort(st.start_s[ok])
        start = st.start_s[ok][order]
        gpu_s = (st.wall_s * st.n_ranks)[ok][order]
        achieved = (self.step_mfu * st.wall_s * st.n_ranks)[ok][order]
        out: list[list[Any]] = []
        for idx in np.array_split(np.arange(len(start)), min(points, len(start))):
            out.append([to_rfc3339(float(start[idx[0]])),
                        _r(float(achieved[idx].sum() / gpu_s[idx].sum()), 4)])
        return out

    def to_json(self) -> dict[str, Any]:
        fc = self.forecast
        pf = self.effective_pflop
        out: dict[str, Any] = {
            "id": self.job_id, "mfu": _r(self.mfu), "goodput": _r(self.goodput),
            "time_split": {k: _r(v) for k, v in self.time_split().items()},
            "cost_per_effective_pflop": _r(self.cost_per_effective_pflop()),
            "forecast": None if fc is None else {
                "finish": to_rfc3339(fc.finish_s[1]), "cost": _r(fc.cost[1]),
                "finish_p10": to_rfc3339(fc.finish_s[0]), "finish_p90": to_rfc3339(fc.finish_s[2]),
                "cost_p10": _r(fc.cost[0]), "cost_p90": _r(fc.cost[2]),
                "remaining_tokens": _r(fc.remaining_tokens), "tokens_per_s": _r(fc.tokens_per_s),
                "interruptions_per_h": _r(fc.interruptions_per_h)},
            "hfu": _r(self.hfu), "effective_mfu": _r(self.effective_mfu),
            "start": to_rfc3339(self.split.start_s), "end": to_rfc3339(self.split.end_s),
            "gpus": self.n_gpus, "ranks": self.split.n_ranks, "steps": len(self.split.steps.step),
            "median_step_s": _r(self.split.median_step_s), "tokens": _r(self.tokens),
            "effective_pflop": _r(pf), "flops_source": self.flops_source,
            "badput_gpu_h": {k: _r(v / 3600.0) for k, v in self.split.gpu_s.items()},
            "cost": _r(self.cost), "lost_cost": {k: _r(v) for k, v in self.lost_cost.items()},
            "cost_per_useful_gpu_hour": _r(self.cost_per_useful_gpu_h()),
            "energy_kwh": _r(None if self.energy_j is None else self.energy_j / 3.6e6),
            "energy_j_per_effective_pflop": _r(self.energy_j / pf if self.energy_j and pf > 0 else None),
            "gpu_waste_rate": _r(self.waste_rate),
            "interruptions": [[to_rfc3339(a), to_rfc3339(b)] for a, b in self.split.interruptions],
            "mfu_over_time": self.mfu_timeline(),
        }
        return out


def _r(x: float | None, digits: int = 6) -> float | None:
    if x is None or not np.isfinite(x):
        return None
    return float(f"{x:.{digits}g}")


def hfu_ratio(job: Job, formula: FlopsFormula) -> float | None:
    """Hardware over model FLOPs for the job's declared recomputation (None when none declared)."""
    if job.recompute not in ("full", "selective"):
        return None
    model = flops_per_token(job.model, formula)
    hw = flops_per_token(job.model, formula, "full" if job.recompute == "full" else "selective")
    if model and hw and job.model.flops_per_token is None:
        return hw / model
    return 4.0 / 3.0 if job.recompute == "full" else None


def _step_flops(job: Job, split: JobSplit, formula: FlopsFormula) -> tuple[F64, F64, str]:
    """(model FLOPs, tokens) per productive step and where the FLOPs came from."""
    steps = split.steps
    world = max(job.world_size // max(int(job.parallelism.get("dp", 1)), 1), 1)
    tokens = (np.full(len(steps.step), float(job.tokens_per_step)) if job.tokens_per_step
              else steps.tokens / world)
    per_token = flops_per_token(job.model, formula)
    from_shape = tokens * per_token if per_token is not None else np.full(len(tokens), np.nan)
    have = np.isfinite(steps.flops)
    flops = np.where(have, steps.flops, from_shape)
    source = "spans" if have.any() else ("inventory" if per_token is not None else "none")
    return flops.astype(np.float64), tokens.astype(np.float64), source


def build_job_ledger(job: Job, split: JobSplit, inputs: JobInputs, formula: FlopsFormula,
                     econ: EconomicsConfig) -> JobLedger:
    """MFU, goodput, costs and the forecast of one job from its time split."""
    flops, tokens, source = _step_flops(job, split, formula)
    steps = split.steps
    gpu_s_steps = steps.wall_s * steps.n_ranks
    peak = inputs.peak_flops_per_gpu
    ok = np.isfinite(flops)
    step_mfu = flops / (gpu_s_steps * peak) if peak else np.full(len(flops), np.nan)
    mfu = (float(flops[ok].sum() / (gpu_s_steps[ok].sum() * peak))
           if peak and ok.any() and gpu_s_steps[ok].sum() > 0 else None)
    ratio = hfu_ratio(job, formula)
    total_gpu_s = split.wall_s * split.n_ranks
    eff = (float(flops[ok].sum() / (total_gpu_s * peak)) if peak and ok.any() and total_gpu_s > 0
           else None)
    shares = split.shares()
    cost = (inputs.n_gpus * split.wall_s / 3600.0 * inputs.price_per_gpu_h
            if inputs.price_per_gpu_h is not None else None)
    lost = ({k: shares[k] * cost for k in shares if k != "compute"} if cost is not None else {})
    waste = (inputs.low_util_s / inputs.util_observed_s
             if inputs.low_util_s is not None and inputs.util_observed_s else None)
    return JobLedger(
        job_id=job.id, split=split, n_gpus=inputs.n_gpus, step_flops=flops, step_mfu=step_mfu,
        mfu=mfu, hfu=(mfu * ratio if mfu is not None and ratio else mfu), effective_mfu=eff,
        goodput=sum(shares.get(c, 0.0) for c in PRODUCTIVE), tokens=float(np.nansum(tokens)), cost=cost,
        lost_cost=lost, energy_j=inputs.energy_j, waste_rate=waste,
        forecast=_forecast(job, split, tokens, inputs, econ), flops_source=source)


def _forecast(job: Job, split: JobSplit, tokens: F64, inputs: JobInputs,
              econ: EconomicsConfig) -> Forecast | None:
    steps = split.steps
    if not job.target_tokens or not len(steps.step) or inputs.price_per_gpu_h is None:
        return None
    per_step = nanmedian(tokens) if np.isfinite(tokens).any() else 0.0
    done = float(steps.step.max() + 1) * per_step
    w_end = split.end_s
    w_start = max(split.start_s, w_end - econ.forecast_window_s)
    excluded = sum(max(0.0, min(b, w_end) - max(a, w_start)) for a, b in split.interruptions)
    rate, sd = windowed_rate(steps.end_s, tokens, w_start, w_end, econ.forecast_blocks, excluded)
    fail_s = split.gpu_s["failure_downtime"] + split.gpu_s["failure_lost_progress"]
    n_int = len(split.interruptions)
    downtime = fail_s / max(split.n_ranks, 1) / n_int if n_int else None
    return forecast_finish(w_end, job.target_tokens - done, rate, sd, n_int,
                           inputs.n_gpus * split.wall_s / 3600.0, inputs.n_gpus, downtime,
                           inputs.price_per_gpu_h, econ)
