"""The audit log: every decision appended as one JSON line and fsync'd, a live action's intent on
disk before it runs, a torn line fenced off, a documented default location the default pack
writes to, and modes kept apart."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from suanli.errors import InputError
from suanli.rules import ActionRunner, ActionsConfig, AuditLog, load_rules
from suanli.rules.audit import default_audit_path, read_audit
from suanli.rules.executors import SlurmExecutor
from tests.rules.actions_support import NODES, Recorder, alert, fleet, make_fake_slurm, on_path


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_a_live_action_is_on_disk_before_it_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "a.jsonl"
    # the stand-in scontrol (actions_support.py) copies the audit log as it is when Slurm is called
    slurm = make_fake_slurm(tmp_path, extra_scontrol=f"cp {log} {tmp_path}/seen_by_scontrol\n")
    monkeypatch.setenv("PATH", on_path(slurm.bindir))
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:   # a power cut cannot be staged here: see that each record is fsync'd
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    runner = ActionRunner(ActionsConfig(dry_run=False), fleet(), {"drain_node": SlurmExecutor()}, AuditLog(log))
    synced.clear()
    runner.handle([alert("n00")], now=0.0)
    seen = _lines(tmp_path / "seen_by_scontrol")
    assert [r["decision"] for r in seen] == ["executing"]
    final = _lines(log)
    assert [r["decision"] for r in final] == ["executing", "executed"] and final[1]["ref"] == final[0]["id"]
    assert synced.count(str(log)) == 2                                   # each record fsync'd
    assert {k: final[1][k] for k in ("v", "event", "mode", "rule", "action", "target", "target_kind")} == \
        {"v": 1, "event": "decision", "mode": "live", "rule": "xid79", "action": "drain_node", "target": "n00",
         "target_kind": "node"}


def test_append_only_and_a_torn_line_is_fenced_off(tmp_path: Path) -> None:
    log = tmp_path / "a.jsonl"
    log.write_bytes(b'{"earlier": "kept"}\n{"v": 1, "event": "deci')      # a crash mid-write
    ActionRunner(ActionsConfig(audit_log=str(log)), fleet(), {}).handle([alert("n00")], now=0.0)
    raw = log.read_text().splitlines()
    assert raw[:2] == ['{"earlier": "kept"}', '{"v": 1, "event": "deci']
    records, bad = read_audit(log)
    assert bad == 1 and [r.get("decision") for r in records] == [None, "dry_run"]


def test_the_default_location_is_next_to_the_database(tmp_path: Path) -> None:
    assert default_audit_path(None, tmp_path / "suanli.duckdb") == tmp_path / "suanli.duckdb.audit.jsonl"
    assert default_audit_path("/var/log/suanli/a.jsonl", tmp_path / "x.duckdb") == Path("/var/log/suanli/a.jsonl")
    assert default_audit_path(None, None) is None


def test_the_default_pack_writes_an_audit_log(tmp_path: Path) -> None:
    # issue 13: the default rule pack wrote no audit file, so decisions existed only in memory
    db = tmp_path / "suanli.duckdb"
    runner = ActionRunner.from_ruleset(load_rules(None), fleet(), dry_run=True, db=db)
    runner.handle([alert("n00"), alert("big", "reschedule_job")], now=0.0)
    assert [(r["action"], r["mode"]) for r in _lines(tmp_path / "suanli.duckdb.audit.jsonl")] == \
        [("drain_node", "dry_run"), ("reschedule_job", "dry_run")]


def test_a_dry_run_starts_fresh_and_modes_stay_apart(tmp_path: Path) -> None:
    log = tmp_path / "a.jsonl"
    ten = fleet(NODES[:10])
    cfg = ActionsConfig(audit_log=str(log), max_drain_fraction=1.0, max_job_drain_fraction=1.0)
    for _ in range(2):   # the same plan twice: a dry run is not a history
        out = ActionRunner(cfg, ten, {}).handle([alert(n) for n in NODES[:6]], now=0.0)
        assert [r["decision"] for r in out] == ["dry_run"] * 5 + ["breaker_open"]
    rec = Recorder()
    live = ActionRunner(ActionsConfig(dry_run=False, max_drain_fraction=1.0), ten, {"drain_node": rec}, AuditLog(log))
    assert live.handle([alert("n00")], now=0.0)[0]["decision"] == "executed"   # dry-run trips do not bind it
    assert rec.calls == [("drain_node", "n00")]


def test_an_unwritable_audit_log_is_one_line_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot append to the audit log") as exc:
        ActionRunner(ActionsConfig(dry_run=False), fleet(), {"drain_node": Recorder()},
                     AuditLog(tmp_path / "missing" / "a.jsonl"))
    assert "\n" not in str(exc.value)


def test_poll_returns_what_other_writers_appended(tmp_path: Path) -> None:
    log = tmp_path / "a.jsonl"
    mine, theirs = AuditLog(log), AuditLog(log)
    mine.append({"n": 1})
    theirs.append({"n": 2})
    assert [r["n"] for r in mine.poll()] == [2]
    theirs.append({"n": 3})
    mine.append({"n": 4})
    assert [r["n"] for r in mine.poll()] == [3]
    assert mine.poll() == []
