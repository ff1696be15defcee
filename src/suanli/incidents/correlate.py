"""Topology-aware correlation: one incident per fault, named at the faulty part.

Findings (an analysis's verdict at an entity, with direct evidence) seed incidents. A finding
whose entity depends on another finding's entity (a NIC behind a bad port, a job whose GPU fell
off the bus) and whose time is close is that fault's symptom, not a fault of its own; so is a
second finding on the same entity, which keeps the more specific category. Alerts then join the
incident whose root explains them: the same entity, or an entity downstream of the root in the
physical, logical or dataflow topology, within the correlation window. Alerts no finding
explains group among themselves by the same rule and become incidents of their own (the rule's
category, lower confidence) when at least one of them carries direct evidence and a category.
An alert that fires on most of one job's GPUs or NICs at once is that job's symptom, never direct
evidence (:mod:`.jobwide`): it joins the incident that reaches the job, counted in its evidence.
What folds into what is the category table's (:mod:`suanli.analysis.categories`); whether a
fault at X reaches Y is :class:`~suanli.incidents.reach.Reach`'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from suanli.analysis.categories import policy, priority
from suanli.incidents.jobwide import JobWideConfig, fold_job_wide, job_wide_evidence
from suanli.incidents.model import Incident, Signal
from suanli.incidents.reach import Reach
from suanli.inventory import Inventory

__all__ = ["CorrelationConfig", "correlate"]

@dataclass(frozen=True)
class CorrelationConfig:
    window_s: float = 900.0
    """Signals further apart in time than this never join one incident."""
    min_seed_confidence: float = 0.0
    """Findings below this confidence do not seed incidents (they may still join one)."""
    alert_incident_confidence: float = 0.5
    """Confidence of an incident seeded by alerts alone (no analysis finding)."""
    job_wide: JobWideConfig = field(default_factory=JobWideConfig)
    """When one alert on most of a job's GPUs or NICs is the job's symptom (:mod:`.jobwide`)."""


def _close(a: Signal, b: Signal, window_s: float) -> bool:
    a_end = a.end if a.end is not None else float("inf")
    b_end = b.end if b.end is not None else float("inf")
    return a.start <= b_end + window_s and b.start <= a_end + window_s


def _new_incident(seed: Signal) -> Incident:
    inc = Incident(category=seed.category or seed.name, root_kind=seed.entity_kind,
                   root_id=seed.entity_id, confidence=seed.confidence, start=seed.start,
                   detected_at=seed.detected_at, end=seed.end, signals=[seed],
                   evidence=list(seed.evidence))
    _note_symptoms(inc, seed)
    return inc


def _note_symptoms(inc: Incident, sig: Signal) -> None:
    if sig.source == "finding" and sig.finding is not None:
        inc.symptom_ids.update(sym.entity_id for sym in sig.finding.symptoms)


def _absorb(inc: Incident, sig: Signal) -> None:
    inc.signals.append(sig)
    _note_symptoms(inc, sig)
    if _own_evidence(inc, sig):
        for line in sig.evidence:
            if line not in inc.evidence and len(inc.evidence) < 12:
                inc.evidence.append(line)


def _own_evidence(inc: Incident, sig: Signal) -> bool:
    """Evidence worth showing: findings, and direct alerts at the root or of the same category."""
    if sig.source == "finding":
        return True
    return sig.source != "symptom" and sig.direct and (sig.entity_id == inc.root_id or sig.category == inc.category)


def _detected_at(inc: Incident) -> float:
    """When suanli knew: the earliest of the root finding's own detection time and the firing of a
    direct rule alert at the root or of the incident's category; the onset if neither says."""
    times = [s.detected_at for s in inc.signals if s.detected_at is not None and (
        (s.source == "finding" and s.entity_id == inc.root_id)
        or (s.source in ("rule", "alertmanager") and s.direct
            and (s.entity_id == inc.root_id or s.category == inc.category)))]
    return max(min(times), inc.start) if times else inc.start


