"""``reset_gpu`` and ``reboot_node`` as rule actions: a rule file may name them, they target the
alert's GPU and its node, the guard counts what they take out, a dry run (the default) touches
nothing, and Slurm reboots through ``scontrol reboot`` (the stand-in scontrol of actions_support.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from suanli.errors import InputError
from suanli.rules import ActionRunner, ActionsConfig, AuditLog, EntityIndex
from suanli.rules.action_config import ACTIONS
from suanli.rules.evaluator import plan_actions
from suanli.rules.executors import LogExecutor, SlurmExecutor
from suanli.rules.language import parse_rules
from tests.rules.actions_support import FakeSlurm, alert, fleet, make_fake_slurm, on_path

RULES = """
rules:
  - name: gpu_reset_wanted
    scope: gpu
    category: gpu_memory_failure
    conditions:
      all:
        - gpu_temp > 85 for 5m
    actions:
      - reset_gpu
      - reboot_node
      - open_ticket: reset did not help?
"""


def test_a_rule_may_ask_for_a_reset_and_a_reboot_on_its_gpu_and_node() -> None:
    assert {"reset_gpu", "reboot_node"} <= set(ACTIONS)
    rule = parse_rules(RULES).rules[0]
    index = EntityIndex(gpus=["n07/gpu3"], nodes=["n07"], gpu_node={"n07/gpu3": "n07"})
    planned = plan_actions(rule, "n07/gpu3", index)
    assert [(a.action, a.target_kind, a.target) for a in planned] == [
        ("reset_gpu", "gpu", "n07/gpu3"), ("reboot_node", "node", "n07"), ("open_ticket", "gpu", "n07/gpu3")]


def test_an_unknown_action_is_still_refused_by_name() -> None:
    with pytest.raises(InputError, match=r"unknown action 'power_cycle'.*reset_gpu, reboot_node"):
        parse_rules(RULES.replace("- reboot_node", "- power_cycle"))


def test_dry_run_by_default_touches_nothing_but_counts_the_node(tmp_path: Path) -> None:
    fake = make_fake_slurm(tmp_path)
    runner = ActionRunner(ActionsConfig(), fleet(), {"reboot_node": SlurmExecutor(scontrol=str(fake.bindir / "scontrol"))},
                          AuditLog(tmp_path / "a.jsonl"))
    assert runner.mode == "dry_run"
    (rec,) = runner.handle([alert("n03", "reboot_node", kind="node")], now=0.0)
    assert rec["decision"] == "dry_run" and rec["effect"]["nodes"] == ["n03"]
    assert "scontrol reboot ASAP nextstate=RESUME 'Reason=suanli xid79' n03" in rec["detail"]
    assert fake.runs() == []
    (gpu,) = runner.handle([alert("n04/gpu0", "reset_gpu", kind="gpu")], now=1.0)
    assert gpu["decision"] == "dry_run" and gpu["effect"]["gpus"] == ["n04/gpu0"] and gpu["effect"]["nodes"] == []


def test_slurm_reboots_a_node_when_live(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake: FakeSlurm = make_fake_slurm(tmp_path)
    monkeypatch.setenv("PATH", on_path(fake.bindir))
    live = ActionsConfig(dry_run=False, max_drain_fraction=1.0, max_job_drain_fraction=1.0)
    runner = ActionRunner(live, fleet(), {"reboot_node": SlurmExecutor()}, AuditLog(tmp_path / "a"))
    (rec,) = runner.handle([alert("n05", "reboot_node", kind="node", text="Xid 79 twice")], now=0.0)
    assert rec["decision"] == "executed"
    assert fake.runs() == [["reboot", "ASAP", "nextstate=RESUME", "Reason=suanli xid79: Xid 79 twice", "n05"]]
    assert runner.drained == {"n05"}


def test_a_gpu_reset_after_a_reboot_of_its_node_is_superseded(tmp_path: Path) -> None:
    # the dedup rule "a node reboot supersedes a GPU reset", at the runner: n03's reboot resets n03/gpu0
    # too, so a reset of it within dedup_window (1 h) is not done again; another node's GPU is
    fake = make_fake_slurm(tmp_path)
    ex = {"reboot_node": SlurmExecutor(scontrol=str(fake.bindir / "scontrol")), "reset_gpu": LogExecutor()}
    runner = ActionRunner(ActionsConfig(), fleet(), ex, AuditLog(tmp_path / "a.jsonl"))
    reboot, reset, other = runner.handle([alert("n03", "reboot_node", kind="node", fired_at=0.0),
                                          alert("n03/gpu0", "reset_gpu", kind="gpu", fired_at=60.0),
                                          alert("n04/gpu0", "reset_gpu", kind="gpu", fired_at=60.0)])
    assert (reboot["decision"], reset["decision"], other["decision"]) == ("dry_run", "skipped_duplicate", "dry_run")
    assert reset["detail"] == "superseded: reboot_node n03 decided at 1970-01-01T00:00:00Z resets this GPU too"
    (late,) = runner.handle([alert("n03/gpu0", "reset_gpu", kind="gpu", fired_at=3600.0)])
    assert late["decision"] == "dry_run"          # the reboot is an hour old: a new fault, a new reset
