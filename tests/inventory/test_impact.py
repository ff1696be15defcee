"""job_network, dependents, jobs_behind on the mini cluster (by hand) and on switch_port_errors."""

from __future__ import annotations

import pytest

from suanli.inventory import Inventory, load_inventory, parse_inventory
from tests.conftest import shared_path
from tests.inventory._mini import A30, MINI_YAML


@pytest.fixture(scope="module")
def mini() -> Inventory:
    return parse_inventory(MINI_YAML)


@pytest.fixture(scope="module")
def spe() -> Inventory:
    return load_inventory(shared_path("scenarios", "switch_port_errors", "inventory.yaml"))


def test_mini_job_network_by_hand(mini: Inventory) -> None:
    """Ranks 0-3 on r6i3n0, 4-5 on node-004 (leaf-02), 6-7 on the A30 node (leaf-02).

    tp pairs stay inside a node. dp [4,6]: node-004/mlx5_0 -> A30/mlx5_0 (same leaf);
    dp [5,7]: node-004/mlx5_1 -> A30/mlx5_0. pp [0,4]: r6i3n0/mlx5_0 -> node-004/mlx5_0;
    [1,5]: r6i3n0/mlx5_0 -> node-004/mlx5_1; [2,6] and [3,7]: r6i3n0/mlx5_1 -> A30/mlx5_0 (cross leaf,
    both spines).
    """
    net = mini.topology.job_network("demo")
    nics = {e for e in net if mini.kind_of(e) == "nic"}
    assert nics == {"r6i3n0/mlx5_0", "r6i3n0/mlx5_1", "node-004/mlx5_0", "node-004/mlx5_1", f"{A30}/mlx5_0"}
    ports = {e for e in net if mini.kind_of(e) == "switch_port"}
    assert ports == {"leaf-01/p1", "leaf-01/p2", "leaf-02/p1", "leaf-02/p2", "leaf-02/p3",
                     "leaf-01/p33", "leaf-01/p34", "leaf-02/p33", "leaf-02/p34",
                     "spine-01/p1", "spine-01/p2", "spine-02/p1", "spine-02/p2"}
    assert {e for e in net if mini.kind_of(e) == "link"} == set(mini.links_by_id)
    assert len(net) == 5 + 13 + 4
    assert net["node-004/mlx5_1"] == {"demo/dp/pp1-tp1", "demo/pp/dp0-tp1"}
    assert net["leaf-02/p33"] == {f"demo/pp/dp{d}-tp{t}" for d in (0, 1) for t in (0, 1)}
    assert "leaf-01/p3" not in net                  # gsrh100-074 runs nothing of the job


def test_job_network_with_span_ranks(mini: Inventory) -> None:
    """Ranks learnt from spans override the file: 0-3 on r6i3n0, 4-5 on gsrh100-074, 6-7 on node-004.

    pp [0,4], [1,5]: r6i3n0/mlx5_0 -> gsrh100-074/mlx5_0 (both leaf-01); dp [4,6]: gsrh100-074/mlx5_0
    -> node-004/mlx5_0 and dp [5,7]: -> node-004/mlx5_1 (cross leaf). So leaf-01/p3 carries 4 groups.
    """
    topo = mini.topology
    placement = {r: f"r6i3n0/gpu{r}" for r in range(4)}
    placement |= {4: "gsrh100-074/gpu0", 5: "gsrh100-074/gpu1", 6: "node-004/gpu0", 7: "node-004/gpu1"}
    net = topo.job_network("demo", rank_gpus=placement)
    assert net["leaf-01/p3"] == {"demo/pp/dp0-tp0", "demo/pp/dp0-tp1", "demo/dp/pp1-tp0", "demo/dp/pp1-tp1"}
    assert f"{A30}/mlx5_0" not in net
    # the file's placement is still what job_network answers without the override (cache untouched)
    assert f"{A30}/mlx5_0" in topo.job_network("demo") and "leaf-01/p3" not in topo.job_network("demo")
    assert topo.job_network("idle-job") == {}
    assert topo.job_network("nope") == {}


