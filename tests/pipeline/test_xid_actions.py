"""The default pack's GPU resets and node reboots (issue 19), judged against NVIDIA's Xid catalogue
(shared realdata xid-catalog, ImmediateResolution), on the public pcie_riser scenario with one more
kernel line of the real NVRM format:

* Xid 95 (uncontained ECC error; the catalogue: RESET_GPU) at PCI 0000:3a:00 of node-004, which
  the scenario's inventory lists as node-004's GPU index 2: ``diagnose`` plans ``reset_gpu`` for
  node-004/gpu2 and for no other GPU, ranked by cost like every action.
* With Xid 79 (fallen off the bus; RESTART_BM) on node-004's GPU at 0000:ba:00 a minute later, the
  node's reboot is planned and the reset of its other GPU is not carried out: a node reboot
  supersedes a GPU reset on that node.
* In ``serve``'s loop (the live pipeline, dry run) an action the costs defer is ``scheduled`` and
  its dry-run decision comes at the first step that reaches its time, not before.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from suanli.inventory import load_inventory
from suanli.pipeline import Pipeline, diagnose_folder, open_folder, stored_inventory
from suanli.report import diagnosis_json
from suanli.rules import load_rules
from suanli.timefmt import parse_time
from tests.conftest import shared_path

XID95 = ("2026-03-17T17:47:00.000000+00:00 node-004 kernel: NVRM: Xid (PCI:0000:3a:00): 95, pid=1234, "
         "name=python3, Uncontained ECC error\n")
XID79 = ("2026-03-17T17:48:00.000000+00:00 node-004 kernel: NVRM: Xid (PCI:0000:ba:00): 79, pid=1234, "
         "name=python3, GPU has fallen off the bus.\n")


def _catalogue() -> dict[int, str]:
    path = shared_path("realdata", "xid-catalog", "nvidia-xid-catalog.csv")
    with path.open(encoding="utf-8", newline="") as f:
        return {int(r["Code"]): r["ImmediateResolution"] for r in csv.DictReader(f) if r["Code"].isdigit()}


def _scenario(tmp_path: Path, *lines: str) -> Path:
    folder = tmp_path / "scenario"
    shutil.copytree(shared_path("scenarios", "pcie_riser"), folder)
    with (folder / "kernel.log").open("a", encoding="utf-8") as f:
        f.writelines(lines)
    return folder


def _doc(folder: Path) -> dict[str, Any]:
    return json.loads(json.dumps(diagnosis_json(diagnose_folder(folder)), allow_nan=False))


def _actions(doc: dict[str, Any], name: str) -> list[tuple[str, dict[str, Any]]]:
    return [(inc["id"], a) for inc in doc["incidents"] for a in inc["actions"] if a["action"] == name]


def test_the_packs_resets_and_reboots_are_the_catalogues() -> None:
    cat = _catalogue()
    assert (cat[95], cat[64], cat[119], cat[120], cat[140], cat[79]) == ("RESET_GPU",) * 5 + ("RESTART_BM",)
    for rule in load_rules(None).rules:
        codes = {c for cond in rule.conditions for c in cond.codes if cond.name == "xid"}
        acts = {a.name for a in rule.actions}
        if "reset_gpu" in acts:
            assert codes and all(cat[c] in ("RESET_GPU", "WORKFLOW_XID_48") for c in codes), rule.name
        if "reboot_node" in acts:
            assert codes and all(cat[c] == "RESTART_BM" for c in codes), rule.name
        if codes and not acts & {"reset_gpu", "reboot_node"}:
            assert all(cat[c] not in ("RESET_GPU", "RESTART_BM") for c in codes), rule.name


def test_an_xid_that_asks_for_a_reset_gets_a_reset_of_exactly_that_gpu(tmp_path: Path) -> None:
    folder = _scenario(tmp_path, XID95)
    inv = load_inventory(folder / "inventory.yaml")
    (gpu,) = [g.id for g in inv.gpus.values() if g.node == "node-004" and (g.pci_bus_id or "").upper().endswith("3A:00.0")]
    assert gpu == "node-004/gpu2"
    doc = _doc(folder)
    ((iid, reset),) = _actions(doc, "reset_gpu")
    assert reset["target"] == gpu
    (inc,) = [i for i in doc["incidents"] if i["id"] == iid]
    assert (inc["category"], inc["root_cause"]) == ("gpu_memory_failure", {"kind": "gpu", "id": gpu})
    assert reset["status"] == "dry_run" and reset["scope"] == "gpu" and reset["rank"] >= 1
    assert reset["expected_cost"] > 0


@pytest.mark.slow
def test_a_node_reboot_supersedes_a_reset_on_that_node(tmp_path: Path) -> None:
    doc = _doc(_scenario(tmp_path, XID95, XID79))
    reboots = _actions(doc, "reboot_node")
    assert [a["target"] for _, a in reboots] == ["node-004"]
    for iid, reset in _actions(doc, "reset_gpu"):
        assert not reset["target"].startswith("node-004/") or \
            next(i for i in doc["incidents"] if i["id"] == iid)["decision"]["superseded_by"] == "reboot_node node-004"
    lost = next(i for i in doc["incidents"] if i["category"] == "gpu_lost")
    assert lost["root_cause"] == {"kind": "gpu", "id": "node-004/gpu6"}
    end = parse_time(doc["window"]["end"])          # when diagnose decides
    for a in lost["actions"]:       # the rule's actions went through the runner as the costs said
        if a["status"] in ("dry_run", "scheduled"):
            assert (a["status"] == "scheduled") == (a["mode"] != "immediate" and a["delay_s"] > 0), a
        if a["status"] == "scheduled":              # due the decision's delay after the window's end
            assert abs(parse_time(a["not_before"]) - (end + a["delay_s"])) <= 1.0   # whole seconds
        else:
            assert "not_before" not in a


@pytest.mark.slow
def test_serves_loop_carries_out_a_deferred_action_when_due_and_not_before(tmp_path: Path) -> None:
    store = open_folder(_scenario(tmp_path, XID95, XID79))
    inv = stored_inventory(store)
    pipe = Pipeline(store, inv)
    end = parse_time("2026-03-17T17:54:15Z")
    first = diagnosis_json(pipe.step(end).diagnosis)
    # the per-GPU drain the costs chose reached the executor: Slurm says it cannot, and drains the node
    lost = next(i for i in first["incidents"] if i["category"] == "gpu_lost")
    drain = next(a for a in lost["actions"] if a["action"] == "drain_node")
    pods = sorted({r.pod for j in inv.jobs.values() for r in j.ranks if r.gpu == "node-004/gpu6" and r.pod})
    assert (drain["scope"], drain["gpu"], drain["pods"]) == ("gpu", "node-004/gpu6", pods)
    (rec_drain,) = [r for recs in pipe.decisions.values() for r in recs if r["action"] == "drain_node"]
    assert rec_drain["detail"].endswith("(a per-GPU drain of node-004/gpu6 was chosen; Slurm cannot drain one GPU "
                                        "of a node, so this drains the whole node node-004)")
    (rec,) = [r for recs in pipe.decisions.values() for r in recs if r["decision"] == "scheduled"]
    assert (rec["action"], rec["target"]) == ("reboot_node", "node-004")   # the costs: after the next checkpoint
    assert rec["not_before"] == end + rec["how"]["delay_s"] and rec["how"]["mode"] in ("after_checkpoint", "after_timeout")
    before = pipe.step(rec["not_before"] - 1.0)
    followed = [r for recs in pipe.decisions.values() for r in recs if r.get("schedule_ref") == rec["id"]]
    assert followed == []
    assert _status(before, rec) == "scheduled"
    due = pipe.step(rec["not_before"])
    (done,) = [r for recs in pipe.decisions.values() for r in recs if r.get("schedule_ref") == rec["id"]]
    assert done["decision"] == "dry_run" and done["ts"] == rec["not_before"]
    assert done["detail"] == "would scontrol reboot ASAP nextstate=RESUME 'Reason=suanli gpu_fallen_off_bus' node-004"
    assert _status(due, rec) == "dry_run"
    store.close()


def _status(step: Any, rec: dict[str, Any]) -> str | None:
    for inc in step.diagnosis.incidents:
        for a in inc.actions:
            if (a.action, a.target) == (rec["action"], rec["target"]):
                return str(a.status)
    return None
