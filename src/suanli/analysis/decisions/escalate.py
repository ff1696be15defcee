"""History rules: when a fault stops being a cost question (escalation), where repeats point, and
which remediations supersede which.

* The same GPU failing ``repeat_count`` times within ``repeat_window_s`` (this incident included)
  escalates to retirement: the GPU is the fault.
* The same reset-asking code (Xid catalogue: RESET_GPU, REBOOT_SYSTEM) again after
  ``reboot_limit`` resets or reboots of that GPU within ``reboot_window_s`` escalates to hardware
  inspection: resets do not help.
* The same code on ``software_spread`` distinct GPUs within the window, with no GPU repeating it,
  points at software (driver, firmware, the application): moving the job off this GPU would not
  help, so exclusions are costed as fixing nothing.
* A node reboot supersedes a GPU reset on that node, a node drain a per-GPU drain, retiring a GPU
  a reset of it; a reset and a reboot of its node within ``remediation_merge_s`` are one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from suanli.analysis.decisions.config import DecisionConfig
from suanli.analysis.decisions.model import Escalation, IncidentFacts
from suanli.store.history import RemediationRecord
from suanli.timefmt import to_rfc3339

__all__ = ["Plan", "Verdict", "merge_resets", "supersede", "verdict"]

RESET_KINDS: frozenset[str] = frozenset({"reset_gpu", "reboot_node"})


@dataclass(frozen=True)
class Verdict:
    escalation: Escalation | None
    points_at: str | None
    """``gpu``, ``software`` or None (history says nothing)."""
    lines: tuple[str, ...]


def _node_of(gpu_id: str) -> str:
    return gpu_id.split("/", 1)[0]


def merge_resets(records: Sequence[RemediationRecord], gpu_id: str, merge_s: float) -> list[RemediationRecord]:
    """The executed resets that reached one GPU (its own resets, reboots of its node), a reset and
    a reboot of its node within ``merge_s`` of each other counted once (the reboot kept)."""
    node = _node_of(gpu_id)
    hits = sorted((r for r in records if r.executed and r.kind in RESET_KINDS
                   and (r.entity_id == gpu_id or (r.kind == "reboot_node" and (r.entity_id == node or r.node == node)))),
                  key=lambda r: (r.time_s, r.kind != "reboot_node"))
    out: list[RemediationRecord] = []
    for r in hits:
        if out and abs(r.time_s - out[-1].time_s) <= merge_s:
            if r.kind == "reboot_node" and out[-1].kind != "reboot_node":
                out[-1] = r
            continue
        out.append(r)
    return out


def _when(ts: float) -> str:
    return (to_rfc3339(ts) or "?")[5:16].replace("T", " ")


def _repeats(facts: IncidentFacts, cfg: DecisionConfig) -> tuple[list[str], Escalation | None]:
    since = facts.now_s - cfg.repeat_window_s
    same = sorted({(i.start_s, i.category) for i in facts.history.incidents
                   if i.entity_id == facts.root_id and i.incident_id != facts.incident_id
                   and since <= i.start_s < facts.onset_s})
    if not same:
        return [], None
    shown = ", ".join(f"{c} {_when(t)}" for t, c in same[-5:])
    line = (f"history: {facts.root_id} had {len(same)} earlier incident(s) within "
            f"{cfg.repeat_window_s / 3600:g} h ({shown})")
    if facts.root_kind != "gpu" or len(same) + 1 < cfg.repeat_count:
        return [line], None
    reason = (f"{facts.root_id} failed {len(same) + 1} times within {cfg.repeat_window_s / 3600:g} h "
              f"(bar {cfg.repeat_count}): the GPU is the fault -> retirement")
    return [line], Escalation("retire", "gpu", reason, ("retire_gpu", "drain_node", "open_ticket"))


def _spread(facts: IncidentFacts, cfg: DecisionConfig) -> tuple[list[str], int]:
    if facts.code is None:
        return [], 0
    since = facts.now_s - cfg.repeat_window_s
    gpus = {i.entity_id for i in facts.history.incidents if i.code == facts.code and i.entity_kind == "gpu"
            and since <= i.start_s <= facts.now_s}
    gpus.add(facts.root_id)
    if len(gpus) < 2:
        return [], len(gpus)
    return [f"history: {facts.code} on {len(gpus)} distinct GPUs within {cfg.repeat_window_s / 3600:g} h"], len(gpus)


def _reboots(facts: IncidentFacts, cfg: DecisionConfig) -> tuple[list[str], Escalation | None]:
    if facts.root_kind != "gpu":
        return [], None
    since = facts.now_s - cfg.reboot_window_s
    resets = [r for r in merge_resets(facts.history.remediations, facts.root_id, cfg.remediation_merge_s)
              if since <= r.time_s < facts.onset_s]
    if not resets:
        return [], None
    line = (f"history: {len(resets)} reset(s)/reboot(s) of {facts.root_id} within "
            f"{cfg.reboot_window_s / 86400:g} d ({', '.join(f'{r.kind} {_when(r.time_s)}' for r in resets[-5:])})")
    if not (facts.code and facts.code_asks_reset) or len(resets) < cfg.reboot_limit:
        return [line], None
    reason = (f"{facts.code} still asks for a reset after {len(resets)} resets/reboots of {facts.root_id} "
              f"(bar {cfg.reboot_limit}) -> hardware inspection")
    return [line], Escalation("inspect", "gpu", reason, ("drain_node", "retire_gpu", "open_ticket"))


def verdict(facts: IncidentFacts, cfg: DecisionConfig) -> Verdict:
    """What the history says about this incident (module docstring)."""
    lines, esc = _repeats(facts, cfg)
    spread_lines, spread = _spread(facts, cfg)
    lines += spread_lines
    if esc is not None:
        return Verdict(esc, "gpu", tuple(lines))
    if spread >= cfg.software_spread:
        lines.append(f"{facts.code} on {spread} different GPUs and none repeating it: points at software "
                     "(driver, firmware or the application), not at this GPU")
        return Verdict(None, "software", tuple(lines))
    reboot_lines, esc = _reboots(facts, cfg)
    lines += reboot_lines
    return Verdict(esc, "gpu" if esc is not None else None, tuple(lines))


@dataclass(frozen=True)
class Plan:
    """A remediation about to be carried out: ``scope`` gpu or node, on ``gpu`` / ``node``."""

    kind: str
    target: str
    node: str | None
    gpu: str | None = None
    scope: str = "node"


_NODE_WIDE = frozenset({"reboot_node", "drain_node"})
_GPU_WIDE = frozenset({"reset_gpu", "drain_node", "mark_degraded"})


def _supersedes(a: Plan, b: Plan) -> bool:
    if a is b:
        return False
    if a.kind in _NODE_WIDE and a.scope == "node" and b.scope == "gpu" and b.kind in _GPU_WIDE and a.node == b.node:
        return True
    return a.kind == "retire_gpu" and b.kind == "reset_gpu" and a.gpu is not None and a.gpu == b.gpu


def supersede(plans: Sequence[Plan]) -> tuple[list[Plan], list[tuple[Plan, Plan]]]:
    """(kept, [(dropped, by)]): exact duplicates collapse, and wider remediations drop narrower
    ones they contain (module docstring)."""
    unique = list(dict.fromkeys(plans))
    kept, dropped = [], []
    for p in unique:
        by = next((q for q in unique if _supersedes(q, p)), None)
        if by is None:
            kept.append(p)
        else:
            dropped.append((p, by))
    return kept, dropped
