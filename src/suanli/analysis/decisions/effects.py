"""What each rule-pack action does to the running jobs, as an :class:`Effect` to cost.

| action | effect |
| --- | --- |
| ``reschedule_job`` (target a job) | restart it from its last checkpoint without the suspect node(s); needs their GPUs from the spares; a job-level fault restarts in place |
| ``drain_node`` (target a node) | scope ``node``: every job with ranks there restarts without it, its healthy GPUs idle until the repair; for a fault on one GPU also scope ``gpu``: drain only the pods on that GPU (by UUID); the GPUs of those pods need spares |
| ``retire_gpu`` (the suspect GPU) | as the per-GPU drain: its pod continues on spare GPUs |
| ``reset_gpu`` (the suspect GPU) | its jobs restart in place after the reset; fixes with the posterior P(a reset fixes it) |
| ``reboot_node`` (the suspect node) | every job with ranks there restarts in place after the reboot; fixes as a reset does (a reboot resets its GPUs) |
| ``mark_degraded``, ``notify``, ``open_ticket``, anything else | changes nothing for the running jobs: costed as staying |

An exclusion (reschedule, drain, retire) fixes the degradation for sure when the fault is in what
it excludes, unless history points at software (then it fixes nothing); a restart in place fixes
a job-level fault with the posterior P(a restart fixes it); storage is not left by rescheduling.
"""

from __future__ import annotations

from suanli.analysis.decisions.config import DecisionConfig
from suanli.analysis.decisions.costs import Effect
from suanli.analysis.decisions.model import AllowedAction, IncidentFacts, Probabilities
from suanli.analysis.decisions.resolve import Job, Resolved

__all__ = ["effects_of"]

NO_EFFECT = ("mark_degraded", "notify", "open_ticket")


def _idle_price(res: Resolved, cfg: DecisionConfig) -> float:
    prices = sorted(j.price for j in res.jobs)
    return prices[len(prices) // 2] if prices else cfg.default_gpu_hour_price


def _exclusion_fix(facts: IncidentFacts, points_at: str | None) -> float:
    if points_at == "software" or not (facts.suspect.nodes or facts.suspect.gpu_id):
        return 0.0
    return 1.0


def _reschedule(a: AllowedAction, facts: IncidentFacts, res: Resolved, probs: Probabilities,
                points_at: str | None, cfg: DecisionConfig) -> list[Effect]:
    job = next((j for j in res.jobs if j.job_id == a.target and j.degraded), None)
    if job is None:
        return [Effect("none", f"{a.target} is not behind this fault")]
    if facts.root_kind == "job":
        return [Effect("job", f"restart {job.job_id} in place", (job,), cfg.requeue_s, (0,), probs.restart_fix)]
    fix = _exclusion_fix(facts, points_at)
    where = ", ".join(facts.suspect.nodes) or facts.root_id
    need = job.on_suspect if facts.suspect.nodes else 0
    label = f"restart {job.job_id} without {where}" if fix else f"restart {job.job_id} (it would meet the fault again)"
    return [Effect("job", label, (job,), cfg.requeue_s, (need,), fix)]


def _gpu_jobs(res: Resolved) -> tuple[Job, ...]:
    return tuple(j for j in res.jobs if j.degraded)


def _drain(a: AllowedAction, facts: IncidentFacts, res: Resolved, points_at: str | None,
           cfg: DecisionConfig) -> list[Effect]:
    price = _idle_price(res, cfg) * cfg.idle_gpu_value / 3600.0
    on_node = a.target in facts.suspect.nodes
    fix = _exclusion_fix(facts, points_at) if on_node else 0.0
    jobs = tuple(j for j in res.jobs if on_node and j.on_suspect > 0)
    healthy = res.node_gpus - (1 if facts.suspect.gpu_id else 0)
    out = [Effect("node", f"drain {a.target}", jobs, cfg.requeue_s, tuple(j.on_suspect for j in jobs), fix,
                  max(healthy, 0) * price)]
    if facts.suspect.gpu_id and on_node:
        gj = _gpu_jobs(res)
        moving = max((j.pod_gpus for j in gj), default=1)
        label = f"drain only the pods on {facts.suspect.gpu_id}" + (f" ({moving} GPUs move)" if moving > 1 else "")
        out.append(Effect("gpu", label, gj, cfg.pod_replace_s, tuple(j.pod_gpus for j in gj), fix))
    return out


def _gpu_action(a: AllowedAction, facts: IncidentFacts, res: Resolved, probs: Probabilities,
                points_at: str | None, cfg: DecisionConfig) -> list[Effect]:
    if facts.suspect.gpu_id is None or a.target not in (facts.suspect.gpu_id, facts.suspect.gpu_uuid):
        return [Effect("none", f"{a.target} is not the suspect GPU")]
    gj = _gpu_jobs(res)
    if a.action == "reset_gpu":
        return [Effect("gpu", f"reset {facts.suspect.gpu_id}", gj, cfg.gpu_reset_s, tuple(0 for _ in gj),
                       probs.reset_fix)]
    return [Effect("gpu", f"retire {facts.suspect.gpu_id}, its pod on spare GPUs", gj, cfg.pod_replace_s,
                   tuple(j.pod_gpus for j in gj), _exclusion_fix(facts, points_at))]


def _reboot(a: AllowedAction, facts: IncidentFacts, res: Resolved, probs: Probabilities,
            cfg: DecisionConfig) -> list[Effect]:
    if a.target not in facts.suspect.nodes:
        return [Effect("none", f"{a.target} is not the suspect node")]
    jobs = tuple(j for j in res.jobs if j.on_suspect > 0)
    return [Effect("node", f"reboot {a.target}", jobs, cfg.node_reboot_s, tuple(0 for _ in jobs), probs.reset_fix)]


def effects_of(a: AllowedAction, facts: IncidentFacts, res: Resolved, probs: Probabilities,
               points_at: str | None, cfg: DecisionConfig) -> list[Effect]:
    """The ways ``a`` can be carried out (one, or node and per-GPU scope for a drain)."""
    if a.action == "reschedule_job":
        return _reschedule(a, facts, res, probs, points_at, cfg)
    if a.action == "drain_node":
        return _drain(a, facts, res, points_at, cfg)
    if a.action in ("retire_gpu", "reset_gpu"):
        return _gpu_action(a, facts, res, probs, points_at, cfg)
    if a.action == "reboot_node":
        return _reboot(a, facts, res, probs, cfg)
    if a.action in NO_EFFECT:
        return [Effect("none", "changes nothing for the running jobs")]
    return [Effect("none", f"no cost model for {a.action!r}: counted as staying")]