def test_mini_dependents(mini: Inventory) -> None:
    topo = mini.topology
    assert topo.jobs_behind("leaf-01/p3") == set()
    assert topo.dependents("leaf-01/p3") == {"gsrh100-074/mlx5_0"}
    assert topo.jobs_behind("leaf-02/p3") == {"demo"}
    assert topo.slas_behind("spine-02") == {"gold"}
    assert topo.jobs_behind("lustre-01") == {"demo"}
    assert topo.dependents("nfs-01") == {"idle-job", "bronze"}
    # a GPU: its rank, that rank's job and SLA
    assert topo.dependents("r6i3n0/gpu3") == {"demo/rank3", "demo", "gold"}
    assert topo.dependents("gsrh100-074/gpu0") == set()
    # a rack: its nodes, their GPUs and NICs, the ranks on them, the job, the SLA; its leaf and ports
    deps = topo.dependents("rack-02")
    assert {A30, "node-004", "node-004/gpu1", f"{A30}/mlx5_0", "demo/rank6", "demo", "gold",
            "leaf-02", "leaf-02/p33"} <= deps
    assert "r6i3n0" not in deps
    assert topo.dependents("pdu-01") >= {"rack-01", "r6i3n0", "gsrh100-074/gpu1", "demo"}
    assert topo.dependents("demo") == {f"demo/rank{i}" for i in range(8)} | {"demo-0", "demo-1", "demo-2", "gold"}
    assert topo.dependents("demo/rank2") == {"demo", "gold"}
    assert topo.dependents("demo-1") == {"demo/rank4", "demo/rank5", "demo", "gold"}
    assert topo.dependents("gold") == set()
    assert topo.dependents("nope") == set()
    assert topo.jobs_behind("demo") == {"demo"}
    assert topo.slas_behind("gold") == {"gold"}


def test_mini_nic_and_link_dependents(mini: Inventory) -> None:
    topo = mini.topology
    # r6i3n0/mlx5_1 serves GPUs 2 and 3 (ranks 2, 3)
    assert topo.dependents("r6i3n0/mlx5_1") == {"demo/rank2", "demo/rank3", "demo", "gold"}
    link = "leaf-01/p34~spine-02/p1"
    assert topo.dependents(link) == {"leaf-01/p34", "spine-02/p1", "demo", "gold"}
    assert link in topo.dependents("leaf-01/p34")
    assert topo.dependents("gsrh100-074/mlx5_0") == set()


def test_switch_port_errors_truth(spe: Inventory) -> None:
    """truth.json: root cause leaf-02/p16, jobs [llama-34b-continual]."""
    topo = spe.topology
    # leaf-02/p16 is node-008's mlx5_3 (4 NICs per node, p13..p16 for the 4th node of rack-02)
    assert topo.dependents("leaf-02/p16") == {"node-008/mlx5_3", "llama-34b-continual", "cpt_prod"}
    assert topo.jobs_behind("leaf-02/p16") == {"llama-34b-continual"}
    assert topo.slas_behind("leaf-02/p16") == {"cpt_prod"}
    # node-007 is the spare (truth.json spare_nodes): its ports carry no job traffic
    assert topo.jobs_behind("leaf-02/p9") == set()
    assert topo.jobs_behind("node-007/mlx5_0") == set()
    assert topo.jobs_behind("node-007") == set()
    assert topo.jobs_behind("node-008/gpu7") == {"llama-34b-continual"}


def test_switch_port_errors_network_is_consistent_with_paths(spe: Inventory) -> None:
    """Every entity job_network reports lies on a path between two of the job's nodes, and the faulty
    port is crossed by dp groups (dp rings span nodes; tp=4 stays inside a node)."""
    topo = spe.topology
    net = topo.job_network("llama-34b-continual")
    nodes = topo.nodes_of_job("llama-34b-continual")
    assert "node-007" not in nodes and len(nodes) == 7
    on_paths = {e for a in nodes for b in nodes for p in topo.paths(a, b) for e in p}
    assert set(net) <= on_paths
    assert all(g.split("/")[1] == "dp" for g in net["leaf-02/p16"])
    # node-008/gpu6 and gpu7 (ranks 54, 55: tp ranks 2, 3) leave by mlx5_3 -> leaf-02/p16
    assert net["leaf-02/p16"] == {"llama-34b-continual/dp/pp0-tp2", "llama-34b-continual/dp/pp0-tp3"}


