"""Collective peers of NICs and ports (worked out by hand from the placement of test_fabric's
job-a: dp 2 x tp 2 x pp 2 over four nodes of two GPUs, NIC mlx5_c serving GPU c), and NIC symbol
errors judged against them."""

from __future__ import annotations

import numpy as np

from suanli.analysis.fabric.peers import collective_peers
from suanli.analysis.peer_median import peer_median_at
from suanli.store.duck import DuckStore
from tests.analysis.fabric.test_fabric import INV, _counter, _run

RAIL0_NICS = [f"node-00{i}/mlx5_0" for i in range(1, 5)]


def test_peers_are_the_jobs_nics_and_ports_on_the_same_rail() -> None:
    peers = collective_peers(INV)
    assert peers["node-003/mlx5_0"] == ("node-001/mlx5_0", "node-002/mlx5_0", "node-004/mlx5_0")
    assert peers["node-003/mlx5_1"] == ("node-001/mlx5_1", "node-002/mlx5_1", "node-004/mlx5_1")
    # node-003 is the first node of rack-02: its NICs plug into leaf-02 p1 (mlx5_0) and p2 (mlx5_1)
    assert peers["leaf-02/p1"] == ("leaf-01/p1", "leaf-01/p3", "leaf-02/p3")
    assert "leaf-01/p33" not in peers          # an uplink: ECMP spreads the collective unevenly


def test_peer_median_is_taken_at_the_ports_own_instants() -> None:
    ts = np.array([0.0, 15.0, 30.0])
    a = (np.array([0.0, 30.0]), np.array([1.0, 3.0]))      # at 15 s: 2.0 (interpolated)
    b = (np.array([0.0, 30.0]), np.array([5.0, 5.0]))
    c = (np.array([0.0, 30.0]), np.array([np.nan, np.nan]))  # no data: left out
    assert peer_median_at(ts, [a, b, c]).tolist() == [3.0, 3.5, 4.0]


def _symbols(rates: dict[str, float]):  # type: ignore[no-untyped-def]
    def mutate(store: DuckStore, rng: np.random.Generator) -> None:
        for nic, r in rates.items():
            _counter(store, "node_infiniband_symbol_error_total", "nic", nic, r)
    return mutate


def test_symbol_errors_rising_alike_on_every_nic_of_the_rail_are_no_fault() -> None:
    # 0.5 symbol errors/s from the fault on, on all four mlx5_0 NICs: each a sudden increase above
    # min_symbol_error_rate 0.05/s, but none 10x its three peers (0.5/s each)
    assert _run(_symbols(dict.fromkeys(RAIL0_NICS, 0.5))).findings == []


def test_symbol_errors_on_one_nic_far_above_its_peers_blame_its_port() -> None:
    # node-003/mlx5_0 at 10/s, 20x its peers' 0.5/s: its link errs, found at its leaf port
    rates = {**dict.fromkeys(RAIL0_NICS, 0.5), "node-003/mlx5_0": 10.0}
    res = _run(_symbols(rates))
    assert [(f.category, f.entity_id) for f in res.findings] == [("switch_port_errors", "leaf-02/p1")]


def test_a_long_rail_gives_each_nic_its_nearest_peers_only() -> None:
    # a rail of 10 NICs, at most 4 peers: the two before and the two after in the rail's order
    from suanli.analysis.fabric.peers import _near

    rail = [f"n{i}" for i in range(10)]
    assert _near(rail, 5, 4) == ["n3", "n4", "n6", "n7"]
    assert _near(rail, 0, 4) == ["n8", "n9", "n1", "n2"]            # wrapping round the rail
    assert _near(rail[:4], 1, 4) == ["n0", "n2", "n3"]                # short rail: all the others
    assert all(len(v) <= 3 for v in collective_peers(INV, max_peers=3).values())
