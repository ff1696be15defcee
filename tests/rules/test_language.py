"""The rule language: every docs/rules.md example parses; bad files give file, line and what is valid."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from suanli.errors import InputError
from suanli.rules import load_rules, parse_condition, parse_duration, parse_rules
from suanli.rules.names import METRICS

DOC = Path(__file__).resolve().parents[2] / "docs" / "rules.md"


def _yaml_blocks() -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def test_docs_has_examples() -> None:
    assert len(_yaml_blocks()) >= 3


@pytest.mark.parametrize("block", _yaml_blocks() if DOC.exists() else [])
def test_every_doc_example_parses(block: str) -> None:
    rs = parse_rules(block, "docs/rules.md")
    assert rs.rules


def test_doc_example_meanings() -> None:
    rs = parse_rules(_yaml_blocks()[0])
    (r,) = rs.rules
    assert (r.name, r.scope, r.mode, r.severity, r.category) == ("pcie_riser_fault", "gpu", "all", "critical",
                                                                 "pcie_riser")
    temp, aer, sudden = r.conditions
    assert (temp.kind, temp.name, temp.op, temp.threshold, temp.for_s) == ("metric", "gpu_temp", ">", 85, 300)
    assert (aer.kind, aer.per_s, aer.threshold) == ("rate", 60, 100)
    assert (sudden.kind, sudden.name, sudden.factor) == ("sudden", "rdma_retransmits", 10)
    assert [(a.name, a.params) for a in r.actions] == [("mark_degraded", {}), ("open_ticket", {"text": "replace riser card"}),
                                                       ("reschedule_job", {})]
    acts = parse_rules(_yaml_blocks()[1])
    assert (acts.actions.dry_run, acts.actions.dedup_window_s, acts.actions.rate_limit_window_s) == (False, 3600, 600)
    assert acts.executors["reschedule_job"].settings == {"job_ids": {"llama-70b": "4242"}}


@pytest.mark.parametrize(("text", "seconds"), [("30s", 30), ("5m", 300), ("1h30m", 5400), ("24h", 86400),
                                                ("1d", 86400), ("500ms", 0.5)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


def test_events_defaults() -> None:
    c = parse_condition("xid(79)")
    assert (c.kind, c.name, c.codes, c.op, c.threshold, c.within_s) == ("event", "xid", (79,), ">=", 1, 3600)
    c = parse_condition("xid(48, 63) >= 2 within 24h")
    assert (c.codes, c.threshold, c.within_s) == ((48, 63), 2, 86400)
    assert parse_condition("oom").name == "cuda_oom"


GOOD = """rules:
  - name: r
    scope: gpu
    conditions:
      all:
        - gpu_temp > 85 for 5m
"""

BAD = [
    # (case, text, line, message fragment)
    ("unknown metric lists valid names", GOOD.replace("gpu_temp", "gpu_tmp"), 6,
     "unknown metric 'gpu_tmp'.*valid names: .*gpu_temp.*pcie_aer_errors"),
    ("bad comparison", GOOD.replace(">", "=>"), 6, "cannot parse condition.*comparisons: >= <= == != > <"),
    ("bad duration", GOOD.replace("5m", "5 minutes"), 6, "cannot parse condition|bad duration"),
    ("bad duration unit", GOOD.replace("5m", "5x"), 6, "bad duration '5x'"),
    ("unknown scope", GOOD.replace("scope: gpu", "scope: rack"), 3,
     "unknown scope 'rack'; valid scopes: gpu, node, nvswitch, nic, switch_port, storage, job"),
    ("unknown action", GOOD + "    actions: [reboot]\n", 7, "unknown action 'reboot'; valid actions: mark_degraded"),
    ("YAML syntax error", GOOD.replace("- name: r", "- name: [r"), 3, "YAML syntax error"),
    ("rate of a gauge", GOOD.replace("85 for 5m", "85/min"), 6, "gauge"),
    ("missing comparison", GOOD.replace("gpu_temp > 85 for 5m", "gpu_temp"), 6, "missing comparison"),
    ("conditions not all/any", GOOD.replace("all:", "every:"), 5, "'all:' or 'any:'"),
    ("missing name", GOOD.replace("- name: r\n    scope", "- scope"), 2, "missing 'name'"),
    ("duplicate rule", GOOD + GOOD.split("rules:\n")[1], 7, "duplicate rule name 'r'"),
    ("bad matcher", GOOD + "inhibit_rules:\n  - source_matchers: ['alertname==x']\n", 8, "bad matcher"),
    ("unknown executor kind", GOOD + "executors:\n  notify: {kind: pager}\n", 8, "kind' must be one of"),
    ("unknown actions key", GOOD + "actions:\n  dryrun: true\n", 8, "unknown key 'dryrun'"),
    ("misspelt rule key", GOOD + "    serverity: critical\n", 7, "unknown key 'serverity'; valid keys: name, scope"),
    ("misspelt top key", GOOD + "inhibit:\n  - {}\n", 8, "unknown key 'inhibit'; valid keys: rules, inhibit_rules"),
    ("sudden on a gauge", GOOD.replace("gpu_temp > 85 for 5m", "sudden_increase(gpu_temp)"), 6,
     "needs a counter metric"),
]


@pytest.mark.parametrize(("case", "text", "line", "msg"), BAD, ids=[b[0] for b in BAD])
def test_bad_files(case: str, text: str, line: int, msg: str) -> None:
    with pytest.raises(InputError) as ei:
        parse_rules(text, "my_rules.yaml")
    err = ei.value
    assert (err.file, err.line) == ("my_rules.yaml", line), str(err)
    assert str(err).startswith(f"my_rules.yaml:{line}: ")
    assert re.search(msg, str(err)), str(err)
    assert "\n" not in str(err)


def test_load_rules_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read rule file"):
        load_rules(tmp_path / "nope.yaml")


def test_default_pack_loads_and_covers_the_seed_cases() -> None:
    rs = load_rules(None)
    names = {r.name for r in rs.rules}
    assert {"pcie_riser_fault", "gpu_sbe_dbe_risk", "gpu_fallen_off_bus", "gpu_memory_xid", "gpu_over_temperature",
            "nvlink_bandwidth_low", "switch_port_crc_ratio_high", "switch_port_crc_sudden", "port_pre_fec_ber_high",
            "nic_link_downed", "nccl_collective_timeout", "cuda_out_of_memory", "storage_latency_high",
            "gpu_straggler", "gpu_util_low", "sla_latency_high"} <= names
    riser = next(r for r in rs.rules if r.name == "pcie_riser_fault")
    assert [c.text for c in riser.conditions] == ["gpu_temp > 85 for 5m", "pcie_aer_errors > 100/min",
                                                  "sudden_increase(rdma_retransmits)"]
    assert rs.actions.dry_run is True
    xids = {c for r in rs.rules for cond in r.conditions for c in cond.codes}
    assert {48, 63, 64, 94, 95, 79} <= xids
    assert len(rs.inhibit_rules) >= 5


def test_every_metric_has_unit_and_kind() -> None:
    for name, m in METRICS.items():
        assert m.unit and m.scope and m.metric and m.prom_labels, name
