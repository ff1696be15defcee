"""Job-level faults read from log records: CUDA out-of-memory and collective hangs.

A collective hang is NCCL watchdog timeouts on a job; whether hardware explains it (a lost GPU,
a downed NIC) is the incident layer's call, which folds this finding into the hardware incident
when one sits upstream. Out-of-memory is the job's own fault and is never folded into hardware.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from suanli.analysis.categories import policy
from suanli.analysis.findings import Finding, Symptom
from suanli.ingest.records import Event
from suanli.inventory import Inventory
from suanli.timefmt import to_rfc3339

__all__ = ["JobEventsConfig", "job_findings"]


@dataclass(frozen=True)
class JobEventsConfig:
    min_timeouts: int = 1
    """NCCL watchdog timeouts on one job needed for a ``collective_hang`` finding."""
    min_ooms: int = 1
    """CUDA out-of-memory records on one job needed for an ``oom`` finding."""
    hang_confidence: float = policy("collective_hang").confidence.strong
    """Confidence of a hang with no hardware evidence (the incident layer may fold it)."""
    oom_confidence: float = policy("oom").confidence.strong
    """Confidence of an out-of-memory finding."""
    stall_steps: float = 3.0
    """A job whose next step has not finished this many median step times after its last one
    has visibly stalled: a hang is detected then, before its watchdog fires (its timeout is
    often 10 minutes)."""


def _jobs_of(event: Event, inventory: Inventory) -> set[str]:
    kind, eid = event.entity_kind, event.entity_id
    named = event.attrs.get("job_id") or event.attrs.get("job")
    if isinstance(named, str) and named in inventory.jobs:
        return {named}
    if kind == "job" and eid in inventory.jobs:
        return {eid}
    if kind == "rank" and eid:
        job = eid.rsplit("/rank", 1)[0]
        return {job} if job in inventory.jobs else set()
    if eid is None:
        host = event.host and inventory.resolver.node(event.host)
        return set(inventory.topology.jobs_behind(host)) if host else set()
    return set(inventory.topology.jobs_behind(eid))


def _hang_onset(events: list[Event]) -> float:
    """A watchdog fires ``Timeout(ms)`` after the collective started: the hang began then."""
    onsets = []
    for e in events:
        timeout_ms = e.attrs.get("timeout_ms")
        back = float(timeout_ms) / 1000.0 if isinstance(timeout_ms, int | float) else 0.0
        onsets.append(e.ts - back)
    return min(onsets)


def job_findings(events: Iterable[Event], inventory: Inventory,
                 config: JobEventsConfig = JobEventsConfig(),
                 stalled_at: Callable[[str, float], float | None] | None = None,
                 fell: Callable[[str, float, float], str | None] | None = None) -> list[Finding]:
    """Findings from the records; ``stalled_at(job, before_ts)`` says when a job's stall became
    visible in its steps (None when it cannot tell), to date a hang's detection; ``fell(job,
    from_s, to_s)`` describes how the job's GPUs fell together over the hang (its job-wide
    symptoms, counted in its evidence)."""
    by_job: dict[tuple[str, str], list[Event]] = defaultdict(list)
    for ev in events:
        if ev.kind not in ("cuda_oom", "nccl_timeout"):
            continue
        for job in _jobs_of(ev, inventory):
            by_job[(ev.kind, job)].append(ev)
    findings: list[Finding] = []
    for (kind, job), evs in sorted(by_job.items()):
        evs.sort(key=lambda e: e.ts)
        n = sum(e.count for e in evs)
        first = evs[0]
        symptoms = tuple(Symptom(e.entity_kind or "node", e.entity_id or (e.host or "?"), e.kind, e.ts)
                         for e in evs if e.entity_id or e.host)
        if kind == "cuda_oom" and n >= config.min_ooms:
            findings.append(Finding(
                "oom", "job", job, first.ts, None, config.oom_confidence,
                (f"{n} CUDA out-of-memory record(s) on {job}, first at {to_rfc3339(first.ts)} "
                 f"({first.source}): {first.message[:160]}",),
                "job_events", detected_at=first.ts, symptoms=symptoms))
        elif kind == "nccl_timeout" and n >= config.min_timeouts:
            ops = sorted({str(e.attrs.get("op_type")) for e in evs if e.attrs.get("op_type")})
            onset = _hang_onset(evs)
            stall = stalled_at(job, first.ts) if stalled_at is not None else None
            evidence = [f"{n} NCCL watchdog timeout(s) on {job}" + (f" ({', '.join(ops)})" if ops else "")
                        + f", first at {to_rfc3339(first.ts)} ({first.source})"]
            if stall is not None and stall < first.ts:
                evidence.append(f"{job} finished no step after {to_rfc3339(stall)} "
                                f"({config.stall_steps:g} median step times after its last one)")
            line = fell(job, onset, first.ts) if fell is not None else None
            if line is not None:
                evidence.append(line)
            detected = max(onset, min(first.ts, stall if stall is not None else first.ts))
            findings.append(Finding(
                "collective_hang", "job", job, onset, None, config.hang_confidence, tuple(evidence),
                "job_events", detected_at=detected, symptoms=symptoms))
    return findings
