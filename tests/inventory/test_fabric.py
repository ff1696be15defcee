"""Paths through the hand-built 2-leaf / 2-spine fabric of tests/inventory/_mini.py, counted by hand."""

from __future__ import annotations

import pytest

from suanli.inventory import Inventory, Topology, load_inventory, parse_inventory
from tests.conftest import shared_path
from tests.inventory._mini import A30, MINI_YAML


@pytest.fixture(scope="module")
def topo() -> Topology:
    return parse_inventory(MINI_YAML).topology


def test_same_leaf_is_four_entities(topo: Topology) -> None:
    # r6i3n0 and gsrh100-074 both hang off leaf-01: nic, leaf port, leaf port, nic
    assert topo.paths("r6i3n0", "gsrh100-074", "mlx5_0", "mlx5_0") == [
        ["r6i3n0/mlx5_0", "leaf-01/p1", "leaf-01/p3", "gsrh100-074/mlx5_0"],
    ]


def test_cross_leaf_through_each_spine(topo: Topology) -> None:
    # r6i3n0/mlx5_0 (leaf-01/p1) to node-004/mlx5_0 (leaf-02/p2): one path per spine, 10 entities each
    via_spine1 = ["r6i3n0/mlx5_0", "leaf-01/p1", "leaf-01/p33", "leaf-01/p33~spine-01/p1", "spine-01/p1",
                  "spine-01/p2", "leaf-02/p33~spine-01/p2", "leaf-02/p33", "leaf-02/p2", "node-004/mlx5_0"]
    via_spine2 = ["r6i3n0/mlx5_0", "leaf-01/p1", "leaf-01/p34", "leaf-01/p34~spine-02/p1", "spine-02/p1",
                  "spine-02/p2", "leaf-02/p34~spine-02/p2", "leaf-02/p34", "leaf-02/p2", "node-004/mlx5_0"]
    paths = topo.paths("r6i3n0", "node-004", "r6i3n0/mlx5_0", "node-004/mlx5_0")
    assert sorted(paths) == sorted([via_spine1, via_spine2])
    assert topo.path("r6i3n0", "node-004", "mlx5_0", "mlx5_0") in (via_spine1, via_spine2)


def test_reverse_direction_mirrors(topo: Topology) -> None:
    fwd = topo.paths("r6i3n0", "node-004", "mlx5_0", "mlx5_0")
    back = topo.paths("node-004", "r6i3n0", "mlx5_0", "mlx5_0")
    assert sorted(list(reversed(p)) for p in back) == sorted(fwd)


def test_rails_when_no_nic_given(topo: Topology) -> None:
    # r6i3n0 has mlx5_0 and mlx5_1; node-004 has the same names: 2 rails x 2 spines = 4 paths
    paths = topo.paths("r6i3n0", "node-004")
    assert len(paths) == 4
    assert {(p[0], p[-1]) for p in paths} == {("r6i3n0/mlx5_0", "node-004/mlx5_0"),
                                             ("r6i3n0/mlx5_1", "node-004/mlx5_1")}
    # the A30 node has one NIC: both rails of r6i3n0 land on it (2 rails x 2 spines)
    assert {p[-1] for p in topo.paths("r6i3n0", A30)} == {f"{A30}/mlx5_0"}
    assert len(topo.paths("r6i3n0", A30)) == 4
    # only the source NIC given: the same rail on the other side
    assert {p[-1] for p in topo.paths("r6i3n0", "node-004", src_nic="mlx5_1")} == {"node-004/mlx5_1"}
    assert {p[0] for p in topo.paths("r6i3n0", "node-004", dst_nic="mlx5_1")} == {"r6i3n0/mlx5_1"}


def test_no_path(topo: Topology) -> None:
    assert topo.paths("r6i3n0", "r6i3n0") == []
    assert topo.paths("r6i3n0", "nope") == []
    assert topo.path("r6i3n0", "r6i3n0") == []


