"""Inhibition with Alertmanager's semantics (prometheus/alertmanager ``inhibit/inhibit.go``), plus
inhibition along the inventory topology.

- A rule mutes a *target* alert when some *source* alert exists such that the source matches
  ``source_matchers``, the target matches ``target_matchers`` and every label in ``equal`` has the
  same value on both (a label missing on both is "" on both, so it counts as equal).
- Only a firing source inhibits: a resolved (or pending) source inhibits nothing.
- An alert never inhibits itself: when the target also matches the source matchers, sources
  that also match the target matchers are skipped (Alertmanager's two-sided-match rule).
- ``topology: upstream`` additionally requires the target's entity to be a dependant of the
  source's entity (``dependents(source_entity)``, e.g. Topology.dependents).

Matchers use Alertmanager's syntax: ``label="v"``, ``label!="v"``, ``label=~"re"``,
``label!~"re"``; regexes are fully anchored; a missing label has the value "".
Muted alerts are counted and kept (``InhibitionResult.muted``), never lost.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["InhibitRule", "InhibitableAlert", "InhibitionResult", "Matcher", "apply_inhibitions",
           "parse_matcher"]

_MATCHER_RE = re.compile(r'^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*(?:"((?:[^"\\]|\\.)*)"|([^\s"=~!][^\s"]*|))\s*$')


@dataclass(frozen=True)
class Matcher:
    label: str
    op: str                         # = != =~ !~
    value: str

    def __post_init__(self) -> None:
        if self.op in ("=~", "!~"):
            object.__setattr__(self, "_re", re.compile(f"^(?:{self.value})$"))

    def matches(self, labels: Mapping[str, str]) -> bool:
        v = labels.get(self.label, "")
        if self.op == "=":
            return v == self.value
        if self.op == "!=":
            return v != self.value
        hit = getattr(self, "_re").match(v) is not None  # noqa: B009
        return hit if self.op == "=~" else not hit

    def __str__(self) -> str:
        esc = self.value.replace("\\", "\\\\").replace('"', '\\"')
        return f'{self.label}{self.op}"{esc}"'


def parse_matcher(text: str) -> Matcher:
    """``alertname="GpuHot"`` -> Matcher; ValueError on bad syntax or a bad regex."""
    m = _MATCHER_RE.match(text)
    if m is None:
        raise ValueError(f'bad matcher {text!r} (expected label="value", !=, =~ or !~)')
    raw = m.group(3) if m.group(3) is not None else m.group(4)
    value = re.sub(r"\\(.)", r"\1", raw)
    try:
        return Matcher(m.group(1), m.group(2), value)
    except re.error as e:
        raise ValueError(f"bad regex in matcher {text!r}: {e}") from None


@dataclass(frozen=True)
class InhibitRule:
    name: str
    source_matchers: tuple[Matcher, ...] = ()
    target_matchers: tuple[Matcher, ...] = ()
    equal: tuple[str, ...] = ()
    topology: str | None = None     # None | "upstream"

    def source_matches(self, labels: Mapping[str, str]) -> bool:
        return all(m.matches(labels) for m in self.source_matchers)

    def target_matches(self, labels: Mapping[str, str]) -> bool:
        return all(m.matches(labels) for m in self.target_matchers)


class InhibitableAlert(Protocol):
    """What inhibition reads of an alert (suanli.rules.alerts.Alert satisfies it)."""

    @property
    def key(self) -> str: ...
    @property
    def labels(self) -> dict[str, str]: ...
    @property
    def state(self) -> str: ...
    @property
    def entity_id(self) -> str: ...


@dataclass
class InhibitionResult:
    """``kept``: alerts not muted; ``muted``: muted alert key -> the source alert keys that mute it."""

    kept: list[InhibitableAlert] = field(default_factory=list)
    muted: dict[str, list[str]] = field(default_factory=dict)
    muted_alerts: list[InhibitableAlert] = field(default_factory=list)

    @property
    def muted_count(self) -> int:
        return len(self.muted)


def _sources_for(rule: InhibitRule, alerts: Sequence[InhibitableAlert]) -> dict[tuple[str, ...], list[int]]:
    """Firing sources of one rule indexed by their ``equal`` label values (Alertmanager's cache)."""
    index: dict[tuple[str, ...], list[int]] = {}
    for i, a in enumerate(alerts):
        if a.state == "firing" and rule.source_matches(a.labels):
            index.setdefault(tuple(a.labels.get(n, "") for n in rule.equal), []).append(i)
    return index


def apply_inhibitions(alerts: Iterable[InhibitableAlert], rules: Iterable[InhibitRule],
                      dependents: Callable[[str], set[str]] | None = None) -> InhibitionResult:
    """Split alerts into kept and muted (with who muted whom). ``dependents`` is needed for
    ``topology: upstream`` rules (without it such rules mute nothing)."""
    items = list(alerts)
    muted: dict[str, list[str]] = {}
    dep_cache: dict[str, set[str]] = {}
    for rule in rules:
        if rule.topology == "upstream" and dependents is None:
            continue
        index = _sources_for(rule, items)
        if not index:
            continue
        for target in items:
            if target.state == "resolved" or not rule.target_matches(target.labels):
                continue
            two_sided = rule.source_matches(target.labels)
            key = tuple(target.labels.get(n, "") for n in rule.equal)
            for si in index.get(key, ()):
                src = items[si]
                if src.key == target.key or (two_sided and rule.target_matches(src.labels)):
                    continue
                if rule.topology == "upstream":
                    assert dependents is not None
                    if src.entity_id not in dep_cache:
                        dep_cache[src.entity_id] = dependents(src.entity_id)
                    if target.entity_id not in dep_cache[src.entity_id]:
                        continue
                lst = muted.setdefault(target.key, [])
                if src.key not in lst:
                    lst.append(src.key)
    kept = [a for a in items if a.key not in muted]
    return InhibitionResult(kept=kept, muted=muted, muted_alerts=[a for a in items if a.key in muted])
