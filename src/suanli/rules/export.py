"""Export a RuleSet to a Prometheus rule file and an Alertmanager configuration.

Each function returns ``(text, notes)``: ``notes`` names every rule, condition or inhibition that
PromQL / Alertmanager cannot express (analysis outputs, event counts from logs, joins across
exporters with different labels, a topology inhibition whose source does not name its entity) or
expresses only approximately; the CLI prints them on stderr, nothing is dropped silently.

Translation (docs/rules.md, "Export"):

- ``m OP x``              -> ``METRIC OP x``
- ``m OP x/min``          -> ``rate(METRIC[1m]) * 60 OP x`` (``/h``, ``/day``: ``rate(METRIC[1h])``)
- ``crc_ratio OP x``      -> ``rate(crc[1m]) / rate(packets[1m]) OP x``
- ``sudden_increase(m,k)``-> ``rate(M[5m]) > k * rate(M[1h] offset 5m) and rate(M[5m]) > floor``
- ``for D``               -> ``for: D`` (a rule with different ``for`` per condition gets the longest)
- every expression is wrapped in ``label_replace``/``label_join`` so its alerts carry suanli's
  canonical labels (``gpu="node-001/gpu0"``, ``node``, ``nic``, ``switch_port``), the labels the
  exported ``inhibit_rules`` compare; ``all:`` joins with ``and on(<scope label>)``, ``any:`` with ``or``;
  a NIC or job rule's expression also joins an info series for its relations, and ``topology:
  upstream`` becomes ``equal`` on them or inhibitor twins (suanli.rules.export_topology).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from suanli.rules.condition_data import RulesConfig
from suanli.rules.conditions import Condition
from suanli.rules.export_topology import (
    INHIBITOR,
    INHIBITOR_RECEIVER,
    inhibitor_rules,
    upstream_inhibitions,
    with_relations,
)
from suanli.rules.language import Rule, RuleSet
from suanli.rules.names import DERIVED, METRICS

__all__ = ["condition_promql", "prom_duration", "to_alertmanager", "to_prometheus"]


def prom_duration(seconds: float) -> str:
    """Seconds -> a Prometheus duration (``300`` -> ``5m``, ``90`` -> ``90s``)."""
    s = round(seconds)
    for unit, n in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= n and s % n == 0:
            return f"{s // n}{unit}"
    return f"{s}s"


def _num(x: float) -> str:
    return repr(float(x)) if not float(x).is_integer() else str(int(x))


_CANON: dict[tuple[str, ...], tuple[str, tuple[str, ...]]] = {
    ("Hostname", "gpu"): ('label_join(label_replace({e}, "node", "$1", "Hostname", "(.*)"), '
                          '"gpu", "/gpu", "Hostname", "gpu")', ("gpu", "node")),
    ("node", "pci_bus_id"): ("{e}", ("node",)),
    ("node", "nic"): ('label_join({e}, "nic", "/", "node", "nic")', ("nic", "node")),
    ("instance", "device"): ('label_join(label_replace({e}, "node", "$1", "instance", "([^:]+)(?::.*)?"), '
                             '"nic", "/", "node", "device")', ("nic", "node")),
    ("switch", "port"): ('label_join({e}, "switch_port", "/", "switch", "port")', ("switch_port", "switch")),
    ("storage",): ("{e}", ("storage",)),
    ("sla_id",): ("{e}", ("sla_id",)),
}


def condition_promql(cond: Condition, config: RulesConfig | None = None) -> tuple[str, tuple[str, ...]] | str:
    """PromQL for one condition and the canonical labels its series carry, or why it cannot be."""
    cfg = config or RulesConfig()
    if cond.kind == "analysis":
        return f"{cond.name} is an analysis output (not a metric)"
    if cond.kind == "event":
        return _xid_promql(cond, cfg)
    name = DERIVED[cond.name][0] if cond.kind == "ratio" else cond.name
    mdef = METRICS[name]
    m = mdef.metric
    if cond.kind == "metric":
        expr = f"{m} {cond.op} {_num(cond.threshold)}"
    elif cond.kind == "rate":
        assert cond.per_s is not None
        win = prom_duration(cfg.rate_window_s if cond.per_s <= 60 else cfg.rate_window_long_s)
        expr = f"rate({m}[{win}]) * {_num(cond.per_s)} {cond.op} {_num(cond.threshold)}"
    elif cond.kind == "ratio":
        den = METRICS[DERIVED[cond.name][1]].metric
        win = prom_duration(cfg.rate_window_s)
        expr = f"rate({m}[{win}]) / rate({den}[{win}]) {cond.op} {_num(cond.threshold)}"
    else:
        short, base = prom_duration(cfg.sudden_short_s), prom_duration(cfg.sudden_baseline_s)
        k = cond.factor if cond.factor is not None else cfg.sudden_factor
        expr = (f"rate({m}[{short}]) > {_num(k)} * rate({m}[{base}] offset {short}) "
                f"and rate({m}[{short}]) > {_num(cfg.sudden_min_rate_per_s)}")
    wrap, labels = _CANON[mdef.prom_labels]
    return wrap.format(e=f"({expr})"), labels


XID_APPROX = "approximated by DCGM_FI_DEV_XID_ERRORS (the last Xid code DCGM saw, sampled)"


def _xid_promql(cond: Condition, cfg: RulesConfig) -> tuple[str, tuple[str, ...]] | str:
    """``xid(C, ...) >= 1 within W`` -> the DCGM last-Xid gauge showed one of the codes within W."""
    at_least_one = (cond.op == ">=" and cond.threshold == 1) or (cond.op == ">" and cond.threshold == 0)
    if cond.name != "xid" or not cond.codes or not at_least_one:
        return f"{cond.name} counts log events (not a metric)"
    gauge = METRICS["xid_last"].metric
    window = prom_duration(cond.within_s if cond.within_s is not None else cfg.event_window_s)
    hit = " or ".join(f"{gauge} == {c}" for c in cond.codes)
    expr = f"count_over_time(({hit})[{window}:{prom_duration(cfg.eval_interval_s)}]) >= 1"
    wrap, labels = _CANON[METRICS["xid_last"].prom_labels]
    return wrap.format(e=f"({expr})"), labels


def _rule_expr(rule: Rule, cfg: RulesConfig, notes: list[str]) -> tuple[str, list[str]] | None:
    """The rule's PromQL and the labels its series carry, or None (and why, in ``notes``)."""
    parts: list[tuple[str, tuple[str, ...]]] = []
    for c in rule.conditions:
        got = condition_promql(c, cfg)
        if isinstance(got, str):
            if rule.mode == "all":
                notes.append(f"rule {rule.name} not exported: condition {c.text!r}: {got}")
                return None
            notes.append(f"rule {rule.name}: condition {c.text!r} left out of the export: {got}")
            continue
        if c.kind == "event":
            notes.append(f"rule {rule.name}: condition {c.text!r} {XID_APPROX}")
        parts.append(got)
    if not parts:
        notes.append(f"rule {rule.name} not exported: no condition can be written in PromQL")
        return None
    common = sorted(set.intersection(*(set(p[1]) for p in parts)))
    if rule.mode == "any" or len(parts) == 1:
        return with_relations(" or ".join(p[0] for p in parts), rule.scope, common), common
    if rule.scope not in common:
        notes.append(f"rule {rule.name} not exported: its conditions come from exporters whose labels "
                     f"cannot be joined on {rule.scope} in PromQL")
        return None
    return with_relations(f" and on({rule.scope}) ".join(p[0] for p in parts), rule.scope, common), common