def test_path_is_stable_and_spread() -> None:
    """path() must not depend on PYTHONHASHSEED: it is a pure function of the NIC pair, and over many
    NIC pairs it uses both spines."""
    inv = load_inventory(shared_path("scenarios", "switch_port_errors", "inventory.yaml"))
    topo = inv.topology
    first = topo.path("node-001", "node-005", "mlx5_0", "mlx5_0")
    again = parse_inventory((shared_path("scenarios", "switch_port_errors", "inventory.yaml")).read_text())
    assert again.topology.path("node-001", "node-005", "mlx5_0", "mlx5_0") == first
    spines = set()
    for a in ("node-001", "node-002", "node-003", "node-004"):
        for b in ("node-005", "node-006", "node-007", "node-008"):
            for nic in ("mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"):
                spines.add(topo.path(a, b, nic, nic)[4].partition("/")[0])
    assert spines == {"spine-01", "spine-02"}


def test_scenario_ecmp_count() -> None:
    # "8 uplinks per leaf to 2 spines": 4 parallel cables leaf->spine per spine on each side,
    # so per NIC pair: 2 spines x 4 x 4 = 32 equal-cost paths; per node pair with 4 rails: 128
    topo = load_inventory(shared_path("scenarios", "switch_port_errors", "inventory.yaml")).topology
    assert len(topo.paths("node-001", "node-005", "mlx5_0", "mlx5_0")) == 32
    assert len(topo.paths("node-001", "node-008")) == 128
    assert len(topo.paths("node-001", "node-002")) == 4
    assert all(len(p) == 10 for p in topo.paths("node-001", "node-005"))


@pytest.mark.parametrize(("gpu", "nic"), [
    ("r6i3n0/gpu0", "r6i3n0/mlx5_0"),      # exact affinity
    ("r6i3n0/gpu1", "r6i3n0/mlx5_0"),      # largest gpu <= 1 is 0
    ("r6i3n0/gpu2", "r6i3n0/mlx5_1"),
    ("r6i3n0/gpu3", "r6i3n0/mlx5_1"),
    (f"{A30}/gpu1", f"{A30}/mlx5_0"),
    ("node-004/gpu1", "node-004/mlx5_1"),
    ("nope/gpu0", None),
])
def test_nic_for_gpu(topo: Topology, gpu: str, nic: str | None) -> None:
    assert topo.nic_for_gpu(gpu) == nic


def test_nic_for_gpu_fallbacks() -> None:
    text = ("cluster: c\nracks:\n  - id: r\n    nodes:\n      - id: n\n        gpus:\n"
            "          - {index: 0, uuid: u0}\n          - {index: 1, uuid: u1}\n        nics:\n"
            "          - {name: ib1, gpu: 1}\n          - {name: ib0}\n      - id: m\n        gpus:\n"
            "          - {index: 0, uuid: u2}\n")
    topo = parse_inventory(text).topology
    assert topo.nic_for_gpu("n/gpu0") == "n/ib1"      # nothing <= 0: the node's first NIC
    assert topo.nic_for_gpu("n/gpu1") == "n/ib1"
    assert topo.nic_for_gpu("m/gpu0") is None         # no NIC at all


def test_switch_port_errors_rails() -> None:
    # 8 GPUs share 4 NICs (gpu: 0, 2, 4, 6): GPU 5 leaves by the NIC of GPU 4 = mlx5_2
    inv: Inventory = load_inventory(shared_path("scenarios", "switch_port_errors", "inventory.yaml"))
    assert inv.topology.nic_for_gpu("node-008/gpu5") == "node-008/mlx5_2"
    assert inv.topology.nic_for_gpu("node-008/gpu7") == "node-008/mlx5_3"


