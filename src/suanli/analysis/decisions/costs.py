"""Expected cost over the horizon of staying degraded, and of taking an action after a delay.

Notation (docs/decisions.md has the derivation): per job ``r_j = (1 - f_j)·G_j·p_j`` lost per
second while degraded; the fault clears by itself with probability ``q`` after an exponential time
of mean ``τ``, so over ``t`` seconds the expected time still degraded is
``M(t) = q·τ·(1 - e^(-t/τ)) + (1 - q)·t`` and it is still there with probability
``S(t) = q·e^(-t/τ) + 1 - q``. If it does not clear, it crashes its jobs with probability ``e``
within the horizon ``H`` (uniformly in time), each crash costing ``C_j = G_j·p_j·(I_j/2 + R_j + Q)``.

* stay: ``Σ r_j·M(H) + (1 - q)·e·Σ C_j``.
* act at ``t`` with an effect that restarts the jobs ``A``: the other jobs as in staying, and for
  ``A``: ``Σ r_j·M(t) + (1 - q)·e·(t/H)·Σ C_j + S(t)·[Σ B_j(t) + (ρ + Σ z_j)·(H - t)]``, where
  ``B_j(t) = G_j·p_j·(u_j(t) + R_j + X)`` (work since the checkpoint at ``t`` redone, none for a
  stalled job whose work is lost anyway; restart; the action's own time ``X``), ``z_j`` the job's loss rate afterwards (0 with a spare; the lost
  GPUs' share if it shrinks; the whole job if it stalls; plus ``(1 - φ)·r_j`` when the action
  fixes the fault only with probability ``φ``) and ``ρ`` the healthy GPUs it leaves idle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from suanli.analysis.decisions.config import DecisionConfig
from suanli.analysis.decisions.resolve import Job

__all__ = ["Clearing", "Effect", "act_cost", "crash_cost", "stay_cost"]


@dataclass(frozen=True)
class Clearing:
    q: float
    """P(clears by itself) from now on."""
    tau_s: float
    escalate: float

    def degraded_s(self, t: float) -> float:
        """``M(t)``: expected seconds still degraded within the next ``t``."""
        t = max(t, 0.0)
        return self.q * self.tau_s * -math.expm1(-t / self.tau_s) + (1.0 - self.q) * t

    def still_there(self, t: float) -> float:
        """``S(t)``: P(not cleared after ``t`` more seconds)."""
        return self.q * math.exp(-max(t, 0.0) / self.tau_s) + 1.0 - self.q


@dataclass(frozen=True)
class Effect:
    """What an action does: which jobs it restarts, what each needs from the spares, how likely
    it ends the degradation, what it leaves idle."""

    scope: str
    label: str
    jobs: tuple[Job, ...] = ()
    extra_s: float = 0.0
    need_gpus: tuple[int, ...] = ()
    fix: float = 0.0
    idle_per_s: float = 0.0

    @property
    def acts(self) -> bool:
        return self.scope != "none"


def crash_cost(job: Job, cfg: DecisionConfig) -> float:
    """An unplanned crash: on average half a checkpoint interval of work, a restart, a requeue."""
    return job.dollars_per_s * (job.interval / 2.0 + job.restart_s + cfg.requeue_s) if job.degraded else 0.0


def stay_cost(jobs: tuple[Job, ...], clearing: Clearing, horizon_s: float, cfg: DecisionConfig) -> float:
    persist = 1.0 - clearing.q
    return sum(j.rate * clearing.degraded_s(horizon_s) + persist * clearing.escalate * crash_cost(j, cfg)
               for j in jobs)


def after_rates(effect: Effect, spare_gpus: int) -> tuple[tuple[float, ...], tuple[str, ...]]:
    """Per restarted job: its loss rate after the action, and how it came back (spares are used
    in order; a job without enough shrinks if elastic, else stalls until the repair)."""
    left = spare_gpus
    rates, how = [], []
    for job, need in zip(effect.jobs, effect.need_gpus, strict=True):
        unfixed = (1.0 - effect.fix) * job.rate
        if need <= left:
            left -= need
            rates.append(unfixed)
            how.append("spare" if need else "in place")
        elif job.elastic:
            rates.append(unfixed + (need - left) * job.price / 3600.0)
            how.append(f"shrinks by {need - left} GPUs")
            left = 0
        else:
            rates.append(job.dollars_per_s)
            how.append(f"stalls (needs {need} spare GPUs, {left} free)")
    return tuple(rates), tuple(how)


def act_cost(effect: Effect, delay_s: float, all_jobs: tuple[Job, ...], clearing: Clearing, horizon_s: float,
             spare_gpus: int, cfg: DecisionConfig) -> tuple[float, float, float]:
    """(expected cost, one-time cost, loss rate per second afterwards) of acting after ``delay_s``."""
    t = min(max(delay_s, 0.0), horizon_s)
    acted = {j.job_id for j in effect.jobs}
    others = tuple(j for j in all_jobs if j.job_id not in acted)
    rest = stay_cost(others, clearing, horizon_s, cfg)
    persist = 1.0 - clearing.q
    waiting = sum(j.rate * clearing.degraded_s(t) + persist * clearing.escalate * (t / horizon_s) * crash_cost(j, cfg)
                  for j in effect.jobs)
    once = sum(j.dollars_per_s * (j.redo_s(t) + j.restart_s + effect.extra_s) for j in effect.jobs)
    rates, _ = after_rates(effect, spare_gpus)
    after = sum(rates) + effect.idle_per_s
    total = rest + waiting + clearing.still_there(t) * (once + after * (horizon_s - t))
    return total, once, after
