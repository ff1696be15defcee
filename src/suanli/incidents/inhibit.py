"""Inhibition with Alertmanager's semantics (prometheus/alertmanager ``inhibit/inhibit.go``), plus
inhibition along the inventory topology, over every signal: rule alerts, analysis findings and
Alertmanager webhooks alike.

- A rule mutes a *target* alert when some *source* alert exists such that the source matches
  ``source_matchers``, the target matches ``target_matchers`` and every label in ``equal`` has the
  same value on both (a label missing on both is "" on both, so it counts as equal).
- Only a firing source inhibits: a resolved (or pending) source inhibits nothing.
- An alert never inhibits itself: when the target also matches the source matchers, sources
  that also match the target matchers are skipped (Alertmanager's two-sided-match rule).
- ``topology: upstream`` additionally requires the target's entity to be downstream of the
  source's entity (``downstream(source_entity, target_entity)``: :meth:`Reach.downstream`, the
  same question correlation asks).

Matchers are the rule language's (:mod:`suanli.rules.matchers`). Muted alerts are counted and
kept (``InhibitionResult.muted``: who muted whom), never lost; a muted signal carries the refs
of the signals that muted it (``Signal.muted_by``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from suanli.incidents.model import Signal
from suanli.rules.matchers import InhibitRule

__all__ = ["Downstream", "InhibitableAlert", "InhibitionResult", "apply_inhibitions", "inhibit"]

Downstream = Callable[[str, str], bool]
"""``downstream(source_entity, target_entity)``: whether the target's entity depends on the source's."""


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
                      downstream: Downstream | None = None) -> InhibitionResult:
    """Split alerts into kept and muted (with who muted whom). ``downstream`` is needed for
    ``topology: upstream`` rules (without it such rules mute nothing)."""
    items = list(alerts)
    muted: dict[str, list[str]] = {}
    for rule in rules:
        if rule.topology == "upstream" and downstream is None:
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
                if rule.topology == "upstream" and not (downstream is not None
                                                         and downstream(src.entity_id, target.entity_id)):
                    continue
                lst = muted.setdefault(target.key, [])
                if src.key not in lst:
                    lst.append(src.key)
    kept = [a for a in items if a.key not in muted]
    return InhibitionResult(kept=kept, muted=muted, muted_alerts=[a for a in items if a.key in muted])


@dataclass(frozen=True)
class _View:
    """A signal as inhibition reads it (Alertmanager's alert: key, labels, state, entity)."""

    key: str
    labels: dict[str, str]
    state: str
    entity_id: str


def inhibit(signals: Sequence[Signal], rules: Sequence[InhibitRule],
            downstream: Downstream | None = None) -> list[Signal]:
    """The inhibition stage: every signal but symptoms (they are a finding's own projection) is a
    source and a target; each muted one comes back with ``muted_by`` set to the refs of the
    signals that muted it. Nothing is dropped: the result has the input's signals, in order."""
    views = [_View(s.ref, dict(s.labels), s.state, s.entity_id) for s in signals if s.source != "symptom"]
    if not views or not rules:
        return list(signals)
    muted = apply_inhibitions(views, rules, downstream).muted
    return [dataclasses.replace(s, muted_by=tuple(muted[s.ref])) if s.source != "symptom" and s.ref in muted
            else s for s in signals]

