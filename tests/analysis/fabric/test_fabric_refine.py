"""Latency cannot tell parallel uplinks apart; a BER trend on one of them can (fabric_findings.refine_by_ber)."""

from __future__ import annotations

from suanli.analysis.fabric.findings import FindingConfig, refine_by_ber
from suanli.analysis.findings import Finding
from suanli.inventory import parse_inventory

INV = """
cluster: t
racks:
  - id: rack-01
    nodes:
      - id: node-001
        gpus: [{index: 0, uuid: GPU-a}]
        nics: [{name: mlx5_0, gpu: 0, switch_port: leaf-01/p1}]
  - id: rack-02
    nodes:
      - id: node-002
        gpus: [{index: 0, uuid: GPU-b}]
        nics: [{name: mlx5_0, gpu: 0, switch_port: leaf-02/p1}]
switches:
  - {id: leaf-01, tier: leaf, rack: rack-01}
  - {id: leaf-02, tier: leaf, rack: rack-02}
  - {id: spine-01, tier: spine}
links:
  - {a: leaf-01/p33, b: spine-01/p1}
  - {a: leaf-01/p34, b: spine-01/p2}
  - {a: leaf-02/p33, b: spine-01/p3}
"""


def _latency_finding(entity: str) -> Finding:
    return Finding("optical_degradation", "link", entity, 100.0, None, 0.5,
                   (f"latency up on 4 node pairs crossing {entity} one-way (fwd)",), "fabric")


def test_moves_to_the_parallel_port_whose_ber_rose() -> None:
    inv = parse_inventory(INV)
    # spine-01/p2 went 1e-12 -> 3e-10: log10(300) = 2.48 decades >= 1.5; p1 stayed flat
    levels = {"spine-01/p2": {"pre_fec_ber": 3e-10, "pre_fec_ber_early": 1e-12},
              "spine-01/p1": {"pre_fec_ber": 1.1e-12, "pre_fec_ber_early": 1e-12},
              "spine-01/p3": {"pre_fec_ber": 1e-8, "pre_fec_ber_early": 1e-12}}   # another bundle
    (got,) = refine_by_ber([_latency_finding("leaf-01/p33~spine-01/p1")], inv, levels)
    assert (got.category, got.entity_kind, got.entity_id) == ("optical_degradation", "switch_port", "spine-01/p2")
    assert "+2.5 decades" in got.evidence[0]


def test_left_alone_without_a_big_enough_rise_or_for_counter_findings() -> None:
    inv = parse_inventory(INV)
    levels = {"spine-01/p2": {"pre_fec_ber": 2e-11, "pre_fec_ber_early": 1e-12}}   # 1.3 decades < 1.5
    f = _latency_finding("leaf-01/p33~spine-01/p1")
    assert refine_by_ber([f], inv, levels) == [f]
    crc = Finding("switch_port_errors", "switch_port", "leaf-01/p34", 100.0, None, 0.9,
                  ("leaf-01/p34 CRC error ratio 1e-3",), "fabric")
    assert refine_by_ber([crc], inv, levels, FindingConfig()) == [crc]
