"""Several rule files as one rule set (``serve``'s ``rules:`` list): their rules and inhibitions
side by side, in file order.

A rule name must be unique across the files (an alert is keyed by its rule's name), and only one
file may carry the ``actions`` and ``executors`` sections (which drain guard, which Slurm: one
answer per service). Either conflict is one error naming both places.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from suanli.errors import InputError
from suanli.rules.action_config import ActionsConfig
from suanli.rules.language import RuleSet, load_rules

__all__ = ["load_rule_files", "merge_rulesets"]


def _file_of(source: str) -> str:
    """``a.yaml`` of ``a.yaml:12``."""
    head, sep, tail = source.rpartition(":")
    return head if sep and tail.isdigit() else source


def _one_section(sets: Sequence[RuleSet], what: str, has: list[bool]) -> int | None:
    """The index of the one rule set that carries ``what``, None when none does."""
    carriers = [i for i, h in enumerate(has) if h]
    if len(carriers) > 1:
        a, b = (sets[i].source for i in carriers[:2])
        raise InputError(f"'{what}' is set in both {a} and {b}: keep it in one rule file", file=b)
    return carriers[0] if carriers else None


def merge_rulesets(sets: Sequence[RuleSet]) -> RuleSet:
    """One rule set of ``sets`` (a single one is returned as it is)."""
    if len(sets) == 1:
        return sets[0]
    seen: dict[str, str] = {}
    for rs in sets:
        for r in rs.rules:
            if r.name in seen:
                raise InputError(f"rule {r.name!r} is defined at {seen[r.name]} and at {r.source}: "
                                 "rule names must be unique across rule files", file=_file_of(r.source))
            seen[r.name] = r.source
    act = _one_section(sets, "actions", [rs.actions != ActionsConfig() for rs in sets])
    exe = _one_section(sets, "executors", [bool(rs.executors) for rs in sets])
    return RuleSet(tuple(r for rs in sets for r in rs.rules), tuple(i for rs in sets for i in rs.inhibit_rules),
                   sets[act].actions if act is not None else ActionsConfig(),
                   sets[exe].executors if exe is not None else {}, ", ".join(rs.source for rs in sets))


def load_rule_files(paths: Sequence[Path]) -> RuleSet:
    """The rule files as one rule set; none: the shipped default pack."""
    if not paths:
        return load_rules(None)
    return merge_rulesets([load_rules(p) for p in paths])
