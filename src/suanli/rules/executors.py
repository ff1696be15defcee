"""Executors carry out one planned action: Slurm (``scontrol``), Kubernetes (API with a bearer
token), a webhook (POST JSON), a shell command template, or just a log line.

``execute`` returns a one-line detail on success and raises :class:`ActionFailed` otherwise; it
never runs anything through a shell (commands are argument lists, templates are filled per token).
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path
from typing import Any, Protocol

import httpx

from suanli.errors import InputError
from suanli.rules.alerts import Alert, PlannedAction
from suanli.rules.language import ExecutorSpec

__all__ = ["ActionFailed", "Executor", "KubernetesExecutor", "LogExecutor", "ShellExecutor", "SlurmExecutor",
           "WebhookExecutor", "build_executors"]


class ActionFailed(Exception):
    """An executor could not carry out an action (the message is the audit detail)."""


class Executor(Protocol):
    def execute(self, action: PlannedAction, alert: Alert) -> str: ...


def _reason(action: PlannedAction, alert: Alert) -> str:
    text = str(action.params.get("text", "")).strip()
    return f"suanli {alert.rule}: {text}" if text else f"suanli {alert.rule}"


def _run(argv: list[str], timeout_s: float) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ActionFailed(f"{argv[0]}: {e}") from None
    if done.returncode != 0:
        raise ActionFailed(f"{shlex.join(argv)} exited {done.returncode}: {done.stderr.strip()[:200]}")
    return shlex.join(argv)


class SlurmExecutor:
    """drain_node: ``scontrol update NodeName=N State=DRAIN Reason=...``; reschedule_job:
    ``scontrol requeue JOBID`` (``job_ids`` maps inventory job ids to Slurm job ids)."""

    def __init__(self, scontrol: str = "scontrol", job_ids: dict[str, str] | None = None,
                 timeout_s: float = 30.0) -> None:
        self.scontrol, self.job_ids, self.timeout_s = scontrol, job_ids or {}, timeout_s

    def execute(self, action: PlannedAction, alert: Alert) -> str:
        if action.action in ("drain_node", "mark_degraded") and action.target_kind == "node":
            argv = [self.scontrol, "update", f"NodeName={action.target}", "State=DRAIN",
                    f"Reason={_reason(action, alert)}"]
        elif action.action == "reschedule_job":
            argv = [self.scontrol, "requeue", self.job_ids.get(action.target, action.target)]
        else:
            raise ActionFailed(f"slurm executor cannot {action.action} a {action.target_kind}")
        return _run(argv, self.timeout_s)


class KubernetesExecutor:
    """drain_node: cordon (PATCH spec.unschedulable) and taint the node; mark_degraded: taint only.
    Through the API server with a bearer token (``token`` or ``token_file``)."""

    TAINT_KEY = "suanli.io/degraded"

    def __init__(self, api_url: str, token: str | None = None, token_file: str | None = None,
                 verify: bool | str = True, timeout_s: float = 10.0) -> None:
        self.api_url = api_url.rstrip("/")
        self.token = token if token is not None else (
            Path(token_file).read_text(encoding="utf-8").strip() if token_file else "")
        self.verify, self.timeout_s = verify, timeout_s

    def execute(self, action: PlannedAction, alert: Alert) -> str:
        if action.target_kind != "node" or action.action not in ("drain_node", "mark_degraded"):
            raise ActionFailed(f"kubernetes executor cannot {action.action} a {action.target_kind}")
        spec: dict[str, Any] = {"taints": [{"key": self.TAINT_KEY, "value": alert.rule, "effect": "NoSchedule"}]}
        if action.action == "drain_node":
            spec["unschedulable"] = True
        url = f"{self.api_url}/api/v1/nodes/{action.target}"
        headers = {"Authorization": f"Bearer {self.token}",
                   "Content-Type": "application/strategic-merge-patch+json"}
        try:
            resp = httpx.patch(url, json={"spec": spec}, headers=headers, timeout=self.timeout_s,
                               verify=self.verify)
        except httpx.HTTPError as e:
            raise ActionFailed(f"PATCH {url}: {e}") from None
        if resp.status_code >= 300:
            raise ActionFailed(f"PATCH {url}: HTTP {resp.status_code}")
        return f"PATCH {url} -> {resp.status_code}"


class WebhookExecutor:
    """POST the action and its alert as JSON to ``url``."""

    def __init__(self, url: str, headers: dict[str, str] | None = None, timeout_s: float = 10.0) -> None:
        self.url, self.headers, self.timeout_s = url, headers or {}, timeout_s

    def execute(self, action: PlannedAction, alert: Alert) -> str:
        body = {"action": action.action, "target_kind": action.target_kind, "target": action.target,
                "params": action.params, "alert": alert.to_json()}
        try:
            resp = httpx.post(self.url, json=body, headers=self.headers, timeout=self.timeout_s)
        except httpx.HTTPError as e:
            raise ActionFailed(f"POST {self.url}: {e}") from None
        if resp.status_code >= 300:
            raise ActionFailed(f"POST {self.url}: HTTP {resp.status_code}")
        return f"POST {self.url} -> {resp.status_code}"


class ShellExecutor:
    """Run a command template, split like a shell (no shell runs it) and filled per argument with
    ``{action} {target} {target_kind} {rule} {entity} {text}``."""

    def __init__(self, command: str, timeout_s: float = 30.0) -> None:
        self.argv_template = shlex.split(command)
        self.timeout_s = timeout_s

    def execute(self, action: PlannedAction, alert: Alert) -> str:
        fields = {"action": action.action, "target": action.target, "target_kind": action.target_kind,
                  "rule": alert.rule, "entity": alert.entity_id, "text": str(action.params.get("text", ""))}
        try:
            argv = [tok.format(**fields) for tok in self.argv_template]
        except (KeyError, IndexError, ValueError) as e:
            raise ActionFailed(f"bad command template: {e}") from None
        return _run(argv, self.timeout_s)


class LogExecutor:
    """Does nothing but say what it would do (the audit log is the record)."""

    def execute(self, action: PlannedAction, alert: Alert) -> str:
        return f"logged {action.action} {action.target}"


def build_executors(specs: dict[str, ExecutorSpec]) -> dict[str, Executor]:
    """Executors per action from the rule file's ``executors:`` section."""
    kinds: dict[str, type[Any]] = {"slurm": SlurmExecutor, "kubernetes": KubernetesExecutor,
                                   "webhook": WebhookExecutor, "shell": ShellExecutor, "log": LogExecutor}
    out: dict[str, Executor] = {}
    for action, spec in specs.items():
        try:
            out[action] = kinds[spec.kind](**spec.settings)
        except (TypeError, KeyError, OSError) as e:
            raise InputError(f"bad settings for a {spec.kind} executor: {e}", key=f"executors.{action}") from None
    return out
