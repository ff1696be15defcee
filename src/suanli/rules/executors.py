"""Executors carry out one planned action: Slurm (``scontrol``), Kubernetes (API with a bearer
token, kubernetes.py), a webhook (POST JSON), a command template, or just a log line.

Each says what an action would do to the fleet (``effect``: what the guard counts), what exactly it
would send (``describe``: the dry-run and shadow detail), can read the cluster's out-of-service
nodes where it knows how (``out_of_service``), loads credentials only when asked to act
(``prepare``), and ``execute`` returns a one-line detail or raises :class:`ActionFailed`. Nothing
runs through a shell: commands are argument lists, templates are filled one argument at a time.
"""

from __future__ import annotations

import shlex
from typing import Any

import httpx

from suanli.errors import InputError
from suanli.rules.action_config import ExecutorSpec, check_command, check_executor, check_executor_action
from suanli.rules.alerts import Alert, PlannedAction
from suanli.rules.effects import NO_EFFECT, Effect
from suanli.rules.executor_base import ActionFailed, BaseExecutor, Executor, node_wide, reason, run
from suanli.rules.ids import expand_hostlist, node_members
from suanli.rules.kubernetes import KubernetesExecutor

__all__ = ["ActionFailed", "BaseExecutor", "Executor", "KubernetesExecutor", "LogExecutor", "ShellExecutor", "SlurmExecutor",
           "WebhookExecutor", "build_executors", "parse_sinfo"]


_OUT_STATES = frozenset({"drain", "drained", "draining", "drng", "down", "fail", "failing"})


def parse_sinfo(text: str) -> set[str]:
    """Nodes out of service in ``sinfo --noheader --Node --format='%N %T'`` output: drained,
    draining, down or failing, whatever the state flags (``drained*``, ``idle+drain``)."""
    out: set[str] = set()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        states = {tok.rstrip("*~#!%$@^-") for tok in parts[1].lower().split("+")}
        if states & _OUT_STATES:
            try:
                out.update(expand_hostlist(parts[0]))
            except ValueError:
                out.add(parts[0])
    return out


class SlurmExecutor(BaseExecutor):
    """drain_node and mark_degraded of a node: ``scontrol update NodeName=N State=DRAIN Reason=...``
    (both drain: both count); reboot_node: ``scontrol reboot ASAP nextstate=RESUME Reason=... N``
    (the node is out until it is back); reschedule_job: ``scontrol requeue JOBID`` (``job_ids`` maps
    inventory job ids to Slurm job ids). Out-of-service nodes: ``sinfo``. Slurm cannot drain one
    GPU: a per-GPU drain drains the node, the detail says so and the guard counts the node."""

    NO_GPU = "Slurm cannot drain one GPU of a node"

    def __init__(self, scontrol: str = "scontrol", sinfo: str = "sinfo", job_ids: dict[str, str] | None = None,
                 timeout_s: float = 30.0) -> None:
        self.scontrol, self.sinfo, self.timeout_s = scontrol, sinfo, timeout_s
        self.job_ids = {k: str(v) for k, v in (job_ids or {}).items()}

    def _slurm_job(self, job: str) -> str:
        sid = self.job_ids.get(job, job)
        if not sid.replace("_", "").isdigit():
            raise ActionFailed(f"no Slurm job id for job {job!r} (map it in the executor's job_ids)")
        return sid

    def effect(self, action: PlannedAction) -> Effect:
        if action.action in ("drain_node", "mark_degraded", "reboot_node") and action.target_kind == "node":
            return Effect(nodes=frozenset(node_members(action.target)))  # scontrol expands hostlists
        if action.action == "reschedule_job" and action.target_kind == "job":
            self._slurm_job(action.target)
            return Effect(jobs=frozenset({action.target}))
        raise ActionFailed(f"slurm executor cannot {action.action} a {action.target_kind}")

    def argv(self, action: PlannedAction, alert: Alert) -> list[str]:
        try:
            self.effect(action)  # refuses what it cannot do and any target that is not an id
        except ValueError as e:
            raise ActionFailed(str(e)) from None
        if action.action == "reschedule_job":
            return [self.scontrol, "requeue", self._slurm_job(action.target)]
        if action.action == "reboot_node":
            return [self.scontrol, "reboot", "ASAP", "nextstate=RESUME", f"Reason={reason(action, alert)}",
                    action.target]
        return [self.scontrol, "update", f"NodeName={action.target}", "State=DRAIN",
                f"Reason={reason(action, alert)}"]

    def describe(self, action: PlannedAction, alert: Alert) -> str:
        return shlex.join(self.argv(action, alert)) + node_wide(action, self.NO_GPU)

    def execute(self, action: PlannedAction, alert: Alert) -> str:
        argv = self.argv(action, alert)
        run(argv, self.timeout_s)
        return shlex.join(argv) + node_wide(action, self.NO_GPU)

    def out_of_service(self) -> set[str] | None:
        try:
            text = run([self.sinfo, "--noheader", "--Node", "--format=%N %T"], self.timeout_s)
        except ActionFailed as e:
            raise ActionFailed(f"cannot read Slurm node states: {e}") from None
        return parse_sinfo(text)


