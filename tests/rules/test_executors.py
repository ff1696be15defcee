"""The executors against real processes and a real HTTP server: the stand-in scontrol/sinfo and
API server of actions_support.py (Slurm and a Kubernetes API server cannot run here; see there),
a shell-free command, and a webhook receiver."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from suanli.errors import InputError
from suanli.rules import ActionRunner, ActionsConfig, AuditLog, PlannedAction
from suanli.rules.action_config import ExecutorSpec
from suanli.rules.executors import (
    ActionFailed,
    KubernetesExecutor,
    ShellExecutor,
    SlurmExecutor,
    WebhookExecutor,
    build_executors,
    parse_sinfo,
)
from tests.rules.actions_support import (
    ApiState,
    FakeSlurm,
    alert,
    fleet,
    k8s_node,
    make_fake_slurm,
    on_path,
    serve_api,
)

LIVE = ActionsConfig(dry_run=False, max_drain_fraction=1.0, max_job_drain_fraction=1.0)


@pytest.fixture
def slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeSlurm:
    fake = make_fake_slurm(tmp_path)
    monkeypatch.setenv("PATH", on_path(fake.bindir))
    return fake


@pytest.fixture
def api() -> Iterator[tuple[str, ApiState]]:
    state = ApiState(nodes=[k8s_node("n07")])
    for url in serve_api(state):
        yield url, state


def test_slurm_drains_and_requeues(tmp_path: Path, slurm: FakeSlurm) -> None:
    ex = SlurmExecutor(job_ids={"big": "4242"})
    runner = ActionRunner(LIVE, fleet(), {"drain_node": ex, "reschedule_job": ex}, AuditLog(tmp_path / "a"))
    a = alert("n00", text="replace riser card")
    b = alert("big", "reschedule_job")
    out = runner.handle([a, b], now=0.0)
    assert [r["decision"] for r in out] == ["executed", "executed"]
    assert slurm.runs() == [["update", "NodeName=n00", "State=DRAIN", "Reason=suanli xid79: replace riser card"],
                            ["requeue", "4242"]]


def test_slurm_needs_a_slurm_job_id(tmp_path: Path, slurm: FakeSlurm) -> None:
    runner = ActionRunner(LIVE, fleet(), {"reschedule_job": SlurmExecutor()}, AuditLog(tmp_path / "a"))
    (rec,) = runner.handle([alert("llama-70b", "reschedule_job")], now=0.0)
    assert rec["decision"] == "failed" and "no Slurm job id for job 'llama-70b'" in str(rec["detail"])
    assert slurm.runs() == []


def test_slurm_refuses_what_is_not_a_node_id(slurm: FakeSlurm) -> None:
    # one argument per field: "n01 State=RESUME" must not reach scontrol as a second key
    for target in ("-rf", "n01 State=RESUME", "n[1-", "n01,State=RESUME"):
        with pytest.raises(ActionFailed):
            SlurmExecutor().execute(PlannedAction("drain_node", "node", target), alert("x"))
    assert slurm.runs() == []


def test_sinfo_states() -> None:
    # `sinfo --noheader --Node --format='%N %T'` lines, states as Slurm's sinfo(1) lists them, with flags
    text = ("n01 idle\nn02 drained\nn03 draining\nn04 drained*\nn05 down*\nn06 allocated\nn07 mixed\n"
            "n08 idle+drain\nn09 fail\nn10 completing\nn11 reserved\nn[12-13] down\n")
    assert parse_sinfo(text) == {"n02", "n03", "n04", "n05", "n08", "n09", "n12", "n13"}


def test_webhook_posts_json(api: tuple[str, ApiState], tmp_path: Path) -> None:
    url, state = api
    runner = ActionRunner(LIVE, fleet(), {"drain_node": WebhookExecutor(f"{url}/hook")}, AuditLog(tmp_path / "a"))
    assert runner.handle([alert("n03")], now=0.0)[0]["decision"] == "executed"
    (req,) = state.seen
    assert (req.method, req.path, req.body["action"], req.body["target"], req.body["alert"]["rule"]) == \
        ("POST", "/hook", "drain_node", "n03", "xid79")


def test_kubernetes_cordons_and_taints(api: tuple[str, ApiState]) -> None:
    url, state = api
    ex = KubernetesExecutor(url, token="s3cret")
    assert ex.execute(PlannedAction("drain_node", "node", "n07"), alert("n07")).endswith("200")
    (req,) = state.seen
    assert (req.method, req.path, req.query) == ("PATCH", "/api/v1/nodes/n07", {})
    assert req.headers["Authorization"] == "Bearer s3cret"
    assert req.headers["Content-Type"] == "application/strategic-merge-patch+json"
    assert req.body == {"spec": {"unschedulable": True, "taints": [
        {"key": "suanli.io/degraded", "value": "xid79", "effect": "NoSchedule"}]}}


def test_kubernetes_node_names_cannot_inject_a_query_or_walk_the_path(api: tuple[str, ApiState],
                                                                      tmp_path: Path) -> None:
    # issue 13: node ids were not URL-quoted, so x?dryRun=All injected a query and .. walked the path
    url, state = api
    ex = KubernetesExecutor(url, token="s3cret")
    ex.execute(PlannedAction("mark_degraded", "node", "x?dryRun=All"), alert("x"))
    (req,) = state.seen
    assert (req.method, req.path, req.query) == ("PATCH", "/api/v1/nodes/x%3FdryRun%3DAll", {})
    for name in ("..", ".", "a/../../namespaces", "%2e%2e"):
        with pytest.raises(ActionFailed, match="cannot be a Kubernetes node name"):
            ex.execute(PlannedAction("drain_node", "node", name), alert("x"))
    assert len(state.seen) == 1
    # through the runner such names are not ids at all: refused before any request
    runner = ActionRunner(LIVE, fleet(), {"drain_node": ex}, AuditLog(tmp_path / "a"))
    out = runner.handle([alert("x?dryRun=All"), alert(".."), alert("n[01-02]")], now=0.0)
    assert [r["decision"] for r in out] == ["refused", "refused", "failed"]   # no hostlists in Kubernetes
    assert len(state.seen) == 1


@pytest.mark.parametrize(("content", "why"), [(b"\xff\xfe\x00\x01binary", "binary data"),
                                              (b"two words\n", "printable ASCII"), (b"", "printable ASCII")])
def test_a_bad_token_file_is_one_line_and_never_read_in_a_dry_run(tmp_path: Path, api: tuple[str, ApiState],
                                                                   content: bytes, why: str) -> None:
    # issue 13: a binary token_file failed with UnicodeDecodeError, even in a dry run, and was read even then
    url, state = api
    token = tmp_path / "token"
    token.write_bytes(content)
    specs = {"drain_node": ExecutorSpec("kubernetes", {"api_url": url, "token_file": str(token)})}
    dry = ActionRunner(ActionsConfig(), fleet(), build_executors(specs))
    assert dry.handle([alert("n07")], now=0.0)[0]["decision"] == "dry_run"
    assert state.seen == []
    for cfg in (ActionsConfig(dry_run=False), ActionsConfig(shadow=True)):
        with pytest.raises(InputError, match=why) as exc:
            ActionRunner(cfg, fleet(), build_executors(specs), AuditLog(tmp_path / "a"))
        assert str(token) in str(exc.value) and "\n" not in str(exc.value)


def test_an_unreadable_token_file_is_one_line(tmp_path: Path, api: tuple[str, ApiState]) -> None:
    url, _ = api
    for path, why in ((tmp_path / "missing", "not a regular file"), (tmp_path, "not a regular file"),
                      (Path("/dev/zero"), "not a regular file")):
        ex = KubernetesExecutor(url, token_file=str(path))
        with pytest.raises(InputError, match=why):
            ex.prepare()
    big = tmp_path / "big"
    big.write_bytes(b"a" * 70000)
    with pytest.raises(InputError, match="larger than"):
        KubernetesExecutor(url, token_file=str(big)).prepare()
    if os.geteuid() != 0:   # root reads a mode-000 file
        locked = tmp_path / "locked"
        locked.write_text("tok")
        locked.chmod(0)
        with pytest.raises(InputError, match="cannot read"):
            KubernetesExecutor(url, token_file=str(locked)).prepare()


def test_a_rotated_token_is_read_again(tmp_path: Path, api: tuple[str, ApiState]) -> None:
    url, state = api
    token = tmp_path / "token"
    token.write_text("first\n")
    ex = KubernetesExecutor(url, token_file=str(token))
    ex.execute(PlannedAction("mark_degraded", "node", "n07"), alert("n07"))
    token.write_text("second\n")
    ex.execute(PlannedAction("mark_degraded", "node", "n07"), alert("n07"))
    assert [r.headers["Authorization"] for r in state.seen] == ["Bearer first", "Bearer second"]
    assert "unschedulable" not in state.seen[0].body["spec"]     # mark_degraded only taints


def test_command_arguments_are_filled_one_by_one_without_a_shell(tmp_path: Path) -> None:
    out = tmp_path / "argv.txt"
    prog = tmp_path / "record"
    prog.write_text(f'#!/bin/sh\nfor a in "$@"; do printf "[%s]\\n" "$a" >> {out}; done\n')
    prog.chmod(0o755)
    ex = ShellExecutor([str(prog), "--node={target}", "{text}"])
    ex.execute(PlannedAction("open_ticket", "gpu", "n01/gpu0", {"text": "a; rm -rf / $(reboot) `id`"}), alert("n01"))
    assert out.read_text().splitlines() == ["[--node=n01/gpu0]", "[a; rm -rf / $(reboot) `id`]"]


@pytest.mark.parametrize("command", ["logger -t suanli {target}", ["sh", "-c", "echo {target}"],
                                     ["/bin/bash", "-c", "echo {target}"], ["env", "sh", "-c", "x"],
                                     ["python3", "-c", "print('{target}')"], ["logger", "{target.__class__}"],
                                     ["logger", "{nope}"], ["logger", "{target!r}"], []])
def test_a_command_that_could_inject_is_refused(command: object) -> None:
    with pytest.raises(InputError):
        ShellExecutor(command)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"executors\.notify"):
        build_executors({"notify": ExecutorSpec("shell", {"command": command})})


def test_executor_settings_are_checked() -> None:
    with pytest.raises(InputError, match="unknown setting 'tokn'"):
        build_executors({"drain_node": ExecutorSpec("kubernetes", {"api_url": "http://k", "tokn": "x"})})
    with pytest.raises(InputError, match="needs 'api_url'"):
        build_executors({"drain_node": ExecutorSpec("kubernetes", {})})
