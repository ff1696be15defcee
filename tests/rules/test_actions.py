"""Actions: dry run, idempotence, rate limit, blast-radius guard, audit, and the real executors
against a stand-in scontrol, a local HTTP server and a shell template."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from suanli.rules import ActionRunner, ActionsConfig, Alert, AuditLog, EntityIndex, PlannedAction
from suanli.rules.executors import KubernetesExecutor, ShellExecutor, SlurmExecutor, WebhookExecutor

NODES = [f"n{i:02d}" for i in range(40)]


def _index() -> EntityIndex:
    gpus = {f"{n}/gpu0": n for n in NODES}
    return EntityIndex(gpus=sorted(gpus), nodes=NODES, gpu_node=gpus, jobs=["big", "small"],
                       job_gpus={"big": [f"{n}/gpu0" for n in NODES[:20]], "small": [f"{n}/gpu0" for n in NODES[20:24]]})


def _alert(node: str, action: str = "drain_node", rule: str = "xid79") -> Alert:
    return Alert(name=rule, rule=rule, scope="gpu", entity_kind="gpu", entity_id=f"{node}/gpu0", labels={},
                 state="firing", active_at=0.0, fired_at=0.0,
                 actions=(PlannedAction(action, "node" if action == "drain_node" else "job", node),))


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def execute(self, action: PlannedAction, alert: Alert) -> str:
        self.calls.append((action.action, action.target))
        return "ok"


def test_dry_run_changes_nothing_and_audits(tmp_path: Path) -> None:
    rec = Recorder()
    log = tmp_path / "audit.jsonl"
    runner = ActionRunner(ActionsConfig(audit_log=str(log)), _index(), {"drain_node": rec})
    out = runner.handle([_alert("n00")], now=100.0)
    assert rec.calls == [] and [r["decision"] for r in out] == ["dry_run"]
    line = json.loads(log.read_text().splitlines()[0])
    assert {k: line[k] for k in ("rule", "action", "target", "decision")} == \
        {"rule": "xid79", "action": "drain_node", "target": "n00", "decision": "dry_run"}
    assert line["time"] == "1970-01-01T00:01:40Z"


def test_idempotent_within_the_window_and_again_after() -> None:
    rec = Recorder()
    runner = ActionRunner(ActionsConfig(dry_run=False, dedup_window_s=3600), _index(), {"drain_node": rec})
    d = [runner.handle([_alert("n00")], now=t)[0]["decision"] for t in (0.0, 10.0, 3599.0, 3600.0)]
    assert d == ["executed", "skipped_duplicate", "skipped_duplicate", "executed"]
    assert rec.calls == [("drain_node", "n00")] * 2


def test_guard_stops_a_runaway_rule() -> None:
    # 40 nodes * 0.05 = 2 nodes may be drained at once; the 3rd..40th are blocked
    rec = Recorder()
    runner = ActionRunner(ActionsConfig(dry_run=False, max_job_drain_fraction=1.0), _index(), {"drain_node": rec})
    out = runner.handle([_alert(n) for n in NODES], now=0.0)
    assert [r["decision"] for r in out] == ["executed"] * 2 + ["blocked_by_guard"] * 38
    assert len(rec.calls) == 2
    assert "would drain 3 of 40 nodes; the guard allows 2" in out[2]["detail"]
    runner.release_node("n00")
    assert runner.handle([_alert("n30")], now=1.0)[0]["decision"] == "executed"


def test_guard_per_job() -> None:
    # job 'small' has 4 nodes: 25 % = 1 at once; the cluster-wide share (50 %) is not the limit here
    rec = Recorder()
    runner = ActionRunner(ActionsConfig(dry_run=False, max_drain_fraction=0.5), _index(), {"drain_node": rec})
    out = runner.handle([_alert("n20"), _alert("n21"), _alert("n30")], now=0.0)
    assert [r["decision"] for r in out] == ["executed", "blocked_by_guard", "executed"]
    assert "small" in out[1]["detail"]


def test_rate_limit() -> None:
    rec = Recorder()
    runner = ActionRunner(ActionsConfig(dry_run=False, rate_limit_count=3, rate_limit_window_s=600), _index(),
                          {"reschedule_job": rec})
    out = runner.handle([_alert(f"job{i}", "reschedule_job") for i in range(5)], now=0.0)
    assert [r["decision"] for r in out] == ["executed"] * 3 + ["rate_limited"] * 2
    assert runner.handle([_alert("job9", "reschedule_job")], now=600.0)[0]["decision"] == "executed"


def test_failures_are_audited_not_raised() -> None:
    runner = ActionRunner(ActionsConfig(dry_run=False), _index(), {})
    out = runner.handle([_alert("n00")], now=0.0)
    assert out[0]["decision"] == "failed" and "no executor" in out[0]["detail"]


@pytest.fixture
def fake_scontrol(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    record = tmp_path / "calls.txt"
    script = bindir / "scontrol"
    script.write_text(f'#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a" >> {record}; done\necho --- >> {record}\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return record


def test_slurm_executor_against_a_stand_in_scontrol(fake_scontrol: Path) -> None:
    ex = SlurmExecutor(job_ids={"big": "4242"})
    runner = ActionRunner(ActionsConfig(dry_run=False), _index(), {"drain_node": ex, "reschedule_job": ex})
    a = _alert("n00")
    a.actions = (PlannedAction("drain_node", "node", "n00", {"text": "replace riser card"}),
                 PlannedAction("reschedule_job", "job", "big"))
    out = runner.handle([a], now=0.0)
    assert [r["decision"] for r in out] == ["executed", "executed"]
    calls = fake_scontrol.read_text().split("---\n")
    assert calls[0].splitlines() == ["update", "NodeName=n00", "State=DRAIN", "Reason=suanli xid79: replace riser card"]
    assert calls[1].splitlines() == ["requeue", "4242"]


class _Handler(BaseHTTPRequestHandler):
    seen: ClassVar[list[tuple[str, str, dict[str, str], Any]]] = []

    def _record(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        _Handler.seen.append((self.command, self.path, dict(self.headers), json.loads(body)))
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"{}")

    do_POST = _record
    do_PATCH = _record

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def http_server() -> Iterator[str]:
    _Handler.seen = []
    srv = HTTPServer(("127.0.0.1", 0), _Handler)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def test_webhook_posts_json(http_server: str) -> None:
    ex = WebhookExecutor(f"{http_server}/hook")
    runner = ActionRunner(ActionsConfig(dry_run=False), _index(), {"drain_node": ex})
    assert runner.handle([_alert("n03")], now=0.0)[0]["decision"] == "executed"
    method, path, _, body = _Handler.seen[0]
    assert (method, path, body["action"], body["target"], body["alert"]["rule"]) == \
        ("POST", "/hook", "drain_node", "n03", "xid79")


def test_kubernetes_cordons_and_taints(http_server: str) -> None:
    ex = KubernetesExecutor(http_server, token="s3cret")
    assert ex.execute(PlannedAction("drain_node", "node", "n07"), _alert("n07")).endswith("200")
    method, path, headers, body = _Handler.seen[0]
    assert (method, path) == ("PATCH", "/api/v1/nodes/n07")
    assert headers["Authorization"] == "Bearer s3cret"
    assert headers["Content-Type"] == "application/strategic-merge-patch+json"
    assert body["spec"]["unschedulable"] is True
    assert body["spec"]["taints"][0]["key"] == "suanli.io/degraded"


def test_shell_template_fills_arguments_without_a_shell(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    ex = ShellExecutor(f"sh -c 'printf \"%s|%s\" \"$0\" \"$1\" > {out}' {{target}} {{text}}")
    ex.execute(PlannedAction("open_ticket", "gpu", "n01/gpu0", {"text": "a; rm -rf /"}), _alert("n01"))
    assert out.read_text() == "n01/gpu0|a; rm -rf /"


def test_audit_log_in_memory() -> None:
    log = AuditLog()
    ActionRunner(ActionsConfig(), _index(), audit=log).handle([_alert("n00")], now=5.0)
    assert [r["decision"] for r in log.records] == ["dry_run"]
