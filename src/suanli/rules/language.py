"""The YAML rule file: rules, inhibit_rules, actions and executors (docs/rules.md).

Parsed with ``yaml.compose`` so every error names the file and line; an unknown metric lists the
valid names. ``load_rules(None)`` loads the shipped default pack (default_rules.yaml).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from suanli.errors import InputError
from suanli.rules.action_config import (
    ACTIONS,
    ActionsConfig,
    ExecutorSpec,
    parse_actions_section,
    parse_executors_section,
)
from suanli.rules.conditions import Condition, parse_condition, parse_duration
from suanli.rules.matchers import InhibitRule, parse_matcher
from suanli.rules.names import SCOPES
from suanli.yaml_nodes import NodeReader, compose

__all__ = ["ACTIONS", "ActionSpec", "ActionsConfig", "ExecutorSpec", "Rule", "RuleSet", "load_rules",
           "parse_rules"]

SEVERITIES: tuple[str, ...] = ("critical", "warning", "info")


@dataclass(frozen=True)
class ActionSpec:
    """An action a rule plans when it fires, with its parameters (``text`` of a ticket ...)."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Rule:
    name: str
    scope: str
    conditions: tuple[Condition, ...]
    mode: str = "all"                       # "all" (and) | "any" (or)
    actions: tuple[ActionSpec, ...] = ()
    severity: str = "warning"
    category: str | None = None
    description: str = ""
    keep_firing_for_s: float = 0.0
    held_only: bool = False                 # only GPUs (nodes) a job holds: not idle spares
    source: str = ""                        # file:line

    @property
    def for_s(self) -> float:
        """The rule's hold time: the longest ``for`` of its conditions (Prometheus has one per rule)."""
        return max((c.for_s for c in self.conditions), default=0.0)


@dataclass(frozen=True)
class RuleSet:
    rules: tuple[Rule, ...]
    inhibit_rules: tuple[InhibitRule, ...] = ()
    actions: ActionsConfig = field(default_factory=ActionsConfig)
    executors: dict[str, ExecutorSpec] = field(default_factory=dict)
    source: str = ""


class _Ctx(NodeReader):
    def mapping(self, node: yaml.Node, what: str) -> dict[str, yaml.Node]:
        if not isinstance(node, yaml.MappingNode):
            raise self.err(node, f"{what}: expected a mapping")
        return {str(k.value): v for k, v in node.value}

    def value(self, node: yaml.Node) -> Any:
        try:
            return yaml.SafeLoader("").construct_object(node, deep=True)
        except ValueError as exc:                # an integer past Python's 4,300-digit limit
            raise self.err(node, f"a value suanli cannot read ({str(exc).split(';')[0]})") from None

    def text(self, node: yaml.Node, what: str) -> str:
        if not isinstance(node, yaml.ScalarNode):
            raise self.err(node, f"{what}: expected a string")
        return str(node.value)


def _action(ctx: _Ctx, node: yaml.Node, rule: str) -> ActionSpec:
    params: dict[str, Any] = {}
    if isinstance(node, yaml.ScalarNode):
        name = str(node.value)
    else:
        m = ctx.mapping(node, f"rule {rule}: action")
        if len(m) != 1:
            raise ctx.err(node, f"rule {rule}: an action is a name or {{name: parameters}}")
        name, pnode = next(iter(m.items()))
        raw = ctx.value(pnode)
        params = raw if isinstance(raw, dict) else {"text": str(raw)}
    if name not in ACTIONS:
        raise ctx.err(node, f"rule {rule}: unknown action {name!r}; valid actions: {', '.join(ACTIONS)}")
    return ActionSpec(name, params)


def _conditions(ctx: _Ctx, node: yaml.Node, rule: str, defaults: dict[str, float]
                ) -> tuple[str, tuple[Condition, ...]]:
    m = ctx.mapping(node, f"rule {rule}: conditions")
    if len(m) != 1 or next(iter(m)) not in ("all", "any"):
        raise ctx.err(node, f"rule {rule}: conditions must be 'all:' or 'any:' with a list")
    mode, lnode = next(iter(m.items()))
    out = []
    for cnode in ctx.seq(lnode, f"rule {rule}: conditions.{mode}"):
        try:
            out.append(parse_condition(ctx.text(cnode, "condition"), defaults["event_window_s"],
                                       defaults["sudden_factor"]))
        except ValueError as e:
            raise ctx.err(cnode, f"rule {rule}: {e}") from None
    if not out:
        raise ctx.err(lnode, f"rule {rule}: no conditions")
    return mode, tuple(out)


RULE_KEYS: tuple[str, ...] = ("name", "scope", "conditions", "actions", "severity", "category", "description",
                              "keep_firing_for", "held_only")
INHIBIT_KEYS: tuple[str, ...] = ("name", "source_matchers", "target_matchers", "equal", "topology")
TOP_KEYS: tuple[str, ...] = ("rules", "inhibit_rules", "actions", "executors")


def _known(ctx: _Ctx, m: dict[str, yaml.Node], valid: tuple[str, ...], what: str) -> None:
    for key, vnode in m.items():
        if key not in valid:
            raise ctx.err(vnode, f"{what}: unknown key {key!r}; valid keys: {', '.join(valid)}")


