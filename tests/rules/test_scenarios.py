"""The default pack on the public scenarios: alerts land on the injected fault (truth.json), muted
symptoms are counted, and a healthy window raises no critical or warning alert."""

from __future__ import annotations

import pytest

from suanli.incidents.inhibit import apply_inhibitions
from suanli.rules import EntityIndex, alerts_timeline, evaluate_window, load_rules
from suanli.timefmt import parse_time
from tests.conftest import shared_path
from tests.rules.scenario_data import load_scenario


def _run(name: str) -> tuple[dict, list, object]:
    inv, store, truth, start, end = load_scenario(shared_path("scenarios", name))
    idx = EntityIndex.from_inventory(inv)
    rs = load_rules(None)
    alerts = evaluate_window(rs, store, idx, start, end)
    return truth, alerts, apply_inhibitions(alerts, rs.inhibit_rules, lambda src, tgt: tgt in idx.dependents(src))


@pytest.mark.parametrize("name", ["pcie_riser", "switch_port_errors"])
def test_unmuted_serious_alerts_are_at_the_fault(name: str) -> None:
    truth, _alerts, res = _run(name)
    (fault,) = truth["faults"]
    root = fault["root_cause"]["id"]
    onset = parse_time(fault["start"])
    serious = [a for a in res.kept if a.state == "firing" and a.severity in ("critical", "warning")]
    assert serious and {a.entity_id for a in serious} == {root}
    assert {a.category for a in serious} == {fault["category"]}
    assert all(onset <= a.fired_at <= onset + 600 for a in serious)
    assert res.muted_count >= 1                  # symptoms (retransmits behind, hot GPU, job SLA) muted


def test_riser_rule_fires_on_the_riser_gpu_with_its_actions() -> None:
    truth, alerts, _ = _run("pcie_riser")
    riser = [a for a in alerts if a.rule == "pcie_riser_fault"]
    assert [a.entity_id for a in riser] == [truth["faults"][0]["root_cause"]["id"]]
    acts = {(p.action, p.target) for p in riser[0].actions}
    assert ("reschedule_job", truth["faults"][0]["jobs"][0]) in acts
    assert ("open_ticket", riser[0].entity_id) in acts


def test_timeline_marks_muted_symptoms() -> None:
    _, alerts, res = _run("pcie_riser")
    rows = alerts_timeline(alerts, muted=res.muted)
    riser_key = next(r["key"] for r in rows if r["rule"] == "pcie_riser_fault")
    hot = next(r for r in rows if r["rule"] == "gpu_over_temperature")
    assert hot["muted_by"] == [riser_key] and hot["entity_id"] == "node-002/gpu5"
    assert [r["fired_at"] for r in rows] == sorted(r["fired_at"] for r in rows)


def test_healthy_window_raises_nothing_serious() -> None:
    _, alerts, _ = _run("healthy")
    assert [a for a in alerts if a.severity != "info"] == []
