"""suanli's topology in the exported rules, so Alertmanager inhibits what suanli's evaluator inhibits.

Two halves, both on the ``suanli_*_info`` series suanli writes (suanli.store.remote_write.derived):

- **Relation labels.** An exported alert carries the labels suanli's own alert on that entity carries
  (:meth:`suanli.rules.EntityIndex.labels`). Most come from the exporter's series (``gpu``, ``node``,
  ``switch_port``, ``switch``); a NIC's relations do not, so a NIC rule's expression is joined with
  ``suanli_nic_info`` for its ``switch_port`` and its ``gpu`` (the one GPU whose traffic leaves by
  it). Where the info series is missing the alert still fires, without those labels
  (``... or on(nic) EXPR``).
- **``topology: upstream``.** suanli mutes a target when its entity is downstream of the source's
  (``Topology.dependents``). Between hardware scopes that relation is one label
  (:data:`UPSTREAM_LABEL`): a NIC is downstream of exactly the port its ``switch_port`` names, a
  GPU or NIC of exactly the node (and that node's NVSwitch chips) its ``node`` names, and no other
  pair of hardware scopes is ever downstream. So one Alertmanager rule per (source scope, target
  scope) pair, ``equal`` on that label, inhibits exactly the same alerts. A job depends on many
  entities at once, which no ``equal`` can say: those pairs are named in the notes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from suanli.rules.matchers import InhibitRule

__all__ = ["HARDWARE_SCOPES", "UPSTREAM_LABEL", "upstream_inhibitions", "with_relations"]

_JOINS: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "nic": ("suanli_nic_info", (("switch_port", "switch_port"), ("gpu", "sole_gpu_id"))),
}
"""Scope -> (info series keyed by the scope's label, (alert label, info label) relations to copy)."""

UPSTREAM_LABEL: dict[tuple[str, str], str] = {
    ("switch_port", "nic"): "switch_port",
    ("node", "gpu"): "node",
    ("node", "nic"): "node",
    ("node", "nvswitch"): "node",
    ("nvswitch", "gpu"): "node",
}
"""(source scope, target scope) -> the label equal on both exactly when the target is downstream."""

HARDWARE_SCOPES: frozenset[str] = frozenset({"gpu", "nic", "node", "switch_port", "storage", "nvswitch"})
"""Scopes whose entities depend only on the hardware :data:`UPSTREAM_LABEL` names."""


def with_relations(expr: str, scope: str, labels: Sequence[str]) -> str:
    """``expr`` (whose series carry ``labels``) joined with its scope's info series for the
    relation labels suanli's alerts carry; unchanged for scopes without such relations."""
    if scope not in _JOINS or scope not in labels:
        return expr
    info, relations = _JOINS[scope]
    right = info
    for alert_label, info_label in relations:
        if alert_label != info_label:
            right = f'label_replace({right}, "{alert_label}", "$1", "{info_label}", "(.+)")'
    copied = ", ".join(a for a, _ in relations)
    right = f"max by ({scope}, {copied}) ({right})"
    return f"(({expr}) * on({scope}) group_left({copied}) {right}) or on({scope}) ({expr})"


def upstream_inhibitions(rule: InhibitRule, alerts: Sequence[Mapping[str, str]],
                         notes: list[str]) -> list[dict[str, Any]]:
    """Alertmanager ``inhibit_rules`` for a ``topology: upstream`` rule over the exported
    ``alerts`` (their static labels): one per (source scope, target scope) pair that can be
    downstream, ``equal`` on :data:`UPSTREAM_LABEL`; pairs that cannot be said go to ``notes``."""
    src = sorted({a.get("scope", "") for a in alerts if rule.source_matches(a)})
    dst = sorted({a.get("scope", "") for a in alerts if rule.target_matches(a)})
    out: list[dict[str, Any]] = []
    lost: list[str] = []
    for s in src:
        for t in dst:
            label = UPSTREAM_LABEL.get((s, t))
            if label is None:
                if t not in HARDWARE_SCOPES:
                    lost.append(f"{s} -> {t}")
                continue
            equal = [*rule.equal, *([label] if label not in rule.equal else [])]
            out.append({"source_matchers": [*map(str, rule.source_matchers), f'scope="{s}"'],
                        "target_matchers": [*map(str, rule.target_matchers), f'scope="{t}"'],
                        "equal": equal})
    if lost:
        notes.append(f"inhibit rule {rule.name}: topology 'upstream' from {', '.join(lost)} alerts is not "
                     f"expressible in Alertmanager (a job depends on many entities; equal compares one "
                     f"label), left out")
    if not out and not lost:
        notes.append(f"inhibit rule {rule.name}: no exported target can be downstream of an exported "
                     f"source, left out")
    return out
