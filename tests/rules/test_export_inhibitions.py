"""The Alertmanager export carries no dead inhibition: one whose source matches no alert of the
Prometheus export is left out, and the notes say so (issue 14)."""

from __future__ import annotations

import yaml

from suanli.rules import load_rules, parse_rules
from suanli.rules.export import to_alertmanager, to_prometheus

TEXT = """\
rules:
  - name: hot
    scope: gpu
    category: gpu_thermal
    conditions: {all: [gpu_temp > 90 for 5m]}
  - name: slow_from_analysis
    scope: gpu
    conditions: {all: [straggler_score > 0.8]}
inhibit_rules:
  - name: hot_mutes_slow
    source_matchers: ['category="gpu_thermal"']
    target_matchers: ['alertname="slow_from_analysis"']
    equal: [node]
  - name: analysis_mutes_hot
    source_matchers: ['alertname="slow_from_analysis"']
    target_matchers: ['alertname="hot"']
    equal: [node]
"""


def test_an_inhibition_whose_source_is_not_exported_is_left_out_and_said() -> None:
    rs = parse_rules(TEXT)
    prom, _ = to_prometheus(rs)
    assert [r["alert"] for r in yaml.safe_load(prom)["groups"][0]["rules"]] == ["hot"]
    text, notes = to_alertmanager(rs)
    inhibit = yaml.safe_load(text)["inhibit_rules"]
    assert inhibit == [{"source_matchers": ['category="gpu_thermal"'],
                        "target_matchers": ['alertname="slow_from_analysis"'], "equal": ["node"]}]
    assert any(n.startswith("inhibit rule analysis_mutes_hot left out") and "matches no rule" in n for n in notes)


def test_the_shipped_pack_drops_the_riser_inhibition_it_cannot_keep() -> None:
    rs = load_rules(None)
    prom, _ = to_prometheus(rs)
    exported = {r["alert"] for r in yaml.safe_load(prom)["groups"][0]["rules"]}
    assert "pcie_riser_fault" not in exported
    text, notes = to_alertmanager(rs)
    sources = [m for r in yaml.safe_load(text)["inhibit_rules"] for m in r["source_matchers"]]
    assert 'alertname="pcie_riser_fault"' not in sources
    assert any("riser_mutes_aer_storm left out" in n for n in notes)