def to_prometheus(ruleset: RuleSet, config: RulesConfig | None = None) -> tuple[str, list[str]]:
    """A Prometheus rule file (``promtool check rules`` accepts it) and the notes on what it lacks."""
    cfg = config or RulesConfig()
    notes: list[str] = []
    rules: list[dict[str, Any]] = []
    carried: list[Sequence[str]] = []
    for rule in ruleset.rules:
        got = _rule_expr(rule, cfg, notes)
        if got is None:
            continue
        expr, labels_carried = got
        if rule.held_only:
            notes.append(f"rule {rule.name}: approximated: held_only (GPUs a job holds) is not in the export: "
                         f"Prometheus has no job placement, so the exported rule also fires on idle spare GPUs")
        fors = {c.for_s for c in rule.conditions if c.for_s > 0}
        if len(fors) > 1:
            notes.append(f"rule {rule.name}: per-condition 'for' exported as the rule's longest "
                         f"({prom_duration(rule.for_s)})")
        out: dict[str, Any] = {"alert": rule.name, "expr": expr}
        if rule.for_s > 0:
            out["for"] = prom_duration(rule.for_s)
        if rule.keep_firing_for_s > 0:
            out["keep_firing_for"] = prom_duration(rule.keep_firing_for_s)
        labels = {"severity": rule.severity, "scope": rule.scope}
        if rule.category:
            labels["category"] = rule.category
        out["labels"] = labels
        ann = {"summary": f"{rule.name} ({rule.scope})"}
        if rule.description:
            ann["description"] = rule.description
        if rule.actions:
            ann["suanli_actions"] = ", ".join(a.name for a in rule.actions)
        out["annotations"] = ann
        rules.append(out)
        carried.append(labels_carried)
    rules += inhibitor_rules(ruleset.inhibit_rules, list(zip(rules, carried, strict=True)), notes)
    doc = {"groups": [{"name": "suanli", "interval": prom_duration(cfg.eval_interval_s), "rules": rules}]}
    return yaml.safe_dump(doc, sort_keys=False, width=1000), notes


