"""Inputs made usable: every unknown, non-finite or negative value is replaced by its documented
default and said so in one line; out-of-range values are clipped (also said). Nothing downstream
ever sees None or NaN."""

from __future__ import annotations

import math
from dataclasses import dataclass

from suanli.analysis.decisions.config import DecisionConfig
from suanli.analysis.decisions.model import Capacity, IncidentFacts, JobFacts

__all__ = ["STALLING", "Job", "Resolved", "resolve"]

#: Categories whose jobs stop stepping: an unmeasured pace is counted as a stall, not as healthy.
STALLING: frozenset[str] = frozenset({"gpu_lost", "nic_down", "collective_hang", "gpu_memory_failure", "oom"})

MAX_GPUS = 10_000_000
MAX_PRICE = 1e6
MAX_S = 1e8


@dataclass(frozen=True)
class Job:
    """A job with every number known: pace ``f`` (healthy step / current step, 0 when stalled),
    ``u0`` work since the checkpoint and ``interval`` between checkpoints (healthy seconds)."""

    job_id: str
    gpus: int
    price: float
    f: float
    u0: float
    interval: float
    restart_s: float
    elastic: bool
    on_suspect: int
    degraded: bool
    pod_gpus: int
    """GPUs a per-GPU drain moves (those sharing the suspect GPU's pods)."""

    @property
    def dollars_per_s(self) -> float:
        """What one second of the whole job costs."""
        return self.gpus * self.price / 3600.0

    @property
    def rate(self) -> float:
        """Money lost per second while degraded: ``(1 - f) × GPUs × price``."""
        return (1.0 - self.f) * self.dollars_per_s if self.degraded else 0.0

    def progress_at(self, t: float) -> float:
        """Work since the last checkpoint after ``t`` more seconds at the current pace (a
        checkpoint every ``interval`` of work resets it)."""
        done = self.u0 + self.f * max(t, 0.0)
        cycles = math.floor(done / self.interval + 1e-9)     # a checkpoint reached exactly resets to 0
        return max(0.0, done - cycles * self.interval)

    def redo_s(self, t: float) -> float:
        """Work a restart after ``t`` more seconds throws away: the work since the checkpoint, unless
        the job has stalled (then it is lost whatever is done, so no option pays for it)."""
        return self.progress_at(t) if self.f > 0.0 else 0.0

    def to_checkpoint_s(self) -> float | None:
        """Seconds until the next checkpoint completes at the current pace; None when stalled."""
        if self.f <= 0.0:
            return None
        return (self.interval - self.u0) / self.f


@dataclass(frozen=True)
class Resolved:
    jobs: tuple[Job, ...]
    spare_gpus: int
    node_gpus: int
    currency: str
    assumptions: tuple[str, ...]


class _Notes:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def num(self, value: float | int | None, what: str, default: float, hi: float, lo: float = 0.0) -> float:
        x = _as_float(value)
        if x is None or not math.isfinite(x) or x < lo:
            shown = "unknown" if value is None else f"unusable ({value!r})"
            self.lines.append(f"{what}: {shown} -> default {default:g}")
            return default
        if x > hi:
            self.lines.append(f"{what}: {x:g} is beyond {hi:g}, clipped")
            return hi
        return x


def _as_float(value: float | int | None) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except OverflowError:                  # an int beyond float range
        return math.inf


def _pace(j: JobFacts, category: str, n: _Notes) -> float:
    if j.stalled:
        return 0.0
    healthy = j.healthy_step_s
    current = j.current_step_s
    if _usable_step(healthy) and _usable_step(current) and healthy is not None and current is not None:
        return min(1.0, healthy / current)
    if not j.degraded:
        return 1.0
    if category in STALLING:
        n.lines.append(f"pace of {j.job_id}: unknown -> stalled (a {category} stops its job)")
        return 0.0
    n.lines.append(f"pace of {j.job_id}: unknown -> counted as not slowed")
    return 1.0


def _usable_step(x: float | None) -> bool:
    return x is not None and math.isfinite(x) and 1e-6 <= x <= MAX_S


def _job(j: JobFacts, category: str, node_gpus: int, n: _Notes, cfg: DecisionConfig) -> Job:
    gpus = int(n.num(j.gpus, f"GPUs of {j.job_id}", float(node_gpus), MAX_GPUS, lo=1.0))
    price = n.num(j.gpu_hour_price, f"GPU-hour price of {j.job_id}", cfg.default_gpu_hour_price, MAX_PRICE)
    interval = n.num(j.checkpoint_interval_s, f"checkpoint interval of {j.job_id} (s of work)",
                     cfg.default_checkpoint_interval_s, MAX_S, lo=1.0)
    u0 = n.num(j.progress_since_checkpoint_s, f"work since the last checkpoint of {j.job_id} (s)",
               interval / 2.0, MAX_S)
    restart = n.num(j.restart_s, f"restart time of {j.job_id} (s)", cfg.default_restart_s, MAX_S)
    if j.elastic is None:
        n.lines.append(f"elastic {j.job_id}: unknown -> {'yes' if cfg.default_elastic else 'no'}")
    on_suspect = int(n.num(j.gpus_on_suspect, f"GPUs of {j.job_id} on the suspect node(s)",
                           float(min(gpus, node_gpus)), MAX_GPUS))
    pod_gpus = 1 if j.gpus_in_suspect_pods is None else int(
        n.num(j.gpus_in_suspect_pods, f"GPUs of {j.job_id} in the suspect GPU's pods", 1.0, MAX_GPUS, lo=1.0))
    return Job(j.job_id, gpus, price, _pace(j, category, n), min(u0, interval), interval, restart,
               cfg.default_elastic if j.elastic is None else j.elastic, min(on_suspect, gpus), j.degraded,
               min(pod_gpus, gpus))


def _spares(c: Capacity, node_gpus: int, n: _Notes, cfg: DecisionConfig) -> int:
    if c.spare_gpus is not None or c.spare_nodes is None:
        return int(n.num(c.spare_gpus, "spare GPUs", float(cfg.default_spare_gpus), MAX_GPUS))
    return int(n.num(c.spare_nodes, "spare nodes", 0.0, MAX_GPUS)) * node_gpus


def resolve(facts: IncidentFacts, cfg: DecisionConfig) -> Resolved:
    n = _Notes()
    node_gpus = 8
    if facts.suspect.nodes or facts.suspect.node_gpus is not None:
        node_gpus = int(n.num(facts.suspect.node_gpus, "GPUs per suspect node", 8.0, 1e4, lo=1.0))
    jobs = tuple(_job(j, facts.category, node_gpus, n, cfg) for j in facts.jobs)
    currency = facts.currency or cfg.default_currency
    if not facts.currency:
        n.lines.append(f"currency: unknown -> {currency}")
    return Resolved(jobs, _spares(facts.capacity, node_gpus, n, cfg), node_gpus, currency, tuple(n.lines))