def _as_signal(inc: Incident) -> Signal:
    return Signal("finding", inc.category, inc.root_kind, inc.root_id, inc.start, inc.end,
                  inc.detected_at, inc.category, inc.confidence)


def _merge_findings(findings: list[Signal], reach: Reach, cfg: CorrelationConfig) -> list[Incident]:
    """Fold findings into one another: same entity -> most specific category; downstream -> symptom."""
    order = sorted(findings, key=lambda s: (-priority(s.category), -s.confidence, s.start))
    incidents: list[Incident] = []
    for sig in order:
        host = None
        for inc in incidents:
            if not _close(_as_signal(inc), sig, cfg.window_s):
                continue
            same = inc.root_id == sig.entity_id
            if same and (not policy(sig.category).never_folded or inc.category == sig.category):
                host = inc
                break
            if (sig.category in policy(inc.category).explains
                    and reach.explains(inc.root_id, sig, inc.category)):
                host = inc
                break
        if host is None:
            if sig.confidence >= cfg.min_seed_confidence:
                incidents.append(_new_incident(sig))
            continue
        host.start = min(host.start, sig.start)
        host.confidence = max(host.confidence, sig.confidence) if host.root_id == sig.entity_id else host.confidence
        _absorb(host, sig)
    return incidents


def _best_host(sig: Signal, incidents: list[Incident], reach: Reach, window_s: float) -> Incident | None:
    best: tuple[tuple[int, int, float], Incident] | None = None
    for inc in incidents:
        if not _close(_as_signal(inc), sig, window_s):
            continue
        if not (reach.explains(inc.root_id, sig, inc.category) or sig.entity_id in inc.symptom_ids):
            continue
        rank = (int(inc.root_id == sig.entity_id), int(sig.category == inc.category), inc.confidence)
        if best is None or rank > best[0]:
            best = (rank, inc)
    return None if best is None else best[1]


def _alert_incidents(loose: list[Signal], reach: Reach, cfg: CorrelationConfig) -> tuple[list[Incident], list[Signal]]:
    """Alerts no finding explains: the upstream-most direct, categorised alert seeds an incident."""
    seeds = [s for s in loose if s.direct and s.category]
    seeds.sort(key=lambda s: (-len(reach.dependents(s.entity_id)), s.start))
    incidents: list[Incident] = []
    for s in seeds:
        host = _best_host(s, incidents, reach, cfg.window_s)
        if host is None:
            inc = _new_incident(s)
            inc.confidence = min(inc.confidence, cfg.alert_incident_confidence)
            incidents.append(inc)
        else:
            _absorb(host, s)
    left: list[Signal] = []
    seeded = {id(s) for s in seeds}
    for s in loose:
        if id(s) in seeded:
            continue
        host = _best_host(s, incidents, reach, cfg.window_s)
        if host is None:
            left.append(s)
        else:
            _absorb(host, s)
    return incidents, left


def correlate(signals: Iterable[Signal], inventory: Inventory | Reach,
              config: CorrelationConfig = CorrelationConfig()) -> tuple[list[Incident], list[Signal]]:
    """Incidents, and the alerts that no incident explains (reported, never dropped). ``inventory``
    may be a :class:`Reach` already built over it (the pipeline shares one with inhibition)."""
    reach = inventory if isinstance(inventory, Reach) else Reach(inventory)
    sigs = fold_job_wide(list(signals), reach.inv, config.job_wide)
    incidents = _merge_findings([s for s in sigs if s.source == "finding"], reach, config)
    loose: list[Signal] = []
    for s in sigs:
        if s.source == "finding":
            continue
        host = _best_host(s, incidents, reach, config.window_s)
        if host is None:
            loose.append(s)
        else:
            _absorb(host, s)
    extra, left = _alert_incidents(loose, reach, config)
    incidents.extend(extra)
    for inc in incidents:
        inc.detected_at = _detected_at(inc)
    job_wide_evidence(incidents)
    incidents.sort(key=lambda i: (i.start, i.root_id))
    return incidents, left
