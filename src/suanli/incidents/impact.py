"""What an incident cost: the jobs, SLAs and GPUs behind its root, and the GPU-hours it lost.

Lost GPU-hours of a job over the incident's span [start, end] are measured against the job's own
pace before the fault: with ``b`` the median step time before ``start``, ``n`` the steps that
finished inside the span and ``T`` its length, the job did ``n·b`` seconds worth of healthy work
in ``T`` seconds, so ``(T - n·b) · G / 3600`` GPU-hours were lost (``G`` the job's GPUs; never
below zero). A job that stops stepping loses all of ``T``. The cost is that times the GPU-hour
price of the inventory's GPU model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from suanli.analysis.jobs import step_times
from suanli.incidents.model import Impact, Incident
from suanli.inventory import Inventory
from suanli.store.api import Store

__all__ = ["ImpactConfig", "lost_gpu_hours", "measure_impact"]


@dataclass(frozen=True)
class ImpactConfig:
    min_baseline_steps: int = 3
    """Steps before the onset needed to trust the job's healthy pace; fewer -> no lost-hours estimate."""
    default_gpu_hour_price: float = 2.0
    """Price per GPU-hour when the inventory gives none (USD)."""


def lost_gpu_hours(step_end: np.ndarray, step_s: np.ndarray, start: float, end: float,
                   gpus: int, min_baseline_steps: int = 3) -> float | None:
    """``(T - n·b)·G/3600`` as in the module doc; None when the baseline is too thin."""
    before = step_s[step_end <= start]
    if len(before) < min_baseline_steps or end <= start:
        return None
    baseline = float(np.median(before))
    n_during = int(np.count_nonzero((step_end > start) & (step_end <= end)))
    lost_s = max(0.0, (end - start) - n_during * baseline)
    return lost_s * gpus / 3600.0


def _job_gpus(inventory: Inventory, job_id: str) -> int:
    job = inventory.jobs[job_id]
    return len(job.ranks) or job.world_size


def _price(inventory: Inventory, job_id: str, cfg: ImpactConfig) -> float:
    job = inventory.jobs[job_id]
    for rank in job.ranks:
        spec = inventory.gpu_spec(rank.gpu)
        if spec is not None and spec.gpu_hour_price:
            return float(spec.gpu_hour_price)
    return cfg.default_gpu_hour_price


def measure_impact(inc: Incident, store: Store, inventory: Inventory, window_end: float,
                   config: ImpactConfig = ImpactConfig()) -> Impact:
    topo = inventory.topology
    jobs = {inc.root_id} if inc.root_kind == "job" else set(topo.jobs_behind(inc.root_id))
    jobs &= set(inventory.jobs)
    slas = sorted({s for j in jobs if (s := inventory.jobs[j].sla_id)})
    gpus = sum(_job_gpus(inventory, j) for j in jobs)
    if not jobs and inc.root_kind == "gpu":
        gpus = 1
    lost_total: float | None = None
    cost_total = 0.0
    end = inc.end if inc.end is not None else window_end
    for job in sorted(jobs):
        ends, durs = step_times(store, job)
        lost = lost_gpu_hours(ends, durs, inc.start, end, _job_gpus(inventory, job), config.min_baseline_steps)
        if lost is None:
            continue
        lost_total = (lost_total or 0.0) + lost
        cost_total += lost * _price(inventory, job, config)
    return Impact(tuple(sorted(jobs)), gpus, tuple(slas),
                  None if lost_total is None else round(lost_total, 3),
                  None if lost_total is None else round(cost_total, 2))
