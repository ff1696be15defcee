"""No gaps on real folders: every incident of every public scenario gets a ranked, costed list with
no NaN, its inputs read from the store the way the pipeline will; the inputs of the riser scenario
are checked against the independent simulator's truth.json and trace file."""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from suanli.analysis.decisions import JobFacts, actions_json, decide, decision_json
from suanli.analysis.decisions.config import DEFAULT_CONFIG
from suanli.analysis.decisions.inputs import incident_facts, job_arrays, job_facts
from suanli.ingest.load import load_paths
from suanli.inventory import Inventory, load_inventory
from suanli.store.duck import DuckStore
from suanli.timefmt import parse_time
from tests.cli.helpers import run
from tests.conftest import shared_path

pytestmark = pytest.mark.slow  # ingest + diagnose of each scenario, seconds each on 2 cores

SCENARIOS = ("healthy", "switch_port_errors", "pcie_riser", "storage_slow", "collective_hang")


@cache
def _diagnosed(name: str) -> dict[str, Any]:
    proc = run("diagnose", shared_path("scenarios", name), "--json", timeout_s=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


@cache
def _store(name: str) -> tuple[DuckStore, Inventory]:
    folder = shared_path("scenarios", name)
    store = DuckStore()
    load_paths([folder], store)
    store.flush()
    return store, load_inventory(folder / "inventory.yaml")


def _facts(name: str, inc: dict[str, Any]) -> Any:
    store, inv = _store(name)
    doc = _diagnosed(name)
    return incident_facts(store, inv, incident_id=inc["id"], category=inc["category"],
                          root_kind=inc["root_cause"]["kind"], root_id=inc["root_cause"]["id"],
                          onset_s=parse_time(inc["start"]), now_s=parse_time(doc["window"]["end"]),
                          job_ids=inc["impact"]["jobs"], actions=inc["actions"], evidence=inc["evidence"])


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_incident_gets_a_ranked_costed_list(name: str) -> None:
    doc = _diagnosed(name)
    if name != "healthy":
        assert doc["incidents"], name
    for inc in doc["incidents"]:
        planned = [{k: a[k] for k in ("action", "target", "status")} for a in inc["actions"]]
        facts = _facts(name, {**inc, "actions": planned})
        d = decide(facts)
        assert {(r.allowed.action, r.allowed.target) for r in d.ranked} == \
            {(a["action"], a["target"]) for a in inc["actions"]}
        out = actions_json(d, facts, planned)
        # diagnose wrote the same ranked, costed list (its history is this window's own incidents)
        assert [(a["action"], a["target"], a["rank"]) for a in inc["actions"]] == \
            [(a["action"], a["target"], a["rank"]) for a in out]
        assert inc["decision"]["stay_cost"] >= inc["decision"]["chosen_cost"] or inc["decision"]["escalation"]
        text = json.dumps({"actions": out, "decision": decision_json(d)}, allow_nan=False)
        assert all(math.isfinite(a["expected_cost"]) and a["horizon_s"] == d.horizon_s for a in out), text
        assert [a["expected_cost"] for a in out] == sorted(a["expected_cost"] for a in out)
        assert [a["rank"] for a in out] == list(range(1, len(out) + 1))
        assert d.evidence[0].startswith("stay degraded: $")
    econ = doc["economics"]
    assert [r["id"] for r in econ["incidents"]] == [i["id"] for i in doc["incidents"]]
    assert econ["saving"] == pytest.approx(sum(i["decision"]["saving"] for i in doc["incidents"]), abs=0.011)
    assert econ["currency"] == "USD" and math.isfinite(econ["stay_cost"])


def _checkpoint_steps(folder: Path, job: str) -> list[int]:
    """``train.step`` of the job's checkpoint_save spans, read straight from the OTLP file."""
    steps = set()
    with (folder / "traces.otlp.jsonl").open() as f:
        for line in f:
            for rs in json.loads(line)["resourceSpans"]:
                attrs = {a["key"]: a["value"] for a in rs["resource"]["attributes"]}
                if attrs.get("job.id", {}).get("stringValue") != job:
                    continue
                for ss in rs["scopeSpans"]:
                    for sp in ss["spans"]:
                        if sp["name"] == "checkpoint_save":
                            kv = {a["key"]: a["value"] for a in sp.get("attributes", [])}
                            steps.add(int(kv["train.step"]["intValue"]))
    return sorted(steps)


def test_riser_inputs_match_the_simulators_truth() -> None:
    folder = shared_path("scenarios", "pcie_riser")
    truth = json.loads((folder / "truth.json").read_text())
    fault = truth["faults"][0]
    inc = next(i for i in _diagnosed("pcie_riser")["incidents"] if i["root_cause"]["id"] == fault["root_cause"]["id"])
    facts = _facts("pcie_riser", inc)
    tjob = next(j for j in truth["jobs"] if j["id"] == fault["jobs"][0])
    job = next(j for j in facts.jobs if j.job_id == tjob["id"])
    assert job.gpus == tjob["world"]
    assert job.healthy_step_s == pytest.approx(tjob["before_fault"]["median_step_s"], rel=0.03)
    assert job.current_step_s == pytest.approx(tjob["during_fault"]["median_step_s"], rel=0.10)
    price = yaml.safe_load((folder / "inventory.yaml").read_text())["gpu_models"][truth["cluster"]["gpu_model"]]
    assert job.gpu_hour_price == price["gpu_hour_price"]
    # One save of this job inside the window: its cadence is unknown, and the decision says so.
    assert len(_checkpoint_steps(folder, tjob["id"])) == 1 and job.checkpoint_interval_s is None
    assert job.progress_since_checkpoint_s is not None
    assert any(f"checkpoint interval of {tjob['id']} (s of work): unknown -> default 1800" in a
               for a in decide(facts).assumptions)
    # The other job saved several times: steps between saves (train.step of the spans) x its healthy step.
    other = next(j["id"] for j in truth["jobs"] if j["id"] != tjob["id"])
    store, _ = _store("pcie_riser")
    end = parse_time(truth["window"]["end"])
    of = job_facts(JobFacts(other), *job_arrays(store, other, end), parse_time(fault["start"]), end, DEFAULT_CONFIG)
    every = float(np.median(np.diff(_checkpoint_steps(folder, other))))
    assert of.checkpoint_interval_s == pytest.approx(every * (of.healthy_step_s or 0.0), rel=0.02)
    assert facts.capacity.spare_nodes == len(truth["cluster"]["spare_nodes"])
    assert facts.suspect.nodes == (fault["root_cause"]["id"].split("/")[0],)
    assert facts.suspect.gpu_uuid and facts.suspect.gpu_uuid.startswith("GPU-")
