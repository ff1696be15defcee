"""Turn analysis findings, rule alerts and Alertmanager webhooks into :class:`Signal`s."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from suanli.analysis.findings import Finding
from suanli.errors import InputError
from suanli.incidents.model import Signal
from suanli.inventory import Inventory
from suanli.rules import RulesConfig
from suanli.store.api import Store
from suanli.timefmt import parse_time, to_rfc3339

__all__ = ["alertmanager_signals", "finding_signals", "read_alert_payloads", "rule_signals",
           "signals_from_alerts"]


def finding_signals(findings: Iterable[Finding]) -> list[Signal]:
    """Each finding, and each of its symptoms (where the fault shows) as a symptom signal."""
    out: list[Signal] = []
    for f in findings:
        out.append(Signal("finding", f.category, f.entity_kind, f.entity_id, f.start, f.end,
                          f.detected_at, f.category,
                          f.confidence, tuple(f.evidence), finding=f))
        for s in f.symptoms:
            out.append(Signal("symptom", f"{f.category}:{s.what}", s.entity_kind, s.entity_id, s.ts,
                              f.end, s.ts, None, f.confidence, (), direct=False, finding=f))
    return out


def signals_from_alerts(alerts: Iterable[Any], muted: Mapping[str, Any] | None = None,
                        decisions: Mapping[str, list[dict[str, Any]]] | None = None,
                        indirect_rules: frozenset[str] = frozenset()) -> list[Signal]:
    """Rule alerts that fired (``suanli.rules.alerts.Alert``) as signals; inhibited ones are kept
    (they count in their incident) and flagged with the label ``muted=true``. ``decisions`` are
    the action runner's audit records per alert key (status dry_run, blocked_by_guard, ...).
    Alerts of ``indirect_rules`` (rules that only read analysis outputs such as
    ``straggler_score``) restate an analysis's view and carry no evidence of their own: they join
    incidents but never seed one — the analysis's own finding does that."""
    muted = muted or {}
    decisions = decisions or {}
    out: list[Signal] = []
    for a in alerts:
        if a.fired_at is None:
            continue
        labels = dict(a.labels)
        if a.key in muted:
            labels["muted"] = "true"
        acts = tuple({"action": r["action"], "target": r["target"], "status": r["decision"]}
                     for r in decisions.get(a.key, []))
        out.append(Signal("rule", a.name, a.entity_kind, a.entity_id, a.active_at, a.resolved_at,
                          a.fired_at, a.category, 0.6 if a.category else 0.3,
                          (f"rule {a.rule} fired on {a.entity_id} at {to_rfc3339(a.fired_at)} "
                           f"(value {a.value:.4g})",),
                          tuple(sorted(labels.items())),
                          direct=a.category is not None and a.rule not in indirect_rules, actions=acts))
    return out


def rule_signals(store: Store, inventory: Inventory, values: dict[str, dict[str, float]],
                 window: tuple[float, float], rules_path: Path | None,
                 config: RulesConfig | None = None) -> list[Signal]:
    """Evaluate the rule pack over the window; fired alerts become signals. Their planned actions
    go through the action runner in dry run (diagnose never acts), so the guard's and the
    deduplication's decisions show as each action's status."""
    from suanli.rules import ActionRunner, EntityIndex, apply_inhibitions, evaluate_window, load_rules

    ruleset = load_rules(rules_path)
    index = EntityIndex.from_inventory(inventory)
    alerts = evaluate_window(ruleset, store, index, window[0], window[1], values=values, config=config)
    fired = sorted((a for a in alerts if a.fired_at is not None), key=lambda a: (a.fired_at, a.key))
    result = apply_inhibitions(fired, ruleset.inhibit_rules, dependents=inventory.topology.dependents)
    runner = ActionRunner.from_ruleset(ruleset, index, dry_run=True)
    decisions: dict[str, list[dict[str, Any]]] = {}
    for record in runner.handle([a for a in fired if a.key not in result.muted]):
        decisions.setdefault(str(record["alert"]), []).append(record)
    indirect = frozenset(r.name for r in ruleset.rules if all(c.kind == "analysis" for c in r.conditions))
    return signals_from_alerts(fired, result.muted, decisions, indirect)


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
        out.append(Signal("alertmanager", labels.get("alertname", "alert"), kind, eid, start, end, start,
                          labels.get("category"), 0.5, (str(summary),), tuple(sorted(labels.items())),
                          direct="category" in labels))
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


def read_alert_payloads(path: Path | None) -> tuple[dict[str, Any], ...]:
    """Alertmanager webhook payloads from a file: one JSON object, a list, or JSON lines."""
    if path is None:
        return ()
    try:
        text = path.read_text()
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror}") from None
    try:
        doc = json.loads(text)
        items = doc if isinstance(doc, list) else [doc]
    except json.JSONDecodeError:
        items = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    items.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise InputError(f"not JSON: {exc.msg}", file=str(path), line=n) from None
    for n, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("alerts"), list):
            raise InputError(f"payload {n}: expected an Alertmanager webhook object with an 'alerts' list",
                             file=str(path))
    return tuple(items)
