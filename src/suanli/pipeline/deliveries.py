"""From the cost decision to the action runner: how each rule alert's planned action is carried out.

The costs stage ranks each incident's allowed actions, each with its best way (mode, delay, scope;
docs/decisions.md). The runner acts on rule alerts, so each ranked action is handed to the planned
action of the same (action, target) of every rule alert whose actions are the incident's own
(:func:`own_refs`): a drain whose best way is the per-GPU one names the GPU, its UUID and the pods
on it; a deferred one (after the next checkpoint, after a timeout) its delay from now.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from suanli.analysis.decisions import Decided
from suanli.incidents.model import Incident, Signal
from suanli.rules.alerts import Delivery

__all__ = ["Hows", "deliveries", "own_refs"]

Hows = dict[tuple[str, str, str], Delivery]
"""(rule alert key, action, target) -> how to carry it out."""


def _own(inc: Incident, sig: Signal) -> bool:
    """A rule alert whose actions are the incident's: direct, at the root or of its category (a
    dependant's alert would act on the victim)."""
    return sig.source == "rule" and sig.direct and (sig.entity_id == inc.root_id or sig.category == inc.category)


def own_refs(inc: Incident) -> list[str]:
    """The keys of the rule alerts whose planned actions are the incident's, in signal order."""
    return list(dict.fromkeys(s.ref for s in inc.signals if _own(inc, s)))


def _delivery(d: Decided, action: str, mode: str, delay_s: float, scope: str) -> Delivery:
    s, at = d.facts.suspect, d.facts.now_s
    if scope == "gpu" and action == "drain_node" and s.gpu_id is not None:
        return Delivery(mode, delay_s, scope, s.gpu_id, s.gpu_uuid, tuple(s.pods), at)
    return Delivery(mode, delay_s, scope, decided_at=at)


def deliveries(incidents: Iterable[Incident], decided: Mapping[str, Decided]) -> Hows:
    """How the runner carries out each incident's ranked actions, per rule alert (module docstring)."""
    out: Hows = {}
    for inc in incidents:
        d = decided.get(inc.id)
        if d is None:
            continue
        refs = own_refs(inc)
        for r in d.decision.ranked:
            how = _delivery(d, r.allowed.action, r.best.mode, r.best.delay_s, r.best.scope)
            for ref in refs:
                out.setdefault((ref, r.allowed.action, r.allowed.target), how)
    return out
