"""A per-GPU drain carried out per GPU (issue 19): the Kubernetes executor evicts only the pods on
the GPU through the Eviction API, against the stand-in API server of actions_support.py (a real
HTTP server on 127.0.0.1 that records every request); a PodDisruptionBudget's 429 is a failure;
without pods it drains the node and says why; Slurm says it drains the node; the guard and the
breaker count the GPU, not the node.

The requests are the Kubernetes API's own (kubernetes.io "API-initiated Eviction"): one
``POST /api/v1/namespaces/{namespace}/pods/{name}/eviction`` per pod with the body
``{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": ..., "namespace": ...}}``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from suanli.errors import InputError
from suanli.rules import ActionRunner, ActionsConfig, AuditLog, parse_rules
from suanli.rules.action_config import ExecutorSpec
from suanli.rules.alerts import Delivery
from suanli.rules.executors import KubernetesExecutor, SlurmExecutor, build_executors
from tests.rules.actions_support import (
    EVICTION,
    GPU,
    PDB_REFUSED,
    PODS,
    UUID,
    ApiState,
    FakeSlurm,
    drain_alert,
    eviction,
    fleet,
    make_fake_slurm,
    on_path,
    serve_api,
)

LIVE = ActionsConfig(dry_run=False, max_drain_fraction=1.0, max_job_drain_fraction=1.0)
PER_GPU = Delivery("immediate", 0.0, "gpu", GPU, UUID, PODS)


@pytest.fixture
def api() -> Iterator[tuple[str, ApiState]]:
    state = ApiState()
    for url in serve_api(state):
        yield url, state


def _runner(url: str, tmp_path: Path, config: ActionsConfig = LIVE, log: str = "a.jsonl") -> ActionRunner:
    """A runner over 40 nodes of 8 GPUs each, draining through the API server at ``url``."""
    ex = KubernetesExecutor(url, token="s3cret")
    return ActionRunner(config, fleet(gpus_per_node=8), {"drain_node": ex}, AuditLog(tmp_path / log))


def test_a_per_gpu_drain_evicts_exactly_the_two_pods_on_the_gpu(api: tuple[str, ApiState], tmp_path: Path) -> None:
    url, state = api
    runner = _runner(url, tmp_path)
    (rec,) = runner.handle([drain_alert(PER_GPU)], now=0.0)
    assert rec["decision"] == "executed"
    seen = [(r.method, r.path, r.query, r.body) for r in state.seen]
    assert seen == [("POST", EVICTION.format("default", "trainer-3"), {}, eviction("default", "trainer-3")),
                    ("POST", EVICTION.format("team-a", "trainer-3b"), {}, eviction("team-a", "trainer-3b"))]
    assert all(r.headers["Authorization"] == "Bearer s3cret" for r in state.seen)
    assert all(r.headers["Content-Type"] == "application/json" for r in state.seen)
    # no PATCH of the node: it stays in service; the guard counts the one GPU
    assert rec["effect"] == {"nodes": [], "gpus": [GPU], "jobs": []}
    assert runner.drained == set()
    assert "default/trainer-3 evicted (201)" in rec["detail"] and "team-a/trainer-3b evicted (201)" in rec["detail"]


def test_a_disruption_budget_refusing_is_a_failure_not_a_success(api: tuple[str, ApiState], tmp_path: Path) -> None:
    url, state = api
    state.replies[EVICTION.format("team-a", "trainer-3b")] = (429, PDB_REFUSED)
    (rec,) = _runner(url, tmp_path).handle([drain_alert(PER_GPU)], now=0.0)
    assert rec["decision"] == "failed"
    assert [r.path for r in state.seen] == [EVICTION.format("default", "trainer-3"),
                                            EVICTION.format("team-a", "trainer-3b")]   # every pod tried
    detail = str(rec["detail"])
    assert detail.startswith(f"evicted 1 of 2 pods on {GPU}: default/trainer-3 evicted (201); ")
    assert "team-a/trainer-3b: HTTP 429, the eviction was refused by a PodDisruptionBudget" in detail
    assert "The disruption budget trainer-pdb needs 2 healthy pods and has 2 currently" in detail


@pytest.mark.parametrize(("code", "body", "decision", "said"), [
    (404, {"kind": "Status", "code": 404, "reason": "NotFound"}, "executed", "team-a/trainer-3b already gone (404)"),
    (500, {"kind": "Status", "code": 500, "message": "This pod has more than one PodDisruptionBudget"}, "failed",
     "team-a/trainer-3b: HTTP 500: This pod has more than one PodDisruptionBudget"),
    (429, {"kind": "Status", "code": 429, "details": {"causes": 5}}, "failed",
     "team-a/trainer-3b: HTTP 429, the eviction was refused by a PodDisruptionBudget (or the API's rate limit); not evicted"),
])
def test_the_other_answers_of_the_eviction_api(api: tuple[str, ApiState], tmp_path: Path, code: int,
                                               body: dict[str, object], decision: str, said: str) -> None:
    # kubernetes.io "API-initiated Eviction": 500 is a misconfiguration (several budgets on one pod);
    # a pod already gone (404) is off the GPU, as kubectl drain counts it
    url, state = api
    state.replies[EVICTION.format("team-a", "trainer-3b")] = (code, body)
    (rec,) = _runner(url, tmp_path).handle([drain_alert(PER_GPU)], now=0.0)
    assert rec["decision"] == decision and said in rec["detail"] and len(state.seen) == 2


def test_no_pods_known_falls_back_to_the_node_and_says_why(api: tuple[str, ApiState], tmp_path: Path) -> None:
    url, state = api
    no_pods = Delivery("immediate", 0.0, "gpu", GPU, UUID, ())
    runner = _runner(url, tmp_path)
    (rec,) = runner.handle([drain_alert(no_pods)], now=0.0)
    assert rec["decision"] == "executed"
    (req,) = [r for r in state.seen if r.method != "GET"]
    assert (req.method, req.path, req.body["spec"]["unschedulable"]) == ("PATCH", "/api/v1/nodes/n07", True)
    assert rec["detail"].endswith(f"(a per-GPU drain of {GPU} was chosen, but no pod is known on it: the node is drained)")
    assert rec["effect"]["nodes"] == ["n07"] and runner.drained == {"n07"}


def test_a_node_scope_drain_is_the_node_drain(api: tuple[str, ApiState], tmp_path: Path) -> None:
    url, state = api
    (rec,) = _runner(url, tmp_path).handle([drain_alert(Delivery("immediate", 0.0, "node"))], now=0.0)
    assert [(r.method, r.path) for r in state.seen if r.method != "GET"] == [("PATCH", "/api/v1/nodes/n07")]
    assert "per-GPU" not in rec["detail"]


def test_a_dry_run_says_the_exact_requests_and_sends_none(api: tuple[str, ApiState], tmp_path: Path) -> None:
    url, state = api
    (rec,) = _runner(url, tmp_path, ActionsConfig()).handle([drain_alert(PER_GPU)], now=0.0)
    assert rec["decision"] == "dry_run" and state.seen == []
    assert rec["detail"] == (
        f"would evict the pods on {GPU} ({UUID}) only: "
        f'POST {url}{EVICTION.format("default", "trainer-3")} {{"apiVersion": "policy/v1", "kind": "Eviction", '
        f'"metadata": {{"name": "trainer-3", "namespace": "default"}}}}; '
        f'POST {url}{EVICTION.format("team-a", "trainer-3b")} {{"apiVersion": "policy/v1", "kind": "Eviction", '
        f'"metadata": {{"name": "trainer-3b", "namespace": "team-a"}}}}')


@pytest.mark.parametrize("pod", ["../kube-system/x", "a/b/c", "Trainer-0", "x?dryRun=All", "ns/", "%2e%2e"])
def test_a_pod_that_is_not_a_kubernetes_name_reaches_no_server(api: tuple[str, ApiState], tmp_path: Path,
                                                              pod: str) -> None:
    url, state = api
    (rec,) = _runner(url, tmp_path).handle([drain_alert(Delivery("immediate", 0.0, "gpu", GPU, UUID, (pod,)))], now=0.0)
    assert rec["decision"] == "failed" and "is not a Kubernetes pod" in rec["detail"]
    assert state.seen == []


def test_the_breaker_counts_the_gpu_of_a_per_gpu_drain_and_the_eight_of_a_node(api: tuple[str, ApiState],
                                                                              tmp_path: Path) -> None:
    # breaker_max_gpus 1: a node of 8 GPUs drained counts 8 > 1 and trips; the per-GPU drain counts 1
    url, state = api
    cfg = ActionsConfig(dry_run=False, max_drain_fraction=1.0, max_job_drain_fraction=1.0, breaker_max_gpus=1)
    (gpu,) = _runner(url, tmp_path, cfg, "g.jsonl").handle([drain_alert(PER_GPU)], now=0.0)
    assert gpu["decision"] == "executed" and gpu["effect"]["gpus"] == [GPU]
    (node,) = _runner(url, tmp_path, cfg, "n.jsonl").handle([drain_alert(Delivery("immediate", 0.0, "node"))], now=0.0)
    assert node["decision"] == "breaker_open" and "would take out 8 GPUs, more than the cap of 1" in node["detail"]
    assert [r.method for r in state.seen] == ["POST", "POST"]


def test_slurm_cannot_drain_one_gpu_and_says_it_drains_the_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake: FakeSlurm = make_fake_slurm(tmp_path)
    monkeypatch.setenv("PATH", on_path(fake.bindir))
    runner = ActionRunner(LIVE, fleet(gpus_per_node=8), {"drain_node": SlurmExecutor()}, AuditLog(tmp_path / "a"))
    (rec,) = runner.handle([drain_alert(PER_GPU)], now=0.0)
    assert rec["decision"] == "executed"
    assert fake.runs() == [["update", "NodeName=n07", "State=DRAIN", "Reason=suanli xid95"]]
    assert rec["detail"].endswith(f"(a per-GPU drain of {GPU} was chosen; Slurm cannot drain one GPU of a node, "
                                  "so this drains the whole node n07)")
    assert rec["effect"]["nodes"] == ["n07"] and len(rec["effect"]["gpus"]) == 8


HEAD = "rules:\n  - name: r\n    scope: gpu\n    conditions: {all: [gpu_temp > 1]}\n"


@pytest.mark.parametrize(("action", "kind"), [("reset_gpu", "slurm"), ("retire_gpu", "slurm"),
                                              ("reset_gpu", "kubernetes"), ("reboot_node", "kubernetes"),
                                              ("reschedule_job", "kubernetes")])
def test_an_executor_that_cannot_do_an_action_is_refused_at_load(action: str, kind: str) -> None:
    extra = ", api_url: 'https://k8s:6443'" if kind == "kubernetes" else ""
    with pytest.raises(InputError) as exc:
        parse_rules(HEAD + f"executors:\n  {action}: {{kind: {kind}{extra}}}\n", "my_rules.yaml")
    assert str(exc.value).startswith(f"my_rules.yaml:6: executors.{action}: a {kind} executor cannot {action} (it can ")
    assert "\n" not in str(exc.value)
    with pytest.raises(InputError, match=f"a {kind} executor cannot {action}"):
        build_executors({action: ExecutorSpec(kind, {"api_url": "https://k8s:6443"} if extra else {})})


def test_every_action_has_an_executor_kind_that_can_do_it() -> None:
    rs = parse_rules(HEAD + "executors:\n  reboot_node: {kind: slurm}\n  reset_gpu: {kind: webhook, url: 'https://agent/reset'}\n"
                     "  drain_node: {kind: kubernetes, api_url: 'https://k8s:6443', namespace: training}\n")
    ex = build_executors(rs.executors)
    assert isinstance(ex["drain_node"], KubernetesExecutor) and ex["drain_node"].namespace == "training"
