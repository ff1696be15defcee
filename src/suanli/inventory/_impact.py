"""What depends on an entity: the blast radius incidents use to group and inhibit alerts.

Hardware depends downwards (rack -> nodes -> gpus / nics), workloads depend on their hardware
(gpu -> ranks -> job -> sla), and jobs depend on every fabric part their traffic may cross.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from suanli.inventory.model import rank_id

if TYPE_CHECKING:
    from suanli.inventory.topology import Topology

__all__ = ["dependents"]


def _upwards(topo: Topology, ranks: set[str], jobs: set[str]) -> set[str]:
    """Ranks and jobs plus the jobs of the ranks, the pods of the ranks and the jobs' SLAs."""
    inv = topo.inv
    out = set(ranks) | set(jobs)
    for rid in ranks:
        job_id = rid.rpartition("/rank")[0]
        if job_id in inv.jobs:
            out.add(job_id)
    for job_id in [e for e in out if e in inv.jobs]:
        sla = inv.jobs[job_id].sla_id
        if sla:
            out.add(sla)
    return out


def _of_gpus(topo: Topology, gpus: set[str]) -> set[str]:
    ranks = {r for g in gpus for r in topo.rank_of_gpu(g)}
    return gpus | _upwards(topo, ranks, set())


def _of_nodes(topo: Topology, nodes: set[str]) -> set[str]:
    inv = topo.inv
    gpus = {g.id for n in nodes for g in inv.nodes[n].gpus}
    nics = {c.id for n in nodes for c in inv.nodes[n].nics}
    nvswitches = {w.id for n in nodes for w in inv.nodes[n].nvswitches}
    return nodes | nics | nvswitches | _of_gpus(topo, gpus)


def _of_fabric(topo: Topology, entities: set[str]) -> set[str]:
    """Fabric parts plus the NICs cabled to those ports and the jobs crossing any of them."""
    port_nic = topo.fabric.port_nic
    out = set(entities)
    out.update(port_nic[e] for e in entities if e in port_nic)
    jobs = {j for e in out for j in topo.crossing_jobs(e)}
    return out | _upwards(topo, set(), jobs)


def _pdu(topo: Topology, pdu: str) -> set[str]:
    out: set[str] = set()
    for rack in topo.inv.racks:
        if rack.pdu == pdu:
            out |= {rack.id} | _rack(topo, rack.id)
    return out


def _rack(topo: Topology, rack_id: str) -> set[str]:
    inv = topo.inv
    out = _of_nodes(topo, {n.id for r in inv.racks if r.id == rack_id for n in r.nodes})
    for sw in inv.switches.values():
        if sw.rack == rack_id:
            out |= {sw.id} | _switch(topo, sw.id)
    return out


def _nvswitch(topo: Topology, nvswitch_id: str) -> set[str]:
    """Every GPU of the switch's node (NVLink goes through each chip), their ranks and jobs."""
    inv = topo.inv
    return _of_gpus(topo, {g.id for g in inv.nodes[inv.nvswitches[nvswitch_id].node].gpus})


def _nic(topo: Topology, nic_id: str) -> set[str]:
    """The ranks whose GPUs leave by this NIC, in jobs whose traffic crosses it, and those jobs."""
    inv = topo.inv
    crossing = topo.crossing_jobs(nic_id)
    ranks = {r for g in inv.nodes[inv.nics[nic_id].node].gpus if topo.nic_for_gpu(g.id) == nic_id
             for r in topo.rank_of_gpu(g.id) if r.rpartition("/rank")[0] in crossing}
    return _upwards(topo, ranks, crossing)


def _port(topo: Topology, port: str) -> set[str]:
    link = topo.fabric.port_link.get(port)
    return _of_fabric(topo, {port} | ({link} if link else set()))


def _link(topo: Topology, link_id: str) -> set[str]:
    lk = topo.inv.links_by_id[link_id]
    return _of_fabric(topo, {link_id, lk.a, lk.b})


def _switch(topo: Topology, switch: str) -> set[str]:
    fab = topo.fabric
    ports = fab.ports_of_switch(switch, topo.inv.ports)
    return _of_fabric(topo, ports | {fab.port_link[p] for p in ports if p in fab.port_link})


def _storage(topo: Topology, storage: str) -> set[str]:
    return _upwards(topo, set(), {j.id for j in topo.inv.jobs.values() if j.storage == storage})


def _pod(topo: Topology, pod: str) -> set[str]:
    return _upwards(topo, {rk.id for j in topo.inv.jobs.values() for rk in j.ranks if rk.pod == pod}, set())


def _job(topo: Topology, job_id: str) -> set[str]:
    job = topo.inv.jobs[job_id]
    out = {rank_id(job_id, r) for r in topo.placement(job_id)} | {rk.pod for rk in job.ranks if rk.pod}
    return out | ({job.sla_id} if job.sla_id else set())


def _cluster(topo: Topology, _: str) -> set[str]:
    inv = topo.inv
    return set(inv.nodes) | set(inv.jobs) | set(inv.slas) | set(inv.switches)


_BY_KIND: dict[str, Callable[[Topology, str], set[str]]] = {
    "pdu": _pdu, "rack": _rack, "node": lambda t, e: _of_nodes(t, {e}), "gpu": lambda t, e: _of_gpus(t, {e}),
    "nvswitch": _nvswitch,
    "nic": _nic, "switch_port": _port, "link": _link, "switch": _switch, "storage": _storage, "pod": _pod,
    "rank": lambda t, e: _upwards(t, {e}, set()), "job": _job, "cluster": _cluster,
}


def dependents(topo: Topology, entity_id: str) -> set[str]:
    """See :meth:`Topology.dependents`. Unknown ids (and SLAs, containers) have no dependents."""
    kind = topo.inv.kind_of(entity_id)
    fn = _BY_KIND.get(kind) if kind is not None else None
    out = fn(topo, entity_id) if fn is not None else set()
    out.discard(entity_id)
    return out
