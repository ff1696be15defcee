"""Boolean tomography on hand-built leaf-spine fabrics: every fault placed by hand, the expected
element worked out from the path sets by hand (comments), never read from the code's output."""

from __future__ import annotations

import itertools

import numpy as np

from suanli.analysis.fabric.tomography import FabricGraph, localise

# 3 leaves x 2 spines, one uplink per (leaf, spine); 2 nodes per leaf, one NIC each.
# leaf-0L/p1, p2 face node NICs; leaf-0L/p33 -> spine-01/pL, leaf-0L/p34 -> spine-02/pL.
NODES = [f"node-{i:03d}" for i in range(1, 7)]


def _graph() -> FabricGraph:
    node_nics = {}
    for i, n in enumerate(NODES):
        leaf = f"leaf-0{i // 2 + 1}"
        node_nics[n] = [(f"{n}/mlx5_0", f"{leaf}/p{i % 2 + 1}")]
    links = []
    for leaf_i in range(1, 4):
        links.append((f"leaf-0{leaf_i}/p33", f"spine-01/p{leaf_i}"))
        links.append((f"leaf-0{leaf_i}/p34", f"spine-02/p{leaf_i}"))
    return FabricGraph(node_nics, links)


ALL_PAIRS = [(a, b) for a, b in itertools.permutations(NODES, 2)]


def _run(bad: set[tuple[str, str]]):  # type: ignore[no-untyped-def]
    anomalous = sorted(bad)
    healthy = [p for p in ALL_PAIRS if p not in bad]
    return anomalous, localise(_graph(), anomalous, healthy)


def test_bad_leaf_port_both_ways_is_the_port_with_its_nic_as_equivalent() -> None:
    # node-001's only NIC sits on leaf-01/p1: every pair to or from node-001 (10 pairs) crosses it
    # on every path. Its NIC explains exactly the same pairs, so latency cannot tell them apart.
    bad = {p for p in ALL_PAIRS if "node-001" in p}
    anomalous, locs = _run(bad)
    assert len(locs) == 1
    assert (locs[0].element, locs[0].kind, locs[0].direction) == ("leaf-01/p1", "switch_port", None)
    assert "node-001/mlx5_0" in locs[0].equivalents
    assert len(locs[0].pairs) == len(anomalous) == 10


def test_bad_spine_link_found_among_equal_cost_paths() -> None:
    # leaf-01/p33~spine-01/p1 carries the leaf-01 traffic that hashes to spine-01. Slow pairs: some
    # leaf-01 <-> leaf-02 and leaf-01 <-> leaf-03 pairs, both ways. Only leaf-01's two uplinks
    # (and their end ports) are on a path of every one of them; with two equal-cost spines the
    # probes cannot say which of the two, so either is a right answer, explaining all 5 pairs.
    bad = {("node-001", "node-003"), ("node-003", "node-001"), ("node-002", "node-005"),
           ("node-005", "node-002"), ("node-001", "node-006")}
    _, locs = _run(bad)
    assert len(locs) == 1
    loc = locs[0]
    assert loc.kind == "link"
    assert loc.element in {"leaf-01/p33~spine-01/p1", "leaf-01/p34~spine-02/p1"}
    assert loc.direction is None
    assert len(loc.pairs) == 5
    # the same pairs are explained by the ports at both ends of that link
    ends = set(loc.element.split("~"))
    assert ends <= set(loc.equivalents)
    # no healthy pair has to cross it (two spines): nothing contradicted
    assert loc.contradicted == 0


def test_one_way_optical_fault_is_directional() -> None:
    # leaf-02/p1 (node-003's port) garbles only what the switch sends to node-003: the 5 pairs
    # towards node-003 are slow, the 5 from it healthy. The undirected port would wrongly slow the
    # 5 healthy pairs (each has a single NIC: the port is on all their paths), so it loses.
    bad = {(s, "node-003") for s in NODES if s != "node-003"}
    _, locs = _run(bad)
    assert len(locs) == 1
    assert (locs[0].element, locs[0].direction) == ("leaf-02/p1", "out")
    assert "node-003/mlx5_0@rx" in locs[0].equivalents


def test_two_simultaneous_faults_both_found() -> None:
    # fault 1: node-001's port both ways (10 pairs); fault 2: one-way into node-006 (5 pairs, one
    # of which, node-001 -> node-006, fault 1 already explains).
    bad = {p for p in ALL_PAIRS if "node-001" in p} | {(s, "node-006") for s in NODES if s != "node-006"}
    _, locs = _run(bad)
    found = {(x.element, x.direction) for x in locs}
    assert found == {("leaf-01/p1", None), ("leaf-03/p2", "out")}


def test_healthy_matrix_localises_nothing() -> None:
    _, locs = _run(set())
    assert locs == []


def test_segments_from_inventory_fabric_give_the_same_answer() -> None:
    g = _graph()
    uplinks = {}
    for a, b in g.links:
        uplinks.setdefault(a.split("/")[0], {})[b.split("/")[0]] = (a, b)

    def segments(la: str, lb: str) -> list[tuple[str, ...]]:
        out = []
        for spine in ("spine-01", "spine-02"):
            ua, sa = uplinks[la][spine]
            ub, sb = uplinks[lb][spine]
            out.append((ua, "~".join(sorted((ua, sa))), sa, sb, "~".join(sorted((ub, sb))), ub))
        return out

    g2 = FabricGraph(g.node_nics, g.links, segments=segments)
    bad = {(s, "node-003") for s in NODES if s != "node-003"}
    healthy = [p for p in ALL_PAIRS if p not in bad]
    locs = localise(g2, sorted(bad), healthy)
    assert [(x.element, x.direction) for x in locs] == [("leaf-02/p1", "out")]
    assert np.array_equal(locs[0].pairs, np.arange(5))
