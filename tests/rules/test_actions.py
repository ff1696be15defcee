"""The action runner: the three modes (dry run, shadow, live), idempotence, rate limit, targets
that are not ids, and failures that are audited, not raised. The guard has test_guard.py, the
executors test_executors.py, the audit log test_audit.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from suanli.errors import InputError
from suanli.rules import ActionRunner, ActionsConfig, AuditLog, parse_rules
from suanli.rules.executors import SlurmExecutor
from tests.rules.actions_support import NODES, Recorder, alert, fleet, make_fake_slurm, on_path

LIVE = ActionsConfig(dry_run=False, max_drain_fraction=1.0, max_job_drain_fraction=1.0,
                     breaker_fleet_fraction=1.0)


def test_dry_run_changes_nothing_and_audits(tmp_path: Path) -> None:
    rec = Recorder()
    log = tmp_path / "audit.jsonl"
    runner = ActionRunner(ActionsConfig(audit_log=str(log)), fleet(), {"drain_node": rec})
    out = runner.handle([alert("n00")], now=100.0)
    assert rec.calls == [] and [r["decision"] for r in out] == ["dry_run"]
    line = json.loads(log.read_text().splitlines()[0])
    assert {k: line[k] for k in ("rule", "action", "target", "decision", "mode")} == \
        {"rule": "xid79", "action": "drain_node", "target": "n00", "decision": "dry_run", "mode": "dry_run"}
    assert line["time"] == "1970-01-01T00:01:40Z"
    assert line["effect"] == {"nodes": ["n00"], "gpus": ["n00/gpu0"], "jobs": []}


def test_idempotent_within_the_window_and_again_after(tmp_path: Path) -> None:
    rec = Recorder()
    runner = ActionRunner(LIVE, fleet(), {"drain_node": rec}, AuditLog(tmp_path / "a.jsonl"))
    d = [runner.handle([alert("n00")], now=t)[0]["decision"] for t in (0.0, 10.0, 3599.0, 3600.0)]
    assert d == ["executed", "skipped_duplicate", "skipped_duplicate", "executed"]
    assert rec.calls == [("drain_node", "n00")] * 2


def test_rate_limit(tmp_path: Path) -> None:
    rec = Recorder()
    cfg = ActionsConfig(dry_run=False, rate_limit_count=3, rate_limit_window_s=600, breaker_max_jobs=100)
    runner = ActionRunner(cfg, fleet(), {"reschedule_job": rec}, AuditLog(tmp_path / "a.jsonl"))
    out = runner.handle([alert(f"job{i}", "reschedule_job") for i in range(5)], now=0.0)
    assert [r["decision"] for r in out] == ["executed"] * 3 + ["rate_limited"] * 2
    assert runner.handle([alert("job9", "reschedule_job")], now=600.0)[0]["decision"] == "executed"


def test_failures_are_audited_not_raised(tmp_path: Path) -> None:
    runner = ActionRunner(LIVE, fleet(), {}, AuditLog(tmp_path / "a.jsonl"))
    out = runner.handle([alert("n00")], now=0.0)
    assert out[0]["decision"] == "failed" and "no executor" in out[0]["detail"]


def test_live_and_shadow_need_an_audit_file() -> None:
    for cfg in (ActionsConfig(dry_run=False), ActionsConfig(shadow=True)):
        with pytest.raises(InputError, match="need an audit log file"):
            ActionRunner(cfg, fleet(), {"drain_node": Recorder()})
        with pytest.raises(InputError, match="need an audit log file"):
            ActionRunner(cfg, fleet(), {"drain_node": Recorder()}, AuditLog())


@pytest.mark.parametrize("target", ["x?dryRun=All", "..", "-rf", "node 1", "n01;reboot", "n01/../n02", ""])
def test_a_target_that_is_not_an_id_is_refused(tmp_path: Path, target: str) -> None:
    rec = Recorder()
    runner = ActionRunner(LIVE, fleet(), {"drain_node": rec, "retire_gpu": rec}, AuditLog(tmp_path / "a.jsonl"))
    out = runner.handle([alert(target), alert(target, "retire_gpu")], now=0.0)
    assert [r["decision"] for r in out] == ["refused", "refused"]
    assert rec.calls == []


def test_shadow_reads_the_cluster_and_records_the_exact_command_without_running_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    slurm = make_fake_slurm(tmp_path)
    slurm.set_states(["n00 idle", "n01 drained"])
    monkeypatch.setenv("PATH", on_path(slurm.bindir))
    cfg = ActionsConfig(shadow=True, max_drain_fraction=0.05)  # 40 nodes: 2 may be out at once
    runner = ActionRunner(cfg, fleet(), {"drain_node": SlurmExecutor()}, AuditLog(tmp_path / "a.jsonl"))
    out = runner.handle([alert("n02", text="replace riser"), alert("n03")], now=0.0)
    assert slurm.runs() == []                                   # scontrol never ran
    assert [r["decision"] for r in out] == ["shadow", "blocked_by_guard"]
    assert out[0]["detail"] == "would scontrol update NodeName=n02 State=DRAIN 'Reason=suanli xid79: replace riser'"
    assert "3 of 40 nodes out of service (2 already, as slurm reports them)" in out[1]["detail"]


def test_modes_and_what_forces_a_dry_run() -> None:
    head = "rules:\n  - name: r\n    scope: gpu\n    conditions: {all: [gpu_temp > 1]}\n"
    cases = {"": "dry_run", "actions: {dry_run: true}\n": "dry_run", "actions: {dry_run: false}\n": "live",
             "actions: {shadow: true}\n": "shadow", "actions: {dry_run: false, shadow: true}\n": "shadow"}
    for text, mode in cases.items():
        assert parse_rules(head + text).actions.mode == mode
    live = parse_rules(head + "actions: {dry_run: false, audit_log: /nonexistent/x}\n")
    assert ActionRunner.from_ruleset(live, fleet(), dry_run=True).mode == "dry_run"   # diagnose never acts


def test_dry_run_without_an_executor_says_a_live_run_would_fail() -> None:
    runner = ActionRunner(ActionsConfig(), fleet(NODES[:4]), {})
    (rec,) = runner.handle([alert("n00")], now=0.0)
    assert rec["decision"] == "dry_run" and "no executor configured: a live run would fail" in rec["detail"]


def test_audit_log_in_memory() -> None:
    log = AuditLog()
    ActionRunner(ActionsConfig(), fleet(), audit=log).handle([alert("n00")], now=5.0)
    assert [r["decision"] for r in log.records] == ["dry_run"]
