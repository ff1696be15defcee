"""The pipeline's stages one by one, on the switch_port_errors scenario's inventory: inhibition over
every kind of signal (and who muted whom), inhibition along the topology asking the same Reach
correlation uses, and the actions an incident gets."""

from __future__ import annotations

import pytest

from suanli.analysis.findings import Finding
from suanli.incidents.model import Impact, Incident, Signal
from suanli.incidents.reach import Reach
from suanli.incidents.signals import alertmanager_signals, finding_signals
from suanli.inventory import Inventory, load_inventory
from suanli.pipeline import stages
from suanli.rules import EntityIndex, InhibitRule, RuleSet, parse_matcher
from tests.conftest import shared_path

T0 = 1_773_106_800.0
PORT = "leaf-02/p16"          # cabled to node-008/mlx5_3 in that inventory
NIC_BEHIND = "node-008/mlx5_3"
NIC_ELSEWHERE = "node-001/mlx5_0"
GPU = "node-004/gpu2"


@pytest.fixture(scope="module")
def inv() -> Inventory:
    return load_inventory(shared_path("scenarios", "switch_port_errors", "inventory.yaml"))


def _rules(*rules: InhibitRule) -> RuleSet:
    return RuleSet(rules=(), inhibit_rules=rules)


def _inhibit(src: str, tgt: str, equal: tuple[str, ...] = (), topology: str | None = None) -> InhibitRule:
    return InhibitRule("r", (parse_matcher(src),), (parse_matcher(tgt),), equal, topology)


def _rule_alert(name: str, kind: str, eid: str, ref: str, **labels: str) -> Signal:
    return Signal("rule", name, kind, eid, T0, None, T0, None, 0.3,
                  labels=tuple(sorted({"alertname": name, **labels}.items())), ref=ref)


def test_a_finding_mutes_a_rule_alert_and_a_webhook_and_says_so(inv: Inventory) -> None:
    lost = Finding("gpu_lost", "gpu", GPU, T0, None, 0.95, ("Xid 79",), "health")
    sigs = finding_signals([lost], EntityIndex.from_inventory(inv).labels)
    sigs.append(_rule_alert("gpu_util_low", "gpu", GPU, "util@gpu", gpu=GPU))
    sigs += alertmanager_signals({"alerts": [{"status": "firing", "startsAt": "2026-03-10T01:41:00Z",
                                              "fingerprint": "f00d", "labels": {"alertname": "GpuLowUtil",
                                                                                "gpu": GPU}}]}, inv)
    rule = _inhibit('category="gpu_lost"', 'alertname=~"gpu_util_low|GpuLowUtil"', ("gpu",))
    out = stages.inhibition(sigs, _rules(rule), Reach(inv))
    by_name = {s.name: s for s in out}
    assert by_name["gpu_util_low"].muted_by == ("finding:gpu_lost@node-004/gpu2#1773106800",)
    assert by_name["GpuLowUtil"].muted_by == ("finding:gpu_lost@node-004/gpu2#1773106800",)
    assert by_name["gpu_lost"].muted_by == ()                       # never itself
    assert len(out) == len(sigs)                                     # counted, never dropped


def test_a_fault_that_ended_mutes_nothing(inv: Inventory) -> None:
    ended = Finding("gpu_lost", "gpu", GPU, T0, T0 + 60, 0.95, (), "health")   # resolved: inhibits nothing
    sigs = [*finding_signals([ended], EntityIndex.from_inventory(inv).labels),
            _rule_alert("gpu_util_low", "gpu", GPU, "util@gpu", gpu=GPU)]
    out = stages.inhibition(sigs, _rules(_inhibit('category="gpu_lost"', 'alertname="gpu_util_low"', ("gpu",))),
                            Reach(inv))
    assert [s.muted_by for s in out] == [(), ()]


def test_topology_inhibition_asks_reach_the_same_question_as_correlation(inv: Inventory) -> None:
    # the bad port's finding mutes the retransmit alert of the NIC cabled to it, not another NIC's
    crc = Finding("switch_port_errors", "switch_port", PORT, T0, None, 0.85, (), "fabric")
    sigs = [*finding_signals([crc]), _rule_alert("retx", "nic", NIC_BEHIND, "retx@behind"),
            _rule_alert("retx", "nic", NIC_ELSEWHERE, "retx@elsewhere")]
    reach = Reach(inv)
    rule = _inhibit('alertname="switch_port_errors"', 'alertname="retx"', topology="upstream")
    out = stages.inhibition(sigs, _rules(rule), reach)
    assert {s.entity_id: s.muted_by for s in out if s.name == "retx"} == {
        NIC_BEHIND: ("finding:switch_port_errors@leaf-02/p16#1773106800",), NIC_ELSEWHERE: ()}
    assert reach.downstream(PORT, NIC_BEHIND) and not reach.downstream(PORT, NIC_ELSEWHERE)
    assert reach.explains(PORT, out[1], "switch_port_errors")


def _incident(category: str, kind: str, root: str, jobs: tuple[str, ...], signals: list[Signal]) -> Incident:
    return Incident(category, kind, root, 0.9, T0, T0, None, signals=signals, impact=Impact(jobs=jobs))


def test_an_incident_without_rule_actions_gets_its_categorys_defaults() -> None:
    # the category table: a lost GPU drains its node, reschedules its jobs and opens a ticket
    inc = _incident("gpu_lost", "gpu", GPU, ("job-a", "job-b"), [])
    (done,) = stages.actions([inc], {})
    assert [(a.action, a.target, a.status) for a in done.actions] == [
        ("drain_node", "node-004", "dry_run"), ("reschedule_job", "job-a", "dry_run"),
        ("reschedule_job", "job-b", "dry_run"), ("open_ticket", GPU, "dry_run")]


def test_rule_decisions_at_the_root_replace_the_defaults_and_a_victims_do_not() -> None:
    at_root = Signal("rule", "gpu_fell_off_bus", "gpu", GPU, T0, category="gpu_lost", ref="lost@gpu")
    victim = Signal("rule", "rank_stalled", "rank", "job-a/rank3", T0, category="collective_hang", ref="stall@rank")
    decisions = {"lost@gpu": [{"action": "drain_node", "target": "node-004", "decision": "blocked_by_guard"}],
                 "stall@rank": [{"action": "reschedule_job", "target": "job-a", "decision": "dry_run"}]}
    (done,) = stages.actions([_incident("gpu_lost", "gpu", GPU, ("job-a",), [at_root, victim])], decisions)
    assert [(a.action, a.target, a.status) for a in done.actions] == [("drain_node", "node-004", "blocked_by_guard")]
