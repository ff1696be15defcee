"""The decision as JSON and as the economics view; every setting documented in docs/decisions.md."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from suanli.analysis.decisions import (
    AllowedAction,
    Capacity,
    DecisionConfig,
    IncidentFacts,
    JobFacts,
    Plan,
    Suspect,
    actions_json,
    decide,
    decision_json,
    plan_of,
    savings,
    supersede,
)
from suanli.analysis.decisions.text import money

DOC = (Path(__file__).resolve().parents[2] / "docs" / "decisions.md").read_text()
GPU = "node-003/gpu5"


def _facts(price: float, currency: str | None = "USD", incident: str = "inc-a") -> IncidentFacts:
    # 32 GPUs, pace 0.5 (step 1 s -> 2 s), 100 s of work since the checkpoint, restart 200 s, one spare node.
    job = JobFacts("gpt", 32, price, 1.0, 2.0, False, 100.0, 3000.0, 200.0, False, 8)
    allowed = (AllowedAction("open_ticket", GPU, {"text": "replace riser card"}),
               AllowedAction("drain_node", "node-003"), AllowedAction("reschedule_job", "gpt"))
    return IncidentFacts(incident, "pcie_riser", "gpu", GPU, 1e9, 1e9 + 60, allowed, (job,),
                         Suspect(GPU, "GPU-77aa", ("gpt-worker-3",), ("node-003",), 8), Capacity(8, 1), None, False,
                         currency)


def test_actions_keep_their_keys_and_gain_costs_in_rank_order() -> None:
    # D = 32 x 3.00 / 3600 = 0.026667 $/s. Per-GPU drain (100 + 200 + 120) D = $11.20; restart without the node
    # (100 + 200 + 300) D = $16.00; the ticket changes nothing (as staying).
    f = _facts(3.0)
    planned = [{"action": "open_ticket", "target": GPU, "status": "dry_run", "text": "replace riser card"},
               {"action": "drain_node", "target": "node-003", "status": "dry_run"},
               {"action": "reschedule_job", "target": "gpt", "status": "executed"}]
    d = decide(f)
    out = actions_json(d, f, planned)
    assert [a["action"] for a in out] == ["drain_node", "reschedule_job", "open_ticket"]
    assert out[0]["expected_cost"] == pytest.approx(11.20)
    assert (out[0]["scope"], out[0]["uuid"], out[0]["pods"], out[0]["chosen"]) == ("gpu", "GPU-77aa", ["gpt-worker-3"], True)
    assert out[1]["expected_cost"] == pytest.approx(16.00) and out[1]["status"] == "executed"
    assert out[2]["text"] == "replace riser card" and out[2]["scope"] == "none"
    assert all(a["horizon_s"] == 14400.0 for a in out)
    doc = decision_json(d)
    assert doc["chosen"] == {"action": "drain_node", "target": "node-003", "mode": "immediate", "delay_s": 0.0}
    assert doc["saving"] == pytest.approx(round(d.stay_cost - 11.20, 2))
    json.dumps(doc, allow_nan=False)


def test_savings_add_up_per_incident_and_name_other_currencies() -> None:
    a, b = decide(_facts(3.0, incident="inc-a")), decide(_facts(6.0, incident="inc-b"))
    eur = decide(_facts(3.0, "EUR", incident="inc-c"))
    view = savings([a, b, eur], "USD")
    assert [r.incident_id for r in view.incidents] == ["inc-a", "inc-b"]
    # Every cost is a multiple of the price, so the second incident saves exactly twice the first.
    assert view.incidents[1].saving == pytest.approx(2 * view.incidents[0].saving, abs=0.011)
    assert view.total_saving == pytest.approx(view.incidents[0].saving + view.incidents[1].saving)
    assert view.total_stay - view.total_chosen == pytest.approx(view.total_saving, abs=0.011)
    assert view.mixed_currencies == ("inc-c (EUR)",)
    assert view.incidents[0].chosen == "drain_node node-003 (immediate)"


def test_money_reads_like_the_issue() -> None:
    assert money(412.0, "USD") == "$412"
    assert money(96.5, "USD") == "$96.50"
    assert money(1204.4, "EUR") == "€1,204"
    assert money(3.0, "CHF") == "3.00 CHF"
    assert money(-5.0, "USD") == "-$5.00"


def test_every_setting_is_documented() -> None:
    missing = [f.name for f in dataclasses.fields(DecisionConfig) if f"`{f.name}`" not in DOC]
    assert missing == []


def test_the_chosen_remediations_of_two_incidents_deduplicate() -> None:
    # Incident a drains only the pods on node-003/gpu5; incident b (same node, a node-wide fault) drains node-003:
    # the node drain supersedes the per-GPU one.
    a = _facts(3.0)
    da = decide(a)
    node_only = (AllowedAction("drain_node", "node-003"),)
    b = IncidentFacts("inc-b", "nic_down", "nic", "node-003/mlx5_0", 1e9, 1e9 + 60, node_only, a.jobs,
                      Suspect(nodes=("node-003",), node_gpus=8), Capacity(8, 1), currency="USD")
    db = decide(b)
    pa, pb = plan_of(da, a), plan_of(db, b)
    assert pa == Plan("drain_node", "node-003", "node-003", GPU, "gpu")
    assert pb == Plan("drain_node", "node-003", "node-003", None, "node")
    kept, dropped = supersede([pa, pb])
    assert kept == [pb] and dropped == [(pa, pb)]
