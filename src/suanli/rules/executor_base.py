"""What every executor is: the protocol the action runner uses, safe defaults, and running a
command without a shell."""

from __future__ import annotations

import shlex
import subprocess
from typing import Protocol

from suanli.rules.alerts import Alert, PlannedAction
from suanli.rules.effects import NO_EFFECT, Effect, nominal_effect, target_effect

__all__ = ["ActionFailed", "BaseExecutor", "Executor", "node_wide", "reason", "run"]


class ActionFailed(Exception):
    """An executor could not carry out an action (the message is the audit detail)."""


class Executor(Protocol):
    def effect(self, action: PlannedAction) -> Effect: ...
    def describe(self, action: PlannedAction, alert: Alert) -> str: ...
    def execute(self, action: PlannedAction, alert: Alert) -> str: ...
    def out_of_service(self) -> set[str] | None: ...
    def prepare(self) -> None: ...


class BaseExecutor:
    """Defaults: the action taken at its word (or at the ``effect`` setting), no state lookup."""

    declared_effect: str | None = None

    def effect(self, action: PlannedAction) -> Effect:
        if self.declared_effect == "none":
            return NO_EFFECT
        if self.declared_effect == "out_of_service":
            return target_effect(action)
        return nominal_effect(action)

    def describe(self, action: PlannedAction, alert: Alert) -> str:
        return f"{action.action} {action.target}"

    def execute(self, action: PlannedAction, alert: Alert) -> str:
        raise ActionFailed(f"{type(self).__name__} cannot {action.action}")

    def out_of_service(self) -> set[str] | None:
        return None

    def prepare(self) -> None:
        return None


def node_wide(action: PlannedAction, why: str) -> str:
    """The detail's note when the cost decision chose a per-GPU drain that this executor carries
    out on the whole node (``why`` it cannot do one GPU); empty otherwise."""
    how = action.how
    if action.action != "drain_node" or how is None or not how.per_gpu:
        return ""
    return f" (a per-GPU drain of {how.gpu} was chosen; {why}, so this drains the whole node {action.target})"


def reason(action: PlannedAction, alert: Alert) -> str:
    text = str(action.params.get("text", "")).strip()
    return f"suanli {alert.rule}: {text}" if text else f"suanli {alert.rule}"


def run(argv: list[str], timeout_s: float) -> str:
    """Run without a shell; stdout on success, ActionFailed otherwise."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=timeout_s,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ActionFailed(f"{argv[0]}: {e}") from None
    if done.returncode != 0:
        raise ActionFailed(f"{shlex.join(argv)} exited {done.returncode}: {done.stderr.strip()[:200]}")
    return done.stdout
