"""Inhibition: Alertmanager's semantics case by case (inhibit/inhibit.go), then along the topology."""

from __future__ import annotations

import pytest

from suanli.incidents.inhibit import apply_inhibitions
from suanli.rules import Alert, InhibitRule, parse_matcher


def _a(name: str, entity: str, state: str = "firing", **labels: str) -> Alert:
    return Alert(name=name, rule=name, scope="gpu", entity_kind="gpu", entity_id=entity,
                 labels={"alertname": name, **labels}, state=state, active_at=0.0)


def _rule(src: list[str], tgt: list[str], equal: tuple[str, ...] = (), topology: str | None = None) -> InhibitRule:
    return InhibitRule("r", tuple(parse_matcher(m) for m in src), tuple(parse_matcher(m) for m in tgt), equal,
                       topology)


HOT = ['alertname="hot"']
LOW = ['alertname="low"']

CASES = [
    # (case, alerts, rule, muted alert names)
    ("equal labels equal -> muted", [_a("hot", "g0", gpu="g0"), _a("low", "g0", gpu="g0")],
     _rule(HOT, LOW, ("gpu",)), {"low"}),
    ("equal label differs -> kept", [_a("hot", "g0", gpu="g0"), _a("low", "g1", gpu="g1")],
     _rule(HOT, LOW, ("gpu",)), set()),
    ("equal label missing on both -> equal -> muted", [_a("hot", "g0"), _a("low", "g1")],
     _rule(HOT, LOW, ("gpu",)), {"low"}),
    ("equal label missing on one side -> kept", [_a("hot", "g0", gpu="g0"), _a("low", "g1")],
     _rule(HOT, LOW, ("gpu",)), set()),
    ("resolved source inhibits nothing", [_a("hot", "g0", "resolved"), _a("low", "g0")],
     _rule(HOT, LOW), set()),
    ("pending source inhibits nothing", [_a("hot", "g0", "pending"), _a("low", "g0")],
     _rule(HOT, LOW), set()),
    ("an alert never inhibits itself", [_a("x", "g0", sev="critical")],
     _rule(['sev="critical"'], ['alertname="x"']), set()),
    ("two alerts matching both sides do not mute each other",
     [_a("x", "g0", sev="critical"), _a("x", "g1", sev="critical")],
     _rule(['sev="critical"'], ['sev="critical"']), set()),
    ("a source matching only the source side mutes a two-sided target",
     [_a("x", "g0", sev="critical"), _a("y", "g1", sev="critical", team="a")],
     _rule(['sev="critical"'], ['team="a"']), {"y"}),
    ("regex is fully anchored", [_a("hot", "g0"), _a("low_util", "g0")],
     _rule(HOT, ['alertname=~"low"']), set()),
    ("regex alternatives", [_a("hot", "g0"), _a("low_util", "g0")],
     _rule(HOT, ['alertname=~"low.*|x"']), {"low_util"}),
    ("!= matches a missing label", [_a("hot", "g0"), _a("low", "g0")],
     _rule(HOT, ['sev!="critical"']), {"low"}),
    ("!~ excludes", [_a("hot", "g0"), _a("low", "g0", sev="info")],
     _rule(HOT, ['sev!~"info|warning"']), set()),
]


@pytest.mark.parametrize(("case", "alerts", "rule", "muted"), CASES, ids=[c[0] for c in CASES])
def test_alertmanager_cases(case: str, alerts: list[Alert], rule: InhibitRule, muted: set[str]) -> None:
    res = apply_inhibitions(alerts, [rule])
    assert {a.name for a in res.muted_alerts} == muted
    assert len(res.kept) + res.muted_count == len(alerts)          # counted, never lost


def test_muted_records_who_muted_whom() -> None:
    hot, low = _a("hot", "g0", gpu="g0"), _a("low", "g0", gpu="g0")
    res = apply_inhibitions([hot, low], [_rule(HOT, LOW, ("gpu",))])
    assert res.muted == {low.key: [hot.key]}


def test_a_rule_without_a_firing_source_does_not_stop_the_later_rules() -> None:
    # Every rule is checked on its own (Alertmanager's Mutes loops over all rules): the first rule's
    # source "absent" fires nowhere, so it mutes nothing; the second still mutes low by hot.
    hot, low = _a("hot", "g0"), _a("low", "g0")
    res = apply_inhibitions([hot, low], [_rule(['alertname="absent"'], LOW), _rule(HOT, LOW)])
    assert res.muted == {low.key: [hot.key]}
    # likewise a topology rule skipped for want of a graph (it would mute low by hot too)
    res = apply_inhibitions([hot, low], [_rule(HOT, LOW, topology="upstream"), _rule(HOT, LOW)])
    assert res.muted == {low.key: [hot.key]}


def test_topology_upstream() -> None:
    deps = {"leaf-01/p1": {"n1/mlx5_0", "n1/gpu0", "job-a"}}
    crc = Alert(name="crc", rule="crc", scope="switch_port", entity_kind="switch_port", entity_id="leaf-01/p1",
                labels={"alertname": "crc"}, state="firing", active_at=0.0)
    behind = Alert(name="retx", rule="retx", scope="nic", entity_kind="nic", entity_id="n1/mlx5_0",
                   labels={"alertname": "retx"}, state="firing", active_at=0.0)
    elsewhere = Alert(name="retx", rule="retx", scope="nic", entity_kind="nic", entity_id="n2/mlx5_0",
                      labels={"alertname": "retx"}, state="firing", active_at=0.0)
    rule = _rule(['alertname="crc"'], ['alertname="retx"'], topology="upstream")
    res = apply_inhibitions([crc, behind, elsewhere], [rule], downstream=lambda src, tgt: tgt in deps.get(src, set()))
    assert res.muted == {behind.key: [crc.key]}
    assert [a.key for a in res.kept] == [crc.key, elsewhere.key]
    assert apply_inhibitions([crc, behind], [rule]).muted == {}    # no graph given: the rule mutes nothing


def test_topology_upstream_checks_every_source_of_the_rule() -> None:
    # Two crc sources mute retx at n1/mlx5_0 by labels alone; only p1 carries that NIC (p2 carries
    # nothing). The source not upstream is skipped, and the next one, p1, still mutes the NIC.
    deps = {"leaf-01/p1": {"n1/mlx5_0"}}
    srcs = [Alert(name="crc", rule="crc", scope="switch_port", entity_kind="switch_port", entity_id=port,
                  labels={"alertname": "crc"}, state="firing", active_at=0.0) for port in ("leaf-01/p2", "leaf-01/p1")]
    nic = Alert(name="retx", rule="retx", scope="nic", entity_kind="nic", entity_id="n1/mlx5_0",
                labels={"alertname": "retx"}, state="firing", active_at=0.0)
    rule = _rule(['alertname="crc"'], ['alertname="retx"'], topology="upstream")
    res = apply_inhibitions([*srcs, nic], [rule], downstream=lambda src, tgt: tgt in deps.get(src, set()))
    assert res.muted == {nic.key: [srcs[1].key]}


@pytest.mark.parametrize("text", ['alertname', 'a=="b"', '1a="b"', 'a=~"("'])
def test_bad_matchers(text: str) -> None:
    with pytest.raises(ValueError, match="matcher"):
        parse_matcher(text)


def test_matcher_round_trip() -> None:
    m = parse_matcher('alertname=~"a|b\\"c"')
    assert (m.label, m.op, m.value) == ("alertname", "=~", 'a|b"c')
    assert parse_matcher(str(m)) == m
