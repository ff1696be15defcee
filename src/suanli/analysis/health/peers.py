"""Which GPUs do the same work as a GPU at the same time: the peers a per-GPU detector compares it
with, from the inventory's jobs and their placement.

A job that stalls, stops, restarts or slows lowers the NVLink traffic, tensor activity,
utilisation and power of all its GPUs together; a fault on one GPU sets that GPU apart from the
GPUs exchanging the same traffic in the same steps. Those are, in order:

1. the other GPUs of its job on its node, and the other members of its tensor-parallel group(s)
   (Megatron order from the job's ``parallelism``; a tensor-parallel group usually lives inside a
   node, where its all-reduces run over NVLink every step);
2. when the job has no other GPU there: the job's other GPUs (same steps, same collectives);
3. a GPU of no job: the other job-less GPUs of its node (idle alike, a spare node's GPUs).

A GPU with no such peer has none: a detector that needs peers then says nothing from traffic
alone (an Xid still speaks for itself).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from suanli.inventory.groups import megatron_groups
from suanli.inventory.model import Gpu, Job

__all__ = ["gpu_jobs", "work_peers"]


def gpu_jobs(jobs: Mapping[str, Job]) -> dict[str, str]:
    """GPU -> the job it runs (the first job of the inventory that places a rank on it)."""
    out: dict[str, str] = {}
    for job in jobs.values():
        for r in job.ranks:
            out.setdefault(r.gpu, job.id)
    return out


def _tp_mates(job: Job) -> dict[str, set[str]]:
    """GPU -> the GPUs of its tensor-parallel group(s) in ``job``."""
    by_rank = {r.rank: r.gpu for r in job.ranks}
    out: dict[str, set[str]] = defaultdict(set)
    for group in megatron_groups(job.id, job.parallelism).get("tp", []):
        gpus = {by_rank[r] for r in group.ranks if r in by_rank}
        for g in gpus:
            out[g] |= gpus - {g}
    return out


def work_peers(gpus: Mapping[str, Gpu], jobs: Mapping[str, Job]) -> dict[str, tuple[str, ...]]:
    """Every GPU of ``gpus`` -> its peers doing the same work (module doc), sorted."""
    job_of = gpu_jobs(jobs)
    members: dict[str, set[str]] = defaultdict(set)
    on_node: dict[tuple[str, str], set[str]] = defaultdict(set)     # (job, node) -> its GPUs there
    for gid, j in job_of.items():
        if gid in gpus:
            members[j].add(gid)
            on_node[(j, gpus[gid].node)].add(gid)
    tp = {j: _tp_mates(jobs[j]) for j in members}
    idle_by_node: dict[str, set[str]] = defaultdict(set)
    for g in gpus.values():
        if g.id not in job_of:
            idle_by_node[g.node].add(g.id)
    out: dict[str, tuple[str, ...]] = {}
    for g in gpus.values():
        job = job_of.get(g.id)
        if job is None:
            peers = idle_by_node[g.node] - {g.id}
        else:
            mates = members[job] - {g.id}
            peers = (on_node[(job, g.node)] - {g.id}) | (tp[job].get(g.id, set()) & mates)
            peers = peers or mates
        out[g.id] = tuple(sorted(peers))
    return out
