"""The three topologies (physical, logical, dataflow) and the queries incidents and analyses ask of them.

Built lazily from an :class:`Inventory` (``inv.topology``); every query is answered from tables
indexed once, so a 1,280-node cluster costs a few seconds to index and microseconds per query.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from functools import cached_property
from typing import TYPE_CHECKING

from suanli.inventory.fabric import Fabric, FabricConfig, stable_index
from suanli.inventory.groups import CollectiveGroup, megatron_groups
from suanli.inventory.model import rank_id

if TYPE_CHECKING:
    import networkx as nx

    from suanli.inventory.catalog import Inventory

__all__ = ["Topology"]


class Topology:
    """Graphs and queries over one inventory; results are cached per job / entity. Read-only except
    :meth:`set_placement` (ranks learnt at run time), which drops the caches it invalidates."""

    def __init__(self, inv: Inventory, fabric_config: FabricConfig | None = None) -> None:
        self.inv = inv
        self.fabric = Fabric(inv, fabric_config)
        self._node_nics: dict[str, list[tuple[int | None, str]]] = {
            n.id: [(c.gpu, c.id) for c in n.nics] for n in inv.nodes.values()
        }
        self._placement: dict[str, dict[int, str]] = {
            job.id: {rk.rank: rk.gpu for rk in job.ranks} for job in inv.jobs.values()
        }
        self._rank_gpu: dict[str, str] = {}
        self._gpu_ranks: dict[str, list[str]] = defaultdict(list)
        self._index_ranks()
        self._networks: dict[str, dict[str, set[str]]] = {}
        self._pair_entities: dict[str, dict[tuple[str, str], tuple[frozenset[str], frozenset[str]]]] = {}

    def _index_ranks(self) -> None:
        self._rank_gpu.clear()
        self._gpu_ranks.clear()
        for job_id, placement in self._placement.items():
            for rank, gpu in sorted(placement.items()):
                rid = rank_id(job_id, rank)
                self._rank_gpu[rid] = gpu
                self._gpu_ranks[gpu].append(rid)

    def set_placement(self, job_id: str, rank_gpus: Mapping[int, str]) -> int:
        """Add or move ranks of a job (rank -> canonical gpu id), e.g. learnt from span attributes
        when the file lists none. Every later query (job_network, dependents, jobs_behind, graphs)
        uses them. Entries with an unknown job, a negative rank or an unknown GPU are skipped;
        returns how many were taken."""
        if job_id not in self.inv.jobs:
            return 0
        placement = self._placement.setdefault(job_id, {})
        taken = 0
        for rank, gpu in rank_gpus.items():
            if rank >= 0 and gpu in self.inv.gpus and placement.get(rank) != gpu:
                placement[rank] = gpu
                taken += 1
        if taken:
            self._index_ranks()
            self._networks.clear()
            self._pair_entities.clear()
            for name in ("_crossing", "logical", "dataflow"):
                self.__dict__.pop(name, None)
        return taken

    def placement(self, job_id: str) -> dict[int, str]:
        """rank -> gpu id of a job: the file's ranks plus any :meth:`set_placement` added."""
        return dict(self._placement.get(job_id, {}))

    # -- graphs ---------------------------------------------------------------------------------

    @cached_property
    def physical(self) -> nx.DiGraph:
        """rack -> node -> gpu; node -> nic -> switch_port -> switch; switch -> port -> link -> port -> switch
        (links run from the lower tier up); rack -> pdu. Node attribute ``kind``."""
        from suanli.inventory import graphs  # networkx, only for the graphs

        return graphs.physical(self.inv)

    @cached_property
    def logical(self) -> nx.DiGraph:
        """job -> rank -> gpu; job -> pod -> container; job -> sla; job -> storage."""
        from suanli.inventory import graphs  # networkx, only for the graphs

        return graphs.logical(self.inv, self)

    @cached_property
    def dataflow(self) -> nx.DiGraph:
        """job -> collective group -> node pair -> nic / switch_port / link on its paths."""
        from suanli.inventory import graphs  # networkx, only for the graphs

        return graphs.dataflow(self.inv, self)

    # -- fabric ---------------------------------------------------------------------------------

    def nic_for_gpu(self, gpu_id: str) -> str | None:
        """The NIC a GPU's inter-node traffic leaves by: the NIC whose ``gpu`` is the GPU's index, else
        the one with the largest ``gpu`` below it, else the node's first NIC (None: no NIC)."""
        gpu = self.inv.gpus.get(gpu_id)
        if gpu is None:
            return None
        nics = self._node_nics.get(gpu.node) or []
        if not nics:
            return None
        best: tuple[int, str] | None = None
        for affinity, nic in nics:
            if affinity is None or affinity > gpu.index:
                continue
            if affinity == gpu.index:
                return nic
            if best is None or affinity > best[0]:
                best = (affinity, nic)
        return best[1] if best is not None else nics[0][1]

    def _nic_ref(self, node: str, nic: str | None) -> str | None:
        if nic is None:
            return None
        if nic in self.inv.nics:
            return nic
        cand = f"{node}/{nic}"
        return cand if cand in self.inv.nics else None

    def nic_pairs(self, src_node: str, dst_node: str, src_nic: str | None = None,
                  dst_nic: str | None = None) -> list[tuple[str, str]]:
        """NIC pairs between two nodes: the given ones; a missing side takes the same rail (same NIC
        name, else same position); with neither given, every rail of the source node."""
        src_list = [c for _, c in self._node_nics.get(src_node, [])]
        dst_list = [c for _, c in self._node_nics.get(dst_node, [])]
        if not src_list or not dst_list:
            return []
        s, d = self._nic_ref(src_node, src_nic), self._nic_ref(dst_node, dst_nic)
        if s is not None and d is not None:
            return [(s, d)]
        if d is not None:
            return [(self._same_rail(d, dst_list, src_list), d)]
        sources = [s] if s is not None else src_list
        return [(x, self._same_rail(x, src_list, dst_list)) for x in sources]

    def _same_rail(self, nic: str, own: list[str], other: list[str]) -> str:
        name = self.inv.nics[nic].name
        other_node = self.inv.nics[other[0]].node
        same = f"{other_node}/{name}"
        if same in self.inv.nics:
            return same
        return other[own.index(nic) % len(other)]

    def paths(self, src_node: str, dst_node: str, src_nic: str | None = None,
              dst_nic: str | None = None) -> list[list[str]]:
        """Every equal-cost path between two nodes as ordered entity ids (see :mod:`.fabric`).

        NICs may be given as ids or names; a missing NIC is paired rail by rail (see :meth:`nic_pairs`).
        A node with itself, unknown nodes and uncabled NICs give [].
        """
        if src_node == dst_node:
            return []
        out: list[list[str]] = []
        for s, d in self.nic_pairs(src_node, dst_node, src_nic, dst_nic):
            out.extend(self.fabric.nic_paths(s, d))
        return out

    def path(self, src_node: str, dst_node: str, src_nic: str | None = None,
             dst_nic: str | None = None) -> list[str]:
        """One of :meth:`paths`, chosen deterministically from the NIC pair (the first rail when no NIC
        is given); [] when there is none."""
        pairs = self.nic_pairs(src_node, dst_node, src_nic, dst_nic)
        if src_node == dst_node or not pairs:
            return []
        s, d = pairs[0]
        options = self.fabric.nic_paths(s, d)
        return options[stable_index(f"{s}|{d}", len(options))] if options else []

    # -- jobs -----------------------------------------------------------------------------------

    def group_objects(self, job_id: str) -> dict[str, list[CollectiveGroup]]:
        """Collective groups with their ids (``job/dp/pp0-tp3``); {} for an unknown job."""
        job = self.inv.jobs.get(job_id)
        return megatron_groups(job_id, job.parallelism) if job is not None else {}

    def collective_groups(self, job_id: str) -> dict[str, list[list[int]]]:
        """``{"tp": [[0, 1], ...], "dp": [...], "pp": [...]}`` (+ ``cp``/``ep`` when > 1), ring order."""
        return {k: [list(g.ranks) for g in gs] for k, gs in self.group_objects(job_id).items()}

    def rank_gpu(self, rank_id: str) -> str | None:
        return self._rank_gpu.get(rank_id)

    def rank_of_gpu(self, gpu_id: str) -> list[str]:
        """Rank ids placed on a GPU (over all jobs; usually zero or one)."""
        return list(self._gpu_ranks.get(gpu_id, []))

    def gpus_of_job(self, job_id: str) -> list[str]:
        """The GPUs of a job's ranks (see :meth:`placement`), in rank order."""
        placement = self._placement.get(job_id, {})
        return [placement[r] for r in sorted(placement)]

    def nodes_of_job(self, job_id: str) -> list[str]:
        """The job's nodes in order of first rank."""
        seen: dict[str, None] = {}
        for gid in self.gpus_of_job(job_id):
            seen.setdefault(self.inv.gpus[gid].node, None)
        return list(seen)

    def job_network(self, job_id: str, rank_gpus: Mapping[int, str] | None = None) -> dict[str, set[str]]:
        """Every nic / switch_port / link the job's inter-node collective traffic may cross (all
        equal-cost paths of the NIC pairs of neighbouring ranks), mapped to the group ids crossing it.

        ``rank_gpus`` (rank -> gpu id) replaces the job's placement for this call only (not cached);
        :meth:`set_placement` changes it for good. Pairs whose GPUs are on one node cross nothing.
        """
        if rank_gpus is None and job_id in self._networks:
            return self._networks[job_id]
        placement = rank_gpus if rank_gpus is not None else self._placement.get(job_id, {})
        by_pair: dict[tuple[str, str], set[str]] = defaultdict(set)
        for groups in self.group_objects(job_id).values():
            for group in groups:
                for a, b in group.neighbour_pairs():
                    na, nb = self._rank_nic(placement, a), self._rank_nic(placement, b)
                    if na is not None and nb is not None and na != nb and \
                            self.inv.nics[na].node != self.inv.nics[nb].node:
                        by_pair[(na, nb)].add(group.id)
        out: dict[str, set[str]] = defaultdict(set)
        by_leaves: dict[tuple[str, str], set[str]] = defaultdict(set)
        pair_entities: dict[tuple[str, str], tuple[frozenset[str], frozenset[str]]] = {}
        for (na, nb), gids in by_pair.items():
            la, lb = self.fabric.leaf_of(na), self.fabric.leaf_of(nb)
            if la is None or lb is None or not self.fabric.segments(la, lb):
                continue
            ends = {na, nb, self.fabric.nic_port[na], self.fabric.nic_port[nb]}
            for e in ends:
                out[e].update(gids)
            by_leaves[(la, lb)].update(gids)
            pair_entities[(na, nb)] = (frozenset(ends | self.fabric.middle_entities(la, lb)), frozenset(gids))
        for (la, lb), gids in by_leaves.items():
            for e in self.fabric.middle_entities(la, lb):
                out[e].update(gids)
        result = dict(out)
        if rank_gpus is None:
            self._networks[job_id] = result
            self._pair_entities[job_id] = pair_entities
        return result

    def job_nic_pairs(self, job_id: str) -> dict[tuple[str, str], tuple[frozenset[str], frozenset[str]]]:
        """(src nic, dst nic) -> (entities on their paths, group ids), for the job's inter-node
        neighbour pairs (as the file places the ranks)."""
        self.job_network(job_id)
        return self._pair_entities.get(job_id, {})

    def _rank_nic(self, placement: Mapping[int, str], rank: int) -> str | None:
        gpu = placement.get(rank)
        return self.nic_for_gpu(gpu) if gpu is not None else None

    # -- impact ---------------------------------------------------------------------------------

    @cached_property
    def _crossing(self) -> dict[str, set[str]]:
        """Fabric entity -> jobs whose traffic crosses it."""
        out: dict[str, set[str]] = defaultdict(set)
        for job_id in self.inv.jobs:
            for entity in self.job_network(job_id):
                out[entity].add(job_id)
        return dict(out)

    def dependents(self, entity_id: str) -> set[str]:
        """Everything that depends on an entity (not itself): hardware below it, the ranks placed on
        that hardware, the jobs whose ranks or traffic use it, and their SLAs."""
        from suanli.inventory._impact import dependents

        return dependents(self, entity_id)

    def jobs_behind(self, entity_id: str) -> set[str]:
        """Jobs that depend on an entity (a job is behind itself)."""
        deps = self.dependents(entity_id) | {entity_id}
        return {e for e in deps if e in self.inv.jobs}

    def slas_behind(self, entity_id: str) -> set[str]:
        """SLAs that depend on an entity (an SLA is behind itself)."""
        deps = self.dependents(entity_id) | {entity_id}
        return {e for e in deps if e in self.inv.slas}

    def crossing_jobs(self, entity_id: str) -> set[str]:
        """Jobs whose inter-node traffic may cross a nic / switch_port / link."""
        return set(self._crossing.get(entity_id, ()))
