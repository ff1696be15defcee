"""Deferred actions (issue 19): what the cost decision says to do after the next checkpoint or after a
timeout is scheduled, not done; it is carried out when a later call reaches its time (through every
check, as if planned then), cancelled if its alert stopped firing, and survives a restart. The
executor is the Kubernetes one against the stand-in API server of actions_support.py, so "nothing
was sent" is what a real HTTP server recorded.

Times: the decision was made at 1,000 s and said "after the checkpoint, in 600 s", so the action is
due at 1,000 + 600 = 1,600 s, whenever the runner first saw the alert.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from suanli.rules import ActionRunner, ActionsConfig, Alert, AuditLog
from suanli.rules.alerts import Delivery
from suanli.rules.executors import KubernetesExecutor
from suanli.timefmt import to_rfc3339
from tests.rules.actions_support import (
    EVICTION,
    GPU,
    PODS,
    UUID,
    ApiState,
    drain_alert,
    eviction,
    fleet,
    serve_api,
)

LIVE = ActionsConfig(dry_run=False, max_drain_fraction=1.0, max_job_drain_fraction=1.0)
LATER = Delivery("after_checkpoint", 600.0, "gpu", GPU, UUID, PODS, decided_at=1000.0)
DUE = 1000.0 + 600.0


@pytest.fixture
def api() -> Iterator[tuple[str, ApiState]]:
    state = ApiState()
    for url in serve_api(state):
        yield url, state


def _runner(url: str, log: Path, config: ActionsConfig = LIVE) -> ActionRunner:
    return ActionRunner(config, fleet(gpus_per_node=8), {"drain_node": KubernetesExecutor(url, token="s3cret")},
                        AuditLog(log))


def _evictions() -> list[tuple[str, str, dict[str, object]]]:
    return [("POST", EVICTION.format("default", "trainer-3"), eviction("default", "trainer-3")),
            ("POST", EVICTION.format("team-a", "trainer-3b"), eviction("team-a", "trainer-3b"))]


def test_scheduled_then_carried_out_when_due_and_only_then(api: tuple[str, ApiState], tmp_path: Path) -> None:
    url, state = api
    runner = _runner(url, tmp_path / "a.jsonl")
    alert = drain_alert(fired_at=990.0)
    (rec,) = runner.handle([alert], now=1000.0, how={(alert.key, "drain_node", "n07"): LATER})
    assert rec["decision"] == "scheduled" and rec["not_before"] == DUE
    assert rec["not_before_time"] == to_rfc3339(DUE) and rec["counted"] is False
    assert f"not before {to_rfc3339(DUE)} (after_checkpoint: 600 s after the decision)" in rec["detail"]
    assert state.seen == []
    assert runner.due([alert], now=DUE - 0.1) == [] and state.seen == []          # before its time: nothing
    (done,) = runner.due([alert], now=DUE)
    assert done["decision"] == "executed" and done["schedule_ref"] == rec["id"]
    assert [(r.method, r.path, r.body) for r in state.seen] == _evictions()
    assert runner.due([alert], now=DUE + 100.0) == [] and len(state.seen) == 2    # once


def test_the_mode_comes_from_the_rule_alert_key_action_and_target(api: tuple[str, ApiState], tmp_path: Path) -> None:
    url, state = api
    alert = drain_alert(fired_at=990.0)
    other = {("another@alert#1", "drain_node", "n07"): LATER, (alert.key, "drain_node", "n08"): LATER}
    (rec,) = _runner(url, tmp_path / "a.jsonl").handle([alert], now=1000.0, how=other)
    assert rec["decision"] == "executed" and [r.path for r in state.seen] == ["/api/v1/nodes", "/api/v1/nodes/n07"]


def test_a_fault_that_cleared_before_its_time_is_cancelled(api: tuple[str, ApiState], tmp_path: Path) -> None:
    url, state = api
    runner = _runner(url, tmp_path / "a.jsonl")
    alert = drain_alert(fired_at=990.0)
    (rec,) = runner.handle([alert], now=1000.0, how={(alert.key, "drain_node", "n07"): LATER})
    resolved = replace(alert, state="resolved", resolved_at=1300.0)
    (gone,) = runner.due([resolved], now=DUE)
    assert gone["decision"] == "cancelled" and gone["schedule_ref"] == rec["id"] and gone["rule"] == "xid95"
    assert "no longer fires" in gone["detail"] and state.seen == []
    assert runner.due([alert], now=DUE + 1.0) == []                               # cancelled for good


def test_a_scheduled_action_survives_a_restart_and_runs_once(api: tuple[str, ApiState], tmp_path: Path) -> None:
    url, state = api
    log = tmp_path / "a.jsonl"
    alert = drain_alert(fired_at=990.0)
    _runner(url, log).handle([alert], now=1000.0, how={(alert.key, "drain_node", "n07"): LATER})
    (done,) = _runner(url, log).due([alert], now=DUE)          # a new process, folded from the audit log
    assert done["decision"] == "executed" and [(r.method, r.path, r.body) for r in state.seen] == _evictions()
    assert _runner(url, log).due([alert], now=DUE + 5.0) == []


def test_the_same_action_while_scheduled_is_a_duplicate(api: tuple[str, ApiState], tmp_path: Path) -> None:
    url, _ = api
    runner = _runner(url, tmp_path / "a.jsonl")
    a, b = drain_alert(fired_at=990.0), drain_alert(fired_at=995.0)
    how = {(a.key, "drain_node", "n07"): LATER, (b.key, "drain_node", "n07"): LATER}
    first, second = runner.handle([a, b], now=1000.0, how=how)
    assert (first["decision"], second["decision"]) == ("scheduled", "skipped_duplicate")
    assert second["detail"] == f"same action already scheduled for {to_rfc3339(DUE)} ({first['id']})"


def test_when_due_the_breaker_still_applies(api: tuple[str, ApiState], tmp_path: Path) -> None:
    # breaker_max_gpus 0: scheduling counts nothing; at its time the GPU it removes trips the breaker
    url, state = api
    cfg = ActionsConfig(dry_run=False, max_drain_fraction=1.0, max_job_drain_fraction=1.0, breaker_max_gpus=0)
    runner = _runner(url, tmp_path / "a.jsonl", cfg)
    alert = drain_alert(fired_at=990.0)
    (rec,) = runner.handle([alert], now=1000.0, how={(alert.key, "drain_node", "n07"): LATER})
    assert rec["decision"] == "scheduled" and runner.guard.trip is None
    (done,) = runner.due([alert], now=DUE)
    assert done["decision"] == "breaker_open" and "1 GPUs, more than the cap of 0" in done["detail"]
    assert state.seen == []


@pytest.mark.parametrize("mode", ["dry_run", "shadow"])
def test_dry_run_and_shadow_schedule_and_say_what_would_be_sent_when_due(api: tuple[str, ApiState], tmp_path: Path,
                                                                         mode: str) -> None:
    url, state = api
    cfg = ActionsConfig() if mode == "dry_run" else ActionsConfig(shadow=True, max_drain_fraction=1.0)
    runner = _runner(url, tmp_path / "a.jsonl", cfg)
    alert = drain_alert(fired_at=990.0)
    how = {(alert.key, "drain_node", "n07"): replace(LATER, mode="after_timeout")}
    (rec,) = runner.handle([alert], now=1000.0, how=how)
    assert rec["decision"] == "scheduled" and rec["mode"] == mode
    (done,) = runner.due([alert], now=DUE)
    assert done["decision"] == mode and done["detail"].startswith(f"would evict the pods on {GPU} ({UUID}) only: POST ")
    assert state.seen == []


def test_an_immediate_decision_or_no_delay_acts_now(api: tuple[str, ApiState], tmp_path: Path) -> None:
    url, state = api
    runner = _runner(url, tmp_path / "a.jsonl")
    alert = drain_alert(fired_at=990.0)
    (rec,) = runner.handle([alert], now=1000.0, how={(alert.key, "drain_node", "n07"): replace(LATER, delay_s=0.0)})
    assert rec["decision"] == "executed" and len(state.seen) == 2


def test_a_deferred_action_is_checked_when_it_is_scheduled(tmp_path: Path) -> None:
    # a target that is not an id is refused at once, not scheduled
    runner = ActionRunner(LIVE, fleet(), {}, AuditLog(tmp_path / "a.jsonl"))
    bad: Alert = drain_alert(fired_at=990.0)
    bad = replace(bad, actions=(replace(bad.actions[0], target="n07;reboot"),))
    (rec,) = runner.handle([bad], now=1000.0, how={(bad.key, "drain_node", "n07;reboot"): LATER})
    assert rec["decision"] == "refused" and runner.schedule.pending == {}