def test_ranks_and_gpus(spe: Inventory) -> None:
    topo = spe.topology
    assert topo.rank_of_gpu("node-008/gpu0") == ["llama-34b-continual/rank48"]
    assert topo.rank_of_gpu("node-007/gpu0") == []
    gpus = topo.gpus_of_job("llama-34b-continual")
    assert len(gpus) == 56 and gpus[0] == "node-001/gpu0" and gpus[-1] == "node-008/gpu7"
    assert topo.gpus_of_job("nope") == []


def test_graphs(mini: Inventory) -> None:
    topo = mini.topology
    phys = topo.physical
    assert phys.nodes["rack-01"]["kind"] == "rack"
    assert phys.has_edge("rack-01", "pdu-01")
    assert phys.has_edge("r6i3n0", "r6i3n0/gpu0") and phys.has_edge("r6i3n0", "r6i3n0/mlx5_0")
    assert phys.has_edge("r6i3n0/mlx5_0", "leaf-01/p1") and phys.has_edge("leaf-01/p1", "leaf-01")
    # links run up the tiers: leaf -> port -> link -> port -> spine (spine-02/p1 was written first)
    link = "leaf-01/p34~spine-02/p1"
    assert [phys.has_edge(*e) for e in [("leaf-01", "leaf-01/p34"), ("leaf-01/p34", link),
                                        (link, "spine-02/p1"), ("spine-02/p1", "spine-02")]] == [True] * 4
    kinds = {k for _, k in phys.nodes(data="kind")}
    assert kinds == {"rack", "pdu", "node", "gpu", "nic", "switch_port", "switch", "link"}
    log = topo.logical
    assert log.has_edge("demo", "demo/rank0") and log.has_edge("demo/rank0", "r6i3n0/gpu0")
    assert log.has_edge("demo", "demo-0") and log.has_edge("demo-0", "demo-0/main")
    assert log.has_edge("demo", "gold") and log.has_edge("demo", "lustre-01")
    flow = topo.dataflow
    assert flow.has_edge("demo", "demo/pp/dp1-tp0")
    assert flow.has_edge("demo/pp/dp1-tp0", f"r6i3n0<>{A30}")
    assert flow.has_edge(f"r6i3n0<>{A30}", "spine-01/p2")
    # tp groups never leave a node, so the dataflow graph has no tp group
    assert not any(n.startswith("demo/tp/") for n in flow.nodes)


def test_set_placement_from_spans() -> None:
    """A job without ranks in the file learns them from spans; every query follows."""
    inv = parse_inventory(MINI_YAML.replace("  - id: idle-job\n", "  - id: idle-job\n    parallelism: {dp: 2}\n"))
    topo = inv.topology
    assert topo.jobs_behind("leaf-01/p3") == set()          # builds and caches the crossing index
    taken = topo.set_placement("idle-job", {0: "gsrh100-074/gpu0", 1: "node-004/gpu0", 2: "nope/gpu0", -1: "r6i3n0/gpu0"})
    assert taken == 2
    assert topo.placement("idle-job") == {0: "gsrh100-074/gpu0", 1: "node-004/gpu0"}
    # dp ring of 2 across leaves: gsrh100-074/mlx5_0 (leaf-01/p3) <-> node-004/mlx5_0 (leaf-02/p2)
    assert topo.jobs_behind("leaf-01/p3") == {"idle-job"}
    assert topo.slas_behind("leaf-02/p2") == {"gold", "bronze"}     # demo's pp pair [0,4] also crosses it
    assert topo.dependents("gsrh100-074/gpu0") == {"idle-job/rank0", "idle-job", "bronze"}
    assert topo.rank_of_gpu("node-004/gpu0") == ["demo/rank4", "idle-job/rank1"]
    assert topo.gpus_of_job("idle-job") == ["gsrh100-074/gpu0", "node-004/gpu0"]
    assert topo.logical.has_edge("idle-job/rank1", "node-004/gpu0")
    assert topo.set_placement("idle-job", {0: "gsrh100-074/gpu0"}) == 0   # nothing new
    assert topo.set_placement("nope", {0: "gsrh100-074/gpu0"}) == 0