def _exported_labels(ruleset: RuleSet, cfg: RulesConfig) -> list[dict[str, str]]:
    """The labels of each alert the Prometheus export can raise (its rules that are exported)."""
    out = []
    for rule in ruleset.rules:
        if _rule_expr(rule, cfg, []) is not None:
            out.append({"alertname": rule.name, "severity": rule.severity, "scope": rule.scope,
                        **({"category": rule.category} if rule.category else {})})
    return out


def to_alertmanager(ruleset: RuleSet, receiver: str = "default",
                    config: RulesConfig | None = None) -> tuple[str, list[str]]:
    """An Alertmanager config (``amtool check-config`` accepts it): a default receiver and the
    inhibitions as ``inhibit_rules``. An inhibition whose source matches no alert of the Prometheus
    export would never fire there: it is left out, and the notes say so, as they say what a
    topology inhibition cannot keep."""
    notes: list[str] = []
    inhibit: list[dict[str, Any]] = []
    sources = _exported_labels(ruleset, config or RulesConfig())
    for r in ruleset.inhibit_rules:
        if not any(r.source_matches(labels) for labels in sources):
            notes.append(f"inhibit rule {r.name} left out: its source ({', '.join(map(str, r.source_matchers))}) "
                         f"matches no rule of the Prometheus export, so it could never fire in Alertmanager")
            continue
        if r.topology == "upstream":
            inhibit.extend(upstream_inhibitions(r, sources, notes))
            continue
        item: dict[str, Any] = {"source_matchers": [str(m) for m in r.source_matchers],
                                "target_matchers": [str(m) for m in r.target_matchers]}
        if r.equal:
            item["equal"] = list(r.equal)
        inhibit.append(item)
    route: dict[str, Any] = {"receiver": receiver, "group_by": ["alertname", "scope"]}
    receivers = [{"name": receiver}]
    if any(m.startswith(f"{INHIBITOR}=") for r in inhibit for m in r["source_matchers"]):
        route["routes"] = [{"receiver": INHIBITOR_RECEIVER, "matchers": [f'{INHIBITOR}=~".+"']}]
        receivers.append({"name": INHIBITOR_RECEIVER})
    doc = {"route": route, "receivers": receivers, "inhibit_rules": inhibit}
    return yaml.safe_dump(doc, sort_keys=False, width=1000), notes
