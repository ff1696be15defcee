"""Job-wide symptoms: one alert on most of a job's GPUs (or NICs) at once is the job's, not theirs.

When a job stalls, stops, restarts or slows, its GPUs' NVLink traffic, tensor activity,
utilisation and power fall together, and its NICs go quiet together: a per-GPU rule such as
"NVLink under 1 GB/s while busy" then fires on every GPU of the job. Those are symptoms of
whatever stopped the job, not faults of their own. An alert on a GPU (or NIC) is job-wide when
the same alert fires, at overlapping times, on at least ``share`` of the part's peers doing the
same work (GPUs: :func:`suanli.analysis.health.peers.work_peers`; NICs: the NICs of the job's
other GPUs, the members of its collectives). A job-wide alert loses ``direct``: it never opens an
incident; it joins the incident whose fault reaches the job (a hang at the job, a lost GPU, a
down NIC, slow storage) and is counted in its evidence there, or stays unexplained. A fault on one
part among steady peers still fires alone and keeps ``direct``.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from suanli.analysis.health.peers import gpu_jobs, work_peers
from suanli.incidents.model import Incident, Signal
from suanli.inventory import Inventory

__all__ = ["JobWideConfig", "fold_job_wide", "job_wide_evidence"]

_KINDS = ("gpu", "nic")
_ALERTS = ("rule", "alertmanager")


@dataclass(frozen=True)
class JobWideConfig:
    share: float = 0.5
    """An alert is job-wide when it also fires on at least this share of the part's peers."""


class _Peers:
    """Part -> its peers doing the same work, and part -> its job (GPUs and the NICs they use). A
    NIC's peers (its job's other NICs) are listed when asked: listing all of them up front was a
    5,000-NIC tuple for each of 10,240 NICs, 8 s and 400 MB at 1,280 nodes, for the few parts an
    alert names."""

    def __init__(self, inv: Inventory) -> None:
        self.gpus = work_peers(inv.gpus, inv.jobs)
        gpu_job = gpu_jobs(inv.jobs)
        self.nic_job: dict[str, str] = {}
        self.job_nics: dict[str, set[str]] = defaultdict(set)
        for gpu, job in gpu_job.items():
            nic = inv.topology.nic_for_gpu(gpu) if gpu in inv.gpus else None
            if nic is not None and nic not in self.nic_job:
                self.nic_job[nic] = job
                self.job_nics[job].add(nic)
        self.job_of = {**gpu_job, **self.nic_job}

    def of(self, part: str) -> Collection[str]:
        job = self.nic_job.get(part)
        return self.gpus.get(part, ()) if job is None else self.job_nics[job] - {part}


_INF = float("inf")


class _JobFiring:
    """How many of a job's NICs fire an alert at times overlapping a signal, by bisection: an alert
    storm on every NIC of a 5,000-NIC job was 5,000 overlap tests for each of its signals, 25 M in
    Python. Where each NIC's alerts of that name merge into one interval, the NICs overlapping
    [a, b] are those starting by b less those ending before a (a NIC ending before a started
    before b); otherwise (a NIC silent in between, or a signal ending before it starts) the
    NICs are tested one by one, as before."""

    def __init__(self, by_name: Mapping[tuple[str, str], list[Signal]], peers: _Peers) -> None:
        self.by_name, self.peers = by_name, peers
        self._cache: dict[tuple[str, str], tuple[list[float], list[float]] | None] = {}

    def _bounds(self, name: str, job: str) -> tuple[list[float], list[float]] | None:
        key = (name, job)
        if key not in self._cache:
            starts, ends = [], []
            ok = True
            for nic in self.peers.job_nics[job]:
                sigs = sorted((x.start, _INF if x.end is None else x.end) for x in self.by_name.get((name, nic), ()))
                if not sigs:
                    continue
                lo, hi = sigs[0]
                for st, en in sigs:
                    if st > en or st > hi:           # inverted, or a gap: not one interval
                        ok = False
                        break
                    hi = max(hi, en)
                if not ok:
                    break
                starts.append(lo)
                ends.append(hi)
            self._cache[key] = (sorted(starts), sorted(ends)) if ok else None
        return self._cache[key]

    def firing(self, s: Signal, job: str, mates: Collection[str]) -> int:
        """Mates (the job's other NICs) with an alert named like ``s`` overlapping it."""
        a, b = s.start, _INF if s.end is None else s.end
        bounds = self._bounds(s.name, job) if a <= b else None
        if bounds is None:
            return sum(1 for p in mates if any(_overlap(s, o) for o in self.by_name.get((s.name, p), ())))
        starts, ends = bounds
        return bisect.bisect_right(starts, b) - bisect.bisect_left(ends, a) - 1    # less s's own NIC


def _overlap(a: Signal, b: Signal) -> bool:
    a_end = a.end if a.end is not None else float("inf")
    b_end = b.end if b.end is not None else float("inf")
    return a.start <= b_end and b.start <= a_end


def fold_job_wide(signals: Sequence[Signal], inv: Inventory,
                  config: JobWideConfig = JobWideConfig()) -> list[Signal]:
    """The signals, with every job-wide alert made indirect and tagged with its job (module doc)."""
    cands = [s for s in signals if s.source in _ALERTS and s.direct and s.entity_kind in _KINDS]
    if not cands:
        return list(signals)
    peers = _Peers(inv)
    by_name: dict[tuple[str, str], list[Signal]] = defaultdict(list)
    for s in cands:
        by_name[(s.name, s.entity_id)].append(s)
    folded: dict[int, str] = {}
    nics = _JobFiring(by_name, peers)
    for s in cands:
        mates = peers.of(s.entity_id)
        job = peers.job_of.get(s.entity_id)
        if not mates or job is None:
            continue
        if s.entity_id in peers.nic_job:
            firing = nics.firing(s, job, mates)
        else:                               # a GPU's mates: the few on its node doing its work
            firing = sum(1 for p in mates if any(_overlap(s, o) for o in by_name.get((s.name, p), ())))
        if firing >= config.share * len(mates):
            folded[id(s)] = job
    return [dataclasses.replace(s, direct=False, job_wide=folded[id(s)]) if id(s) in folded else s
            for s in signals]


def job_wide_evidence(incidents: Sequence[Incident]) -> None:
    """Each incident's job-wide alerts counted in one line per (job, alert) of its evidence."""
    for inc in incidents:
        parts: Mapping[tuple[str, str], set[str]] = _count(inc.signals)
        for (job, name), ids in sorted(parts.items()):
            line = (f"{name} fired on {len(ids)} parts of {job} together: job-wide symptoms of this "
                    f"incident, not {len(ids)} faults")
            if line not in inc.evidence:
                inc.evidence.append(line)


def _count(signals: Sequence[Signal]) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = defaultdict(set)
    for s in signals:
        if s.job_wide is not None:
            out[(s.job_wide, s.name)].add(s.entity_id)
    return out
