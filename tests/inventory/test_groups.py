"""Megatron-LM collective groups (order tp-cp-ep-dp-pp), worked out by hand."""

from __future__ import annotations

from suanli.inventory import megatron_groups, parse_inventory
from tests.inventory._mini import MINI_YAML


def test_dp2_tp2_pp2_by_hand() -> None:
    # rank = pp_i*(dp*tp) + dp_i*tp + tp_i with dp = tp = pp = 2:
    # (pp,dp,tp): 000->0 001->1 010->2 011->3 100->4 101->5 110->6 111->7
    groups = parse_inventory(MINI_YAML).topology.collective_groups("demo")
    assert groups == {
        "tp": [[0, 1], [2, 3], [4, 5], [6, 7]],
        "dp": [[0, 2], [1, 3], [4, 6], [5, 7]],
        "pp": [[0, 4], [1, 5], [2, 6], [3, 7]],
    }


def test_group_ids_follow_the_probe() -> None:
    # the simulator's spans name dp groups "llama-34b-continual/dp/pp0-tp3" (switch_port_errors traces)
    groups = megatron_groups("llama-34b-continual", {"dp": 14, "tp": 4, "pp": 1})
    assert [g.id for g in groups["dp"]] == [f"llama-34b-continual/dp/pp0-tp{t}" for t in range(4)]
    # dp group of tp rank 3: ranks 3, 7, 11, ..., 55 (every 4th)
    assert groups["dp"][3].ranks == tuple(range(3, 56, 4))
    assert groups["tp"][13].id == "llama-34b-continual/tp/pp0-dp13"
    assert groups["tp"][13].ranks == (52, 53, 54, 55)
    assert [g.ranks for g in groups["pp"]][:2] == [(0,), (1,)]
    assert len(groups["pp"]) == 56


def test_cp_and_ep_only_when_used() -> None:
    assert set(megatron_groups("j", {"dp": 2, "tp": 2})) == {"tp", "dp", "pp"}
    # tp=2, cp=2, dp=2: rank = dp_i*4 + cp_i*2 + tp_i
    g = megatron_groups("j", {"dp": 2, "tp": 2, "cp": 2})
    assert [x.ranks for x in g["cp"]] == [(0, 2), (1, 3), (4, 6), (5, 7)]
    assert [x.ranks for x in g["dp"]] == [(0, 4), (1, 5), (2, 6), (3, 7)]
    assert g["cp"][1].id == "j/cp/pp0-dp0-tp1"
    # ep between cp and dp: tp=1, ep=2, dp=2, pp=2 -> rank = pp_i*4 + dp_i*2 + ep_i
    e = megatron_groups("j", {"dp": 2, "ep": 2, "pp": 2})
    assert [x.ranks for x in e["ep"]] == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert [x.ranks for x in e["pp"]] == [(0, 4), (1, 5), (2, 6), (3, 7)]


def test_neighbour_pairs() -> None:
    g = megatron_groups("j", {"dp": 4, "pp": 3})
    # dp ring of 4 wraps around; pp is a chain of 3 stages
    assert g["dp"][0].neighbour_pairs() == [(0, 1), (1, 2), (2, 3), (3, 0)]
    assert g["pp"][0].neighbour_pairs() == [(0, 4), (4, 8)]
    # a ring of two is one pair, not two
    assert megatron_groups("j", {"dp": 2})["dp"][0].neighbour_pairs() == [(0, 1)]


def test_every_rank_in_exactly_one_group_per_kind() -> None:
    par = {"dp": 3, "tp": 4, "pp": 2, "cp": 2, "ep": 1}
    world = 3 * 4 * 2 * 2
    for kind, groups in megatron_groups("j", par).items():
        members = sorted(r for g in groups for r in g.ranks)
        assert members == list(range(world)), kind