def _rule(ctx: _Ctx, node: yaml.Node, defaults: dict[str, float]) -> Rule:
    m = ctx.mapping(node, "rule")
    _known(ctx, m, RULE_KEYS, "rule")
    for key in ("name", "scope", "conditions"):
        if key not in m:
            raise ctx.err(node, f"rule: missing {key!r}")
    name = ctx.text(m["name"], "name")
    scope = ctx.text(m["scope"], f"rule {name}: scope")
    if scope not in SCOPES:
        raise ctx.err(m["scope"], f"rule {name}: unknown scope {scope!r}; valid scopes: {', '.join(SCOPES)}")
    mode, conds = _conditions(ctx, m["conditions"], name, defaults)
    actions = tuple(_action(ctx, a, name) for a in ctx.seq(m["actions"], f"rule {name}: actions")) \
        if "actions" in m else ()
    severity = ctx.text(m["severity"], "severity") if "severity" in m else "warning"
    if severity not in SEVERITIES:
        raise ctx.err(m["severity"], f"rule {name}: unknown severity {severity!r}; valid: {', '.join(SEVERITIES)}")
    keep = 0.0
    if "keep_firing_for" in m:
        try:
            keep = parse_duration(ctx.text(m["keep_firing_for"], "keep_firing_for"))
        except ValueError as e:
            raise ctx.err(m["keep_firing_for"], f"rule {name}: {e}") from None
    held = _held_only(ctx, m, name, scope)
    return Rule(name=name, scope=scope, conditions=conds, mode=mode, actions=actions, severity=severity,
                category=ctx.text(m["category"], "category") if "category" in m else None,
                description=ctx.text(m["description"], "description") if "description" in m else "",
                keep_firing_for_s=keep, held_only=held, source=f"{ctx.file}:{node.start_mark.line + 1}")


def _held_only(ctx: _Ctx, m: dict[str, yaml.Node], name: str, scope: str) -> bool:
    if "held_only" not in m:
        return False
    text = ctx.text(m["held_only"], "held_only").lower()
    if text not in ("true", "false"):
        raise ctx.err(m["held_only"], f"rule {name}: held_only must be true or false, got {text!r}")
    if text == "true" and scope not in ("gpu", "node"):
        raise ctx.err(m["held_only"], f"rule {name}: held_only applies to gpu and node rules, not {scope}")
    return text == "true"


def _inhibit(ctx: _Ctx, node: yaml.Node) -> InhibitRule:
    m = ctx.mapping(node, "inhibit_rules[]")
    _known(ctx, m, INHIBIT_KEYS, "inhibit_rules[]")
    try:
        src = tuple(parse_matcher(ctx.text(n, "matcher")) for n in ctx.seq(m["source_matchers"], "source_matchers")) \
            if "source_matchers" in m else ()
        tgt = tuple(parse_matcher(ctx.text(n, "matcher")) for n in ctx.seq(m["target_matchers"], "target_matchers")) \
            if "target_matchers" in m else ()
    except ValueError as e:
        raise ctx.err(node, f"inhibit_rules: {e}") from None
    equal = tuple(ctx.text(n, "equal") for n in ctx.seq(m["equal"], "equal")) if "equal" in m else ()
    topology = ctx.text(m["topology"], "topology") if "topology" in m else None
    if topology not in (None, "upstream"):
        raise ctx.err(m["topology"], f"inhibit_rules: unknown topology {topology!r} (expected 'upstream')")
    name = ctx.text(m["name"], "name") if "name" in m else f"inhibit@{node.start_mark.line + 1}"
    return InhibitRule(name=name, source_matchers=src, target_matchers=tgt, equal=equal, topology=topology)


def parse_rules(text: str, source: str = "rules.yaml", event_window_s: float = 3600.0,
                sudden_factor: float = 10.0) -> RuleSet:
    """Parse rule-file text; InputError (file:line: what) on anything wrong."""
    ctx = _Ctx(source)
    root = compose(text, source)
    if root is None:
        raise InputError("empty rule file (expected a mapping with 'rules:')", file=source)
    top = ctx.mapping(root, "rule file")
    _known(ctx, top, TOP_KEYS, "rule file")
    if "rules" not in top:
        raise ctx.err(root, "missing 'rules:'")
    defaults = {"event_window_s": event_window_s, "sudden_factor": sudden_factor}
    rules = tuple(_rule(ctx, n, defaults) for n in ctx.seq(top["rules"], "rules"))
    seen: set[str] = set()
    for r, n in zip(rules, top["rules"].value, strict=True):
        if r.name in seen:
            raise ctx.err(n, f"duplicate rule name {r.name!r}")
        seen.add(r.name)
    inhibits = tuple(_inhibit(ctx, n) for n in ctx.seq(top["inhibit_rules"], "inhibit_rules")) \
        if "inhibit_rules" in top else ()
    # the actions and executors sections are validated by the action layer (action_config.py)
    actions = parse_actions_section(source, top["actions"]) if "actions" in top else ActionsConfig()
    executors = parse_executors_section(source, top["executors"]) if "executors" in top else {}
    return RuleSet(rules, inhibits, actions, executors, source)


def load_rules(path: Path | None = None) -> RuleSet:
    """Load a rule file; None loads the shipped default pack (suanli/rules/default_rules.yaml)."""
    if path is None:
        text = resources.files("suanli.rules").joinpath("default_rules.yaml").read_text(encoding="utf-8")
        return parse_rules(text, "default_rules.yaml")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(f"cannot read rule file: {e.strerror}", file=str(path)) from None
    return parse_rules(text, str(path))
