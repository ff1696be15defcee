"""Probabilities learnt from the cluster's own history, shrunk toward the category's prior.

Each is a Beta-Binomial posterior: with prior Beta(a, b) and ``s`` successes in ``n`` trials of the
history, the probability the next one succeeds is ``(a + s) / (a + b + n)``. The trials:

* clears by itself: past incidents of the category that ended with no executed remediation on
  their entity between their start and end, out of those that ended;
* escalates: past incidents of the category followed, within the horizon, by an incident of a
  harder category (``ESCALATES_TO``) on the same entity;
* a reset fixes it: executed GPU resets (or reboots of the GPU's node) during an incident of the
  category, not followed by another one on that GPU within the repeat window (resets whose window
  has not passed yet are not counted);
* a restart fixes it: executed ``reschedule_job`` of a job of such an incident, same test on the job.

The mean time to clear is shrunk the same way: ``(k0·τ0 + Σ d) / (k0 + s)`` with one prior
pseudo-episode of the prior's length ``τ0`` and the durations ``d`` of the ``s`` self-cleared ones.
Given the fault has already lasted ``e`` seconds, P(clears) becomes
``p·e^(-e/τ) / (p·e^(-e/τ) + 1 - p)`` (Bayes with exponential clearing times).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from suanli.analysis.decisions.config import ESCALATES_TO, GENERIC_PRIOR, Beta, DecisionConfig
from suanli.analysis.decisions.model import IncidentFacts, Probabilities
from suanli.store.history import IncidentRecord, RemediationRecord

__all__ = ["beta_mean", "probabilities", "survived"]

RESETS: frozenset[str] = frozenset({"reset_gpu", "reboot_node"})


def beta_mean(prior: Beta, successes: int, trials: int) -> float:
    a, b = max(prior[0], 1e-9), max(prior[1], 1e-9)
    return (a + successes) / (a + b + trials)


def survived(p: float, lasted_s: float, mean_s: float) -> float:
    """P(clears by itself) given it has not after ``lasted_s`` (exponential clearing times)."""
    keep = p * math.exp(-max(lasted_s, 0.0) / max(mean_s, 1e-9))
    return keep / (keep + 1.0 - p) if keep + 1.0 - p > 0 else 0.0


def _remediated(inc: IncidentRecord, rems: Iterable[RemediationRecord]) -> bool:
    end = inc.end_s if inc.end_s is not None else math.inf
    return any(r.executed and (r.incident_id == inc.incident_id or
                               (r.entity_id in (inc.entity_id, inc.node) and inc.start_s <= r.time_s <= end))
               for r in rems)


def _past(facts: IncidentFacts) -> list[IncidentRecord]:
    return [i for i in facts.history.incidents if i.category == facts.category
            and i.incident_id != facts.incident_id and i.start_s < facts.now_s]


def _clear(facts: IncidentFacts, prior: Beta, tau0: float) -> tuple[float, float, str]:
    ended = [i for i in _past(facts) if i.end_s is not None and i.end_s <= facts.now_s]
    rems = facts.history.remediations
    cleared = [i for i in ended if not _remediated(i, rems)]
    p = beta_mean(prior, len(cleared), len(ended))
    tau = (tau0 + sum(max(0.0, (i.end_s or i.start_s) - i.start_s) for i in cleared)) / (1 + len(cleared))
    return p, tau, (f"P(clears by itself) {p:.2f}: prior Beta({prior[0]:g}, {prior[1]:g}) + {len(cleared)} of "
                    f"{len(ended)} past {facts.category} incidents cleared with no action; typical episode "
                    f"{tau / 60:.0f} min")


def _escalate(facts: IncidentFacts, prior: Beta, horizon_s: float) -> tuple[float, str]:
    harder = ESCALATES_TO.get(facts.category, frozenset())
    past = [i for i in _past(facts) if i.start_s + horizon_s <= facts.now_s]
    later = [i for i in facts.history.incidents if i.category in harder]
    hits = sum(1 for i in past if any(j.entity_id == i.entity_id and i.start_s < j.start_s <= i.start_s + horizon_s
                                      for j in later))
    p = beta_mean(prior, hits, len(past))
    return p, (f"P(crashes its job within {horizon_s / 3600:g} h if left) {p:.2f}: prior "
               f"Beta({prior[0]:g}, {prior[1]:g}) + {hits} of {len(past)} past ones escalated")


def _fixes(facts: IncidentFacts, prior: Beta, kinds: frozenset[str], what: str, window_s: float) -> tuple[float, str]:
    by_id = {i.incident_id: i for i in facts.history.incidents}
    trials = fixed = 0
    for r in facts.history.remediations:
        inc = by_id.get(r.incident_id or "")
        if not r.executed or r.kind not in kinds or inc is None or inc.category != facts.category:
            continue
        if r.time_s + window_s > facts.now_s:
            continue                                   # too recent to tell
        trials += 1
        again = any(j.category == facts.category and j.incident_id != inc.incident_id
                    and (j.entity_id == inc.entity_id or (inc.entity_kind == "job" and bool(set(j.jobs) & set(inc.jobs))))
                    and r.time_s < j.start_s <= r.time_s + window_s for j in facts.history.incidents)
        fixed += 0 if again else 1
    p = beta_mean(prior, fixed, trials)
    return p, f"P({what} fixes it) {p:.2f}: prior Beta({prior[0]:g}, {prior[1]:g}) + {fixed} of {trials} past ones held"


def probabilities(facts: IncidentFacts, cfg: DecisionConfig) -> Probabilities:
    prior = cfg.priors.get(facts.category, GENERIC_PRIOR)
    lines: list[str] = [] if facts.category in cfg.priors else [
        f"no prior for category {facts.category!r}: the generic one is used"]
    p_clear, tau, line = _clear(facts, prior.clear, prior.clear_mean_s)
    lasted = max(0.0, facts.now_s - facts.onset_s)
    p_now = survived(p_clear, lasted, tau)
    lines.append(line + (f"; {p_now:.2f} given {lasted / 60:.0f} min so far" if lasted > 0 else ""))
    p_esc, line = _escalate(facts, prior.escalate, cfg.horizon_s)
    lines.append(line)
    p_reset, line = _fixes(facts, prior.reset_fix, RESETS, "a GPU reset", cfg.repeat_window_s)
    lines.append(line)
    p_restart, line = _fixes(facts, prior.restart_fix, frozenset({"reschedule_job"}), "a restart",
                             cfg.repeat_window_s)
    lines.append(line)
    return Probabilities(p_now, tau, p_esc, p_reset, p_restart, p_clear >= cfg.may_clear_at, tuple(lines))
