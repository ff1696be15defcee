"""Where a job's traffic goes: its data-parallel rings, each ring hop's path, bytes per entity."""

from __future__ import annotations

from dataclasses import dataclass, field

from suanli.sim.cluster import SimCluster, SimJob
from suanli.sim.physics import PhysicsConfig

__all__ = ["Hop", "JobNet", "build_jobnet", "dp_groups"]


@dataclass(frozen=True)
class Hop:
    """One ring hop: rank ``src`` sends to rank ``dst``; ``path`` is empty inside a node (NVLink)."""

    src_gpu: str
    dst_gpu: str
    path: tuple[str, ...]
    rx: frozenset[str]

    @property
    def src_nic(self) -> str | None:
        return self.path[0] if self.path else None

    @property
    def dst_nic(self) -> str | None:
        return self.path[-1] if self.path else None


@dataclass
class JobNet:
    groups: list[list[int]]                 # dp rings, rank lists in ring order
    hops: list[list[Hop]]                   # per ring
    grad_bytes: float                       # per rank per step
    hop_bytes: float                        # bytes one hop carries per step
    entity_bytes: dict[str, float] = field(default_factory=dict)   # ports, links, nics (tx) per step
    entities: set[str] = field(default_factory=set)


def dp_groups(dp: int, tp: int, pp: int) -> list[list[int]]:
    """Data-parallel groups in Megatron order: rank = pp_i·dp·tp + dp_i·tp + tp_i."""
    return [[p * dp * tp + d * tp + t for d in range(dp)] for p in range(pp) for t in range(tp)]


def _rx_of(path: list[str]) -> frozenset[str]:
    if len(path) == 4:
        return frozenset({path[1], path[3]})
    return frozenset({path[1], path[4], path[7], path[9]})


def build_jobnet(c: SimCluster, job: SimJob, cfg: PhysicsConfig) -> JobNet:
    groups = dp_groups(job.dp, job.tp, job.pp)
    grad = job.params / (job.tp * job.pp) * cfg.grad_bytes_per_param
    n = job.dp
    hop_bytes = 2.0 * (n - 1) / n * grad if n > 1 else 0.0
    net = JobNet(groups, [], grad, hop_bytes)
    for g in groups:
        hops = []
        for i, r in enumerate(g):
            if n == 1:
                break
            a, b = job.ranks[r], job.ranks[g[(i + 1) % n]]
            if a.split("/")[0] == b.split("/")[0]:
                hops.append(Hop(a, b, (), frozenset()))
                continue
            path = c.hop_path(c.nic_for_gpu(a), c.nic_for_gpu(b))
            hops.append(Hop(a, b, tuple(path), _rx_of(path)))
            for e in path[1:-1]:
                net.entity_bytes[e] = net.entity_bytes.get(e, 0.0) + hop_bytes
            net.entity_bytes[path[0]] = net.entity_bytes.get(path[0], 0.0) + hop_bytes
            net.entities.update(path)
        net.hops.append(hops)
    return net
