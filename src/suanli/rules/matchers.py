"""Alertmanager's matchers and the inhibit rules of the rule language (``inhibit_rules:``).

Matchers use Alertmanager's syntax: ``label="v"``, ``label!="v"``, ``label=~"re"``,
``label!~"re"``; regexes are fully anchored; a missing label has the value "". An
:class:`InhibitRule` is data: the incident layer applies it (:mod:`suanli.incidents.inhibit`) and
the exporter writes it as Alertmanager's ``inhibit_rules`` (:mod:`suanli.rules.export`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["InhibitRule", "Matcher", "parse_matcher"]

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
