"""Build the three topology graphs (networkx DiGraphs; every node has a ``kind`` attribute)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import networkx as nx

from suanli.inventory.model import rank_id

if TYPE_CHECKING:
    from suanli.inventory.catalog import Inventory
    from suanli.inventory.topology import Topology

__all__ = ["container_id", "dataflow", "logical", "node_pair_id", "physical"]

_TIER_RANK = {"leaf": 0, "tor": 0, "spine": 1, "core": 2, "super-spine": 2, "superspine": 2}


def container_id(pod: str, container: str) -> str:
    return f"{pod}/{container}"


def node_pair_id(a: str, b: str) -> str:
    """One id per unordered node pair: ``node-001<>node-005`` (sorted)."""
    x, y = sorted((a, b))
    return f"{x}<>{y}"


def physical(inv: Inventory) -> nx.DiGraph:
    g = nx.DiGraph(name="physical")
    for rack in inv.racks:
        g.add_node(rack.id, kind="rack")
        if rack.pdu:
            g.add_node(rack.pdu, kind="pdu")
            g.add_edge(rack.id, rack.pdu)
        for node in rack.nodes:
            g.add_node(node.id, kind="node")
            g.add_edge(rack.id, node.id)
            for gpu in node.gpus:
                g.add_node(gpu.id, kind="gpu", index=gpu.index, uuid=gpu.uuid)
                g.add_edge(node.id, gpu.id)
            for chip in node.nvswitches:            # every GPU of the node talks NVLink through each chip
                g.add_node(chip.id, kind="nvswitch", index=chip.index)
                g.add_edge(node.id, chip.id)
                g.add_edges_from((chip.id, gpu.id) for gpu in node.gpus)
            for nic in node.nics:
                g.add_node(nic.id, kind="nic")
                g.add_edge(node.id, nic.id)
                if nic.switch_port:
                    g.add_node(nic.switch_port, kind="switch_port")
                    g.add_edge(nic.id, nic.switch_port)
    for sw in inv.switches.values():
        g.add_node(sw.id, kind="switch", tier=sw.tier)
    for nic in inv.nics.values():
        if nic.switch_port:
            g.add_edge(nic.switch_port, nic.switch_port.partition("/")[0])
    for link in inv.links:
        a, b = link.a, link.b
        sa, sb = a.partition("/")[0], b.partition("/")[0]
        if _TIER_RANK.get(inv.switches[sa].tier, 1) > _TIER_RANK.get(inv.switches[sb].tier, 1):
            a, b, sa, sb = b, a, sb, sa
        g.add_node(link.id, kind="link")
        g.add_node(a, kind="switch_port")
        g.add_node(b, kind="switch_port")
        g.add_edges_from([(sa, a), (a, link.id), (link.id, b), (b, sb)])
    return g


def logical(inv: Inventory, topo: Topology) -> nx.DiGraph:
    g = nx.DiGraph(name="logical")
    for job in inv.jobs.values():
        g.add_node(job.id, kind="job")
        if job.sla_id:
            g.add_node(job.sla_id, kind="sla")
            g.add_edge(job.id, job.sla_id)
        if job.storage:
            g.add_node(job.storage, kind="storage")
            g.add_edge(job.id, job.storage)
        listed = {rk.rank: rk for rk in job.ranks}
        for rank, gpu in sorted(topo.placement(job.id).items()):
            rid = rank_id(job.id, rank)
            g.add_node(rid, kind="rank", rank=rank)
            g.add_node(gpu, kind="gpu")
            g.add_edges_from([(job.id, rid), (rid, gpu)])
            rk = listed.get(rank)
            if rk is not None and rk.pod:
                g.add_node(rk.pod, kind="pod")
                g.add_edge(job.id, rk.pod)
                if rk.container:
                    cid = container_id(rk.pod, rk.container)
                    g.add_node(cid, kind="container")
                    g.add_edge(rk.pod, cid)
    return g


def dataflow(inv: Inventory, topo: Topology) -> nx.DiGraph:
    g = nx.DiGraph(name="dataflow")
    for job_id in inv.jobs:
        g.add_node(job_id, kind="job")
        pairs = topo.job_nic_pairs(job_id)
        by_group: dict[str, set[tuple[str, str]]] = {}
        for nic_pair, (_, groups) in pairs.items():
            for gid in groups:
                by_group.setdefault(gid, set()).add(nic_pair)
        for gid, nic_pairs in sorted(by_group.items()):
            g.add_node(gid, kind="group", group_kind=gid.split("/")[-2])
            g.add_edge(job_id, gid)
            for na, nb in nic_pairs:
                pid = node_pair_id(inv.nics[na].node, inv.nics[nb].node)
                g.add_node(pid, kind="node_pair")
                g.add_edge(gid, pid)
                for e in pairs[(na, nb)][0]:
                    g.add_node(e, kind=inv.kind_of(e) or "unknown")
                    g.add_edge(pid, e)
    return g