class WebhookExecutor(BaseExecutor):
    """POST the action, how the cost decision says to carry it out (``how``: mode, scope, and for a
    per-GPU drain the GPU, its UUID and pods; null when it said nothing) and its alert as JSON to
    ``url``. The guard counts the action at its word (a drain: the node) unless ``effect:`` says."""

    def __init__(self, url: str, headers: dict[str, str] | None = None, timeout_s: float = 10.0,
                 effect: str | None = None) -> None:
        self.url, self.headers, self.timeout_s = url, headers or {}, timeout_s
        self.declared_effect = effect

    def describe(self, action: PlannedAction, alert: Alert) -> str:
        return f"POST {self.url} ({action.action} {action.target})"

    def execute(self, action: PlannedAction, alert: Alert) -> str:
        body = {"action": action.action, "target_kind": action.target_kind, "target": action.target,
                "params": action.params, "how": action.how.to_json() if action.how is not None else None,
                "alert": alert.to_json()}
        try:
            resp = httpx.post(self.url, json=body, headers=self.headers, timeout=self.timeout_s)
        except httpx.HTTPError as e:
            raise ActionFailed(f"POST {self.url}: {e}") from None
        if resp.status_code >= 300:
            raise ActionFailed(f"POST {self.url}: HTTP {resp.status_code}")
        return f"POST {self.url} -> {resp.status_code}"


class ShellExecutor(BaseExecutor):
    """Run a command given as an argument list (never a shell), each argument filled with
    ``{action} {target} {target_kind} {rule} {entity} {text}``: a filled value stays one argument.
    A drain's target is its node, so a per-GPU drain is the node's to the command (the detail says so)."""

    NO_GPU = "a command is given the node as its target"

    def __init__(self, command: list[str], timeout_s: float = 30.0, effect: str | None = None) -> None:
        try:
            self.argv_template = check_command(command)
        except ValueError as e:
            raise InputError(str(e), key="command") from None
        self.timeout_s = timeout_s
        self.declared_effect = effect

    def argv(self, action: PlannedAction, alert: Alert) -> list[str]:
        fields = {"action": action.action, "target": action.target, "target_kind": action.target_kind,
                  "rule": alert.rule, "entity": alert.entity_id, "text": str(action.params.get("text", ""))}
        return [tok.format(**fields) for tok in self.argv_template]

    def describe(self, action: PlannedAction, alert: Alert) -> str:
        return shlex.join(self.argv(action, alert)) + node_wide(action, self.NO_GPU)

    def execute(self, action: PlannedAction, alert: Alert) -> str:
        argv = self.argv(action, alert)
        run(argv, self.timeout_s)
        return shlex.join(argv) + node_wide(action, self.NO_GPU)


class LogExecutor(BaseExecutor):
    """Does nothing but say what it would do (the audit log is the record); changes nothing."""

    def effect(self, action: PlannedAction) -> Effect:
        return NO_EFFECT

    def describe(self, action: PlannedAction, alert: Alert) -> str:
        return f"log {action.action} {action.target}{_per_gpu(action)}"

    def execute(self, action: PlannedAction, alert: Alert) -> str:
        return f"logged {action.action} {action.target}{_per_gpu(action)}"


def _per_gpu(action: PlannedAction) -> str:
    how = action.how
    if action.action != "drain_node" or how is None or not how.per_gpu:
        return ""
    return f" (per-GPU: the pods on {how.gpu}: {', '.join(how.pods) or 'none known'})"


def build_executors(specs: dict[str, ExecutorSpec]) -> dict[str, Executor]:
    """Executors per action from the rule file's ``executors:`` section. Nothing is read or run
    here (a Kubernetes token is read by ``prepare``, which a dry run never calls)."""
    kinds: dict[str, type[Any]] = {"slurm": SlurmExecutor, "kubernetes": KubernetesExecutor,
                                   "webhook": WebhookExecutor, "shell": ShellExecutor, "log": LogExecutor}
    out: dict[str, Executor] = {}
    for action, spec in specs.items():
        try:
            settings = check_executor(spec.kind, spec.settings)
            check_executor_action(spec.kind, action)
            out[action] = kinds[spec.kind](**settings)
        except ValueError as e:
            raise InputError(str(e), key=f"executors.{action}") from None
    return out
