"""What an action does to the fleet, whatever it is called: the nodes it takes out of service
(drain, cordon, a NoSchedule taint), the GPUs it removes (retire, or on such a node) and the jobs it
stops (requeue). The blast-radius guard counts effects, never action names.

An executor that knows what it does says so (Slurm's ``mark_degraded`` drains: the node counts);
one that cannot know (a webhook, a shell command) is taken at the action's word (``drain_node``
takes a node out, ``retire_gpu`` a GPU, ``reschedule_job`` a job, ``mark_degraded`` its target),
unless its ``effect:`` setting says ``none`` or ``out_of_service``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from suanli.rules.alerts import PlannedAction
from suanli.rules.ids import is_id, node_members

__all__ = ["NO_EFFECT", "Effect", "check_target", "nominal_effect", "target_effect"]


@dataclass(frozen=True)
class Effect:
    nodes: frozenset[str] = frozenset()
    gpus: frozenset[str] = frozenset()
    jobs: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.nodes or self.gpus or self.jobs)

    def with_node_gpus(self, node_gpus: Mapping[str, Iterable[str]]) -> Effect:
        """The same effect with every GPU of its nodes counted as removed too."""
        gpus = set(self.gpus)
        for n in self.nodes:
            gpus.update(node_gpus.get(n, ()))
        return Effect(self.nodes, frozenset(gpus), self.jobs)

    def to_json(self) -> dict[str, list[str]]:
        return {"nodes": sorted(self.nodes), "gpus": sorted(self.gpus), "jobs": sorted(self.jobs)}

    @classmethod
    def from_json(cls, data: Any) -> Effect:
        """From an audit record's ``effect`` (anything else: no effect)."""
        if not isinstance(data, dict):
            return NO_EFFECT

        def ids(key: str) -> frozenset[str]:
            v = data.get(key)
            return frozenset(x for x in v if isinstance(x, str)) if isinstance(v, list) else frozenset()

        return cls(ids("nodes"), ids("gpus"), ids("jobs"))


NO_EFFECT = Effect()


def check_target(action: PlannedAction) -> None:
    """ValueError unless the target is an id of its kind (a node target may be a Slurm hostlist)."""
    if action.target_kind == "node":
        node_members(action.target)
    elif not is_id(action.target_kind, action.target):
        raise ValueError(f"{action.target!r} is not a {action.target_kind} id (spec/inventory.md)")


def target_effect(action: PlannedAction) -> Effect:
    """The target itself taken out: a node (every node of a hostlist), a GPU, a job."""
    kind = action.target_kind
    if kind == "node":
        return Effect(nodes=frozenset(node_members(action.target)))
    if kind == "gpu":
        return Effect(gpus=frozenset({action.target}))
    if kind == "job":
        return Effect(jobs=frozenset({action.target}))
    return NO_EFFECT


def nominal_effect(action: PlannedAction) -> Effect:
    """An action taken at its word: tickets and notifications change nothing, the rest take out
    their target."""
    if action.action in ("open_ticket", "notify"):
        return NO_EFFECT
    return target_effect(action)