def test_three_tier_and_direct_links() -> None:
    """Leaves on different pods reach each other through a core: leaf-spine-core-spine-leaf."""
    text = """cluster: c
racks:
  - id: r
    nodes:
      - {id: a, nics: [{name: ib0, switch_port: l1/p1}]}
      - {id: b, nics: [{name: ib0, switch_port: l2/p1}]}
      - {id: c, nics: [{name: ib0, switch_port: l3/p1}]}
switches: [{id: l1}, {id: l2}, {id: l3}, {id: s1}, {id: s2}, {id: core}]
links:
  - {a: l1/p9, b: s1/p1}
  - {a: l2/p9, b: s2/p1}
  - {a: s1/p9, b: core/p1}
  - {a: s2/p9, b: core/p2}
  - {a: l1/p10, b: l3/p10}
"""
    topo = parse_inventory(text).topology
    # a -> b: ib0, l1/p1, l1/p9, link, s1/p1, s1/p9, link, core/p1, core/p2, link, s2/p9, s2/p1, link, l2/p9, l2/p1, ib0
    (path,) = topo.paths("a", "b")
    assert len(path) == 16 and path[7:9] == ["core/p1", "core/p2"]
    # a -> c: a leaf-to-leaf cable, no spine
    assert topo.paths("a", "c") == [["a/ib0", "l1/p1", "l1/p10", "l1/p10~l3/p10", "l3/p10", "l3/p1", "c/ib0"]]


def _nx_paths(inv: Inventory, src_nic: str, dst_nic: str) -> list[list[str]]:
    """Peer computation: NetworkX all_shortest_paths on the undirected physical graph, switches dropped."""
    import networkx as nx

    phys = inv.topology.physical
    fabric = [n for n, k in phys.nodes(data="kind") if k in ("nic", "switch_port", "link", "switch")]
    und = phys.subgraph(fabric).to_undirected(as_view=True)
    paths = nx.all_shortest_paths(und, src_nic, dst_nic)
    return sorted([e for e in p if inv.kind_of(e) != "switch"] for p in paths)


@pytest.mark.parametrize(("src", "dst"), [
    ("node-001/mlx5_0", "node-005/mlx5_0"), ("node-002/mlx5_3", "node-008/mlx5_1"),
    ("node-006/mlx5_2", "node-003/mlx5_2"), ("node-001/mlx5_1", "node-004/mlx5_2"),
])
def test_paths_match_networkx(src: str, dst: str) -> None:
    inv = load_inventory(shared_path("scenarios", "switch_port_errors", "inventory.yaml"))
    ours = inv.topology.paths(src.split("/")[0], dst.split("/")[0], src, dst)
    assert sorted(ours) == _nx_paths(inv, src, dst)


@pytest.mark.slow
def test_cluster_scale() -> None:
    """1,280 nodes, 40 leaves x 8 spines x 2 uplinks: 8 x 2 x 2 = 32 ECMP paths per cross-leaf NIC pair.
    (How long it takes is measured in bench/inventory.py, not asserted here.)"""
    from suanli.inventory.synth import synthetic_inventory_yaml

    text = synthetic_inventory_yaml(nodes=1280, parallelism=(160, 8, 8))
    inv = parse_inventory(text)
    topo = inv.topology
    net = topo.job_network("big")
    assert (len(inv.nodes), len(inv.gpus), len(inv.nics), len(inv.links)) == (1280, 10240, 5120, 640)
    assert len(topo.paths("node-0001", "node-1280", "mlx5_0", "mlx5_0")) == 32
    assert len(topo.paths("node-0001", "node-0032", "mlx5_0", "mlx5_0")) == 1    # same leaf
    # dp rings and pp chains touch every node: all 5,120 NICs, their 5,120 ports, all 640 links
    # and both ends of each (1,280 ports): 12,160 entities
    assert len(net) == 5120 + 5120 + 640 + 1280
    assert inv.resolver.gpu(host="node-0077:9400", pci_bus_id="0000:28:00.0") == "node-0077/gpu1"
