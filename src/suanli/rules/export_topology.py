"""suanli's topology in the exported rules, so Alertmanager inhibits what suanli's evaluator inhibits.

Three parts, all on the ``suanli_*_info`` series suanli writes (suanli.store.remote_write.derived):

- **Relation labels.** An exported alert carries the labels suanli's own alert on that entity carries
  (:meth:`suanli.rules.EntityIndex.labels`). Most come from the exporter's series (``gpu``, ``node``,
  ``switch_port``, ``switch``); a NIC's relations do not, so a NIC rule's expression is joined with
  ``suanli_nic_info`` for its ``switch_port`` and its ``gpu`` (the one GPU whose traffic leaves by
  it), a job (SLA) rule's with ``suanli_job_info`` for its ``job_id``. Where the info series is
  missing the alert still fires, without those labels (``... or on(nic) EXPR``).
- **``topology: upstream``.** suanli mutes a target when its entity is downstream of the source's
  (``Topology.dependents``). Between hardware scopes that relation is one label
  (:data:`UPSTREAM_LABEL`): a NIC is downstream of exactly the port its ``switch_port`` names, a
  GPU or NIC of exactly the node (and that node's NVSwitch chips) its ``node`` names, and no other
  pair of hardware scopes is ever downstream. So one Alertmanager rule per (source scope, target
  scope) pair, ``equal`` on that label, inhibits exactly the same alerts.
- **Onto a job.** A job depends on many entities at once, which no ``equal`` can say. So each
  exported source rule gets an *inhibitor* twin (alert ``suanli_inhibitor``): the same expression,
  ``for`` and ``keep_firing_for``, joined with ``suanli_job_dependency_info`` so it fires once per
  (entity, job behind the entity), labelled ``job_id``; job alerts get their ``job_id`` from
  ``suanli_job_info``, and the Alertmanager rule mutes a job alert while an inhibitor of its
  ``job_id`` fires. Inhibitors carry ``suanli_inhibitor=<inhibit rule>`` and are routed to a
  receiver that notifies nobody (:data:`INHIBITOR_RECEIVER`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from suanli.rules.matchers import InhibitRule

__all__ = ["HARDWARE_SCOPES", "INHIBITOR", "INHIBITOR_RECEIVER", "UPSTREAM_LABEL", "inhibitor_rules",
           "upstream_inhibitions", "with_relations"]

_JOINS: dict[str, tuple[str, str, tuple[tuple[str, str], ...]]] = {
    "nic": ("suanli_nic_info", "nic", (("switch_port", "switch_port"), ("gpu", "sole_gpu_id"))),
    "job": ("suanli_job_info", "sla_id", (("job_id", "job_id"),)),
}
"""Scope -> (info series, the label both are keyed by, (alert label, info label) relations to copy)."""

INHIBITOR = "suanli_inhibitor"
"""The alert name of the inhibitor twins, and their label naming the inhibit rule they serve."""
INHIBITOR_RECEIVER = "suanli-inhibitors"
"""The receiver (no integrations) the inhibitors are routed to."""

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
    if scope not in _JOINS or _JOINS[scope][1] not in labels:
        return expr
    info, key, relations = _JOINS[scope]
    right = info
    for alert_label, info_label in relations:
        if alert_label != info_label:
            right = f'label_replace({right}, "{alert_label}", "$1", "{info_label}", "(.+)")'
    copied = ", ".join(a for a, _ in relations)
    # one info series per key even while a changed relation's old series is still in the lookback
    # (two would make the join an error, and every alert of the rule would vanish)
    right = f"topk by ({key}) (1, max by ({key}, {copied}) ({right}))"
    return f"(({expr}) * on({key}) group_left({copied}) {right}) or on({key}) ({expr})"


def _onto_jobs(rule: InhibitRule, alerts: Sequence[Mapping[str, str]]) -> bool:
    """Whether an upstream rule targets some exported job alert."""
    return rule.topology == "upstream" and any(a.get("scope") == "job" and rule.target_matches(a) for a in alerts)


def inhibitor_rules(inhibit_rules: Sequence[InhibitRule], exported: Sequence[tuple[dict[str, Any], Sequence[str]]],
                    notes: list[str]) -> list[dict[str, Any]]:
    """The inhibitor twins of the exported rules (``(rule dict, labels its series carry)``) that
    are sources of an upstream rule onto job alerts; a source whose series do not name its entity
    gets none, and the notes say so."""
    statics = [_static(item) for item, _ in exported]
    out: list[dict[str, Any]] = []
    for r in inhibit_rules:
        if not _onto_jobs(r, statics):
            continue
        for (item, labels), static in zip(exported, statics, strict=True):
            scope = static["scope"]
            if scope not in HARDWARE_SCOPES or not r.source_matches(static):
                continue
            if scope not in labels:
                notes.append(f"rule {item['alert']}: its series carry no {scope} label, so in Alertmanager it "
                             f"cannot mute the job alerts behind its {scope} (inhibit rule {r.name})")
                continue
            deps = (f'label_replace(suanli_job_dependency_info{{entity_kind="{scope}"}}, "{scope}", "$1", '
                    f'"entity", "(.+)")')
            kept = ", ".join(dict.fromkeys([scope, *r.equal]))
            source = f"max by ({kept}) ({item['expr']})"          # one series per entity, as suanli's alerts
            twin: dict[str, Any] = {"alert": INHIBITOR,
                                    "expr": f"{deps} * on({scope}) group_left({', '.join(r.equal)}) {source}"}
            twin |= {k: item[k] for k in ("for", "keep_firing_for") if k in item}
            twin["labels"] = {INHIBITOR: r.name, "suanli_source": item["alert"]}
            twin["annotations"] = {"summary": f"{item['alert']} inhibits the job alerts behind its {scope} "
                                              f"(inhibit rule {r.name}); routed to no one"}
            out.append(twin)
    return out


def _static(item: Mapping[str, Any]) -> dict[str, str]:
    """The labels every alert of an exported rule carries: its name and its rule labels."""
    return {"alertname": str(item["alert"]), **{k: str(v) for k, v in item["labels"].items()}}


def upstream_inhibitions(rule: InhibitRule, alerts: Sequence[Mapping[str, str]],
                         notes: list[str]) -> list[dict[str, Any]]:
    """Alertmanager ``inhibit_rules`` for a ``topology: upstream`` rule over the exported
    ``alerts`` (their static labels): one per (source scope, target scope) pair that can be
    downstream, ``equal`` on :data:`UPSTREAM_LABEL`; pairs that cannot be said go to ``notes``."""
    src = sorted({a.get("scope", "") for a in alerts if rule.source_matches(a)})
    dst = sorted({a.get("scope", "") for a in alerts if rule.target_matches(a)})
    out: list[dict[str, Any]] = []
    lost: list[str] = []
    if _onto_jobs(rule, alerts) and any(s in HARDWARE_SCOPES for s in src):
        out.append({"source_matchers": [f'{INHIBITOR}="{rule.name}"'],
                    "target_matchers": [*map(str, rule.target_matchers), 'scope="job"'],
                    "equal": [*rule.equal, *(["job_id"] if "job_id" not in rule.equal else [])]})
    for s in src:
        for t in dst:
            label = UPSTREAM_LABEL.get((s, t))
            if label is None:
                if t not in HARDWARE_SCOPES and not (t == "job" and s in HARDWARE_SCOPES):
                    lost.append(f"{s} -> {t}")
                continue
            equal = [*rule.equal, *([label] if label not in rule.equal else [])]
            out.append({"source_matchers": [*map(str, rule.source_matchers), f'scope="{s}"'],
                        "target_matchers": [*map(str, rule.target_matchers), f'scope="{t}"'],
                        "equal": equal})
    if lost:
        notes.append(f"inhibit rule {rule.name}: topology 'upstream' from {', '.join(lost)} alerts is not "
                     f"expressible in Alertmanager, left out")
    if not out and not lost:
        notes.append(f"inhibit rule {rule.name}: no exported target can be downstream of an exported "
                     f"source, left out")
    return out
