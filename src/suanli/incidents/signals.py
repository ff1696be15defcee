"""Turn analysis findings, rule alerts and Alertmanager webhooks into :class:`Signal`s, each with
the labels inhibit rules match (Alertmanager's alert model) and a ``ref`` naming what it stands for."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from suanli.analysis.findings import Finding
from suanli.incidents.model import Signal
from suanli.inventory import Inventory
from suanli.rules.alerts import Alert
from suanli.timefmt import parse_time, to_rfc3339

__all__ = ["alertmanager_signals", "finding_ref", "finding_signals", "signals_from_alerts"]

LabelsOf = Callable[[str, str], Mapping[str, str]]
"""``labels_of(kind, entity_id)``: the labels an alert on that entity carries (EntityIndex.labels)."""


def finding_ref(f: Finding) -> str:
    return f"finding:{f.category}@{f.entity_id}#{f.start:.0f}"


def _finding_labels(f: Finding, labels_of: LabelsOf | None) -> tuple[tuple[str, str], ...]:
    """A finding as an alert: named by its category, with its entity's labels."""
    labels = dict(labels_of(f.entity_kind, f.entity_id)) if labels_of is not None else {f.entity_kind: f.entity_id}
    labels.update({"alertname": f.category, "category": f.category, "source": "finding", "analysis": f.source})
    return tuple(sorted(labels.items()))


def finding_signals(findings: Iterable[Finding], labels_of: LabelsOf | None = None) -> list[Signal]:
    """Each finding, and each of its symptoms (where the fault shows) as a symptom signal."""
    out: list[Signal] = []
    for f in findings:
        ref = finding_ref(f)
        out.append(Signal("finding", f.category, f.entity_kind, f.entity_id, f.start, f.end,
                          f.detected_at, f.category, f.confidence, tuple(f.evidence),
                          _finding_labels(f, labels_of), finding=f, ref=ref,
                          state="firing" if f.end is None else "resolved"))
        for s in f.symptoms:
            out.append(Signal("symptom", f"{f.category}:{s.what}", s.entity_kind, s.entity_id, s.ts,
                              f.end, s.ts, None, f.confidence, (), direct=False, finding=f,
                              ref=f"{ref}>{s.entity_id}"))
    return out


def _unit(unit: str) -> str:
    return f" {unit}" if unit else ""


def signals_from_alerts(alerts: Iterable[Alert], indirect_rules: frozenset[str] = frozenset()) -> list[Signal]:
    """Rule alerts that fired as signals (``ref`` is the alert's key). Alerts of ``indirect_rules``
    (rules that only read analysis outputs such as ``straggler_score``) restate an analysis's view
    and carry no evidence of their own: they join incidents but never seed one — the analysis's
    own finding does that."""
    out: list[Signal] = []
    for a in alerts:
        if a.fired_at is None:
            continue
        out.append(Signal("rule", a.name, a.entity_kind, a.entity_id, a.active_at, a.resolved_at,
                          a.fired_at, a.category, 0.6 if a.category else 0.3,
                          (f"rule {a.rule} fired on {a.entity_id} at {to_rfc3339(a.fired_at)} "
                           f"(value {a.value:.4g}{_unit(a.unit)})",),
                          tuple(sorted(a.labels.items())),
                          direct=a.category is not None and a.rule not in indirect_rules, ref=a.key,
                          state="resolved" if a.state == "resolved" else "firing"))
    return out


def alertmanager_signals(payload: Mapping[str, Any], inventory: Inventory) -> list[Signal]:
    """Alerts of an Alertmanager webhook (version 4 payload) anchored to canonical entities.

    The entity comes from the labels the inventory can resolve: ``gpu``/``UUID`` with
    ``Hostname``/``instance``, ``device`` (a NIC), ``switch``+``port``, ``storage``, ``job``; an
    alert none of them resolves is anchored to its cluster and kept.
    """
    out: list[Signal] = []
    for alert in payload.get("alerts", []) or []:
        labels = {str(k): str(v) for k, v in (alert.get("labels") or {}).items()}
        kind, eid = _anchor(labels, inventory)
        start = parse_time(alert["startsAt"]) if alert.get("startsAt") else 0.0
        ends = alert.get("endsAt")
        end = parse_time(ends) if ends and not str(ends).startswith("0001") else None
        if alert.get("status") == "firing":
            end = None
        summary = (alert.get("annotations") or {}).get("summary") or labels.get("alertname", "alert")
        name = labels.get("alertname", "alert")
        ref = str(alert.get("fingerprint") or f"alertmanager:{name}@{eid}#{start:.0f}")
        out.append(Signal("alertmanager", name, kind, eid, start, end, start,
                          labels.get("category"), 0.5, (str(summary),), tuple(sorted(labels.items())),
                          direct="category" in labels, ref=ref,
                          state="resolved" if alert.get("status") == "resolved" else "firing"))
    return out


def _anchor(labels: Mapping[str, str], inv: Inventory) -> tuple[str, str]:
    r = inv.resolver
    host = labels.get("Hostname") or labels.get("node") or labels.get("instance", "").split(":")[0]
    node = r.node(host) if host else None
    gpu = None
    if labels.get("UUID"):
        gpu = r.gpu(uuid=labels["UUID"])
    if gpu is None and node and labels.get("gpu", "").isdigit():
        gpu = r.gpu(host=node, index=int(labels["gpu"]))
    if gpu:
        return "gpu", gpu
    if labels.get("switch") and labels.get("port"):
        port = r.port(labels["switch"], labels["port"])
        if port:
            return "switch_port", port
    if node and labels.get("device"):
        nic = r.nic(host=node, device=labels["device"])
        if nic:
            return "nic", nic
    if labels.get("storage") in inv.storage:
        return "storage", labels["storage"]
    if labels.get("job") in inv.jobs:
        return "job", labels["job"]
    if node:
        return "node", node
    return "cluster", inv.cluster
