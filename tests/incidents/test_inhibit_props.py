"""Inhibition against a direct reading of Alertmanager's rule (inhibit/inhibit.go, ``Mutes`` and
``hasEqual``), written here from the documentation, not from suanli's code:

    target t is muted by rule r  <=>  t is not resolved, t matches r's target matchers, and some
    source s exists with: s firing; s matches r's source matchers; every label in r.equal has the
    same value on s and t (missing = ""); s is not t; and not (t matches r's source matchers and
    s matches r's target matchers) (the two-sided exclusion); for ``topology: upstream`` rules
    also downstream(s.entity, t.entity).

Matchers are read directly too: ``=``/``!=`` compare the value (missing label = ""), ``=~``/``!~``
are fully anchored regexes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from suanli.incidents.inhibit import apply_inhibitions
from suanli.rules import InhibitRule, parse_matcher
from tests.conftest import examples

LABELS = ("alertname", "gpu", "sev")
VALUES = ("a", "b", "")
ENTITIES = ("e0", "e1", "e2")


@dataclass(frozen=True)
class _Alert:
    key: str
    labels: dict[str, str]
    state: str
    entity_id: str


def _matches(text: str, labels: dict[str, str]) -> bool:
    m = re.fullmatch(r'(\w+)(=~|!~|!=|=)"(.*)"', text)
    assert m is not None
    name, op, value = m.groups()
    v = labels.get(name, "")
    if op == "=":
        return v == value
    if op == "!=":
        return v != value
    hit = re.fullmatch(value, v) is not None
    return hit if op == "=~" else not hit


def _all(texts: list[str], labels: dict[str, str]) -> bool:
    return all(_matches(t, labels) for t in texts)


matcher = st.builds(lambda n, op, v: f'{n}{op}"{v}"', st.sampled_from(LABELS),
                    st.sampled_from(["=", "!=", "=~", "!~"]), st.sampled_from(["a", "b", "", "a|b", ".*"]))
alert = st.builds(lambda labels, state, ent: (labels, state, ent),
                  st.dictionaries(st.sampled_from(LABELS), st.sampled_from(VALUES[:2]), max_size=3),
                  st.sampled_from(["firing", "firing", "pending", "resolved"]), st.sampled_from(ENTITIES))
rule = st.tuples(st.lists(matcher, max_size=2), st.lists(matcher, max_size=2),
                 st.lists(st.sampled_from(LABELS), max_size=2, unique=True),
                 st.sampled_from([None, "upstream"]))
edges = st.sets(st.tuples(st.sampled_from(ENTITIES), st.sampled_from(ENTITIES)), max_size=5)


@settings(max_examples=examples(300), deadline=None, derandomize=True)
@given(st.lists(alert, min_size=1, max_size=6), st.lists(rule, min_size=1, max_size=3), edges)
def test_inhibition_is_alertmanagers_rule(raw: list[tuple[dict[str, str], str, str]],
                                          raw_rules: list[tuple[list[str], list[str], list[str], str | None]],
                                          down: set[tuple[str, str]]) -> None:
    alerts = [_Alert(f"k{i}", labels, state, ent) for i, (labels, state, ent) in enumerate(raw)]
    rules = [InhibitRule(f"r{i}", tuple(parse_matcher(m) for m in src), tuple(parse_matcher(m) for m in tgt),
                         tuple(eq), topo) for i, (src, tgt, eq, topo) in enumerate(raw_rules)]

    def downstream(a: str, b: str) -> bool:
        return (a, b) in down

    expected: dict[str, set[str]] = {}
    for r, (src_m, tgt_m, eq, topo) in zip(rules, raw_rules, strict=True):
        del r
        for t in alerts:
            if t.state == "resolved" or not _all(tgt_m, t.labels):
                continue
            for s in alerts:
                if (s.state == "firing" and _all(src_m, s.labels) and s.key != t.key
                        and all(s.labels.get(n, "") == t.labels.get(n, "") for n in eq)
                        and not (_all(src_m, t.labels) and _all(tgt_m, s.labels))
                        and (topo is None or downstream(s.entity_id, t.entity_id))):
                    expected.setdefault(t.key, set()).add(s.key)
    got = apply_inhibitions(alerts, rules, downstream)
    assert {k: set(v) for k, v in got.muted.items()} == expected
    assert [a.key for a in got.kept] == [a.key for a in alerts if a.key not in expected]
    assert got.muted_count == len(expected)
    # without a topology, upstream rules mute nothing
    plain = apply_inhibitions(alerts, rules)
    assert set(plain.muted) <= set(expected)


def test_the_stage_mutes_signals_but_never_symptoms() -> None:
    from suanli.incidents.inhibit import inhibit
    from suanli.incidents.model import Signal

    def sig(source: str, name: str, ref: str) -> Signal:
        return Signal(source, name, "gpu", "g0", 0.0, labels=(("alertname", name), ("gpu", "g0")), ref=ref)

    rule = InhibitRule("r", (parse_matcher('alertname="hot"'),), (parse_matcher('alertname="low"'),), ("gpu",))
    signals = [sig("rule", "hot", "a1"), sig("rule", "low", "a2"), sig("symptom", "low", "s1"),
               sig("symptom", "hot", "s2")]
    got = inhibit(signals, [rule])
    # a2 (low on g0) is muted by a1 (hot on g0); the symptom s1 matches the target too but is a
    # finding's projection, never muted, and the symptom s2 mutes nothing (a2 only names a1)
    assert [(s.ref, s.muted_by) for s in got] == [("a1", ()), ("a2", ("a1",)), ("s1", ()), ("s2", ())]
    assert inhibit(signals, []) == signals
