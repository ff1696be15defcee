"""The relation labels the exported rules join and the ``equal`` labels topology inhibitions become
(suanli.rules.export_topology) say exactly what suanli's topology says: checked pair by pair
against ``Topology.dependents`` on every public scenario's inventory and one with NVSwitch chips;
``suanli_nic_info`` carries the ``gpu`` suanli's own NIC alerts carry."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from suanli.incidents.reach import Reach
from suanli.inventory import Inventory, load_inventory, parse_inventory
from suanli.rules import EntityIndex, parse_rules
from suanli.rules.export import to_prometheus
from suanli.rules.export_topology import HARDWARE_SCOPES, UPSTREAM_LABEL
from suanli.store.remote_write import info_series
from tests.conftest import need_tool, shared_path

SCENARIOS = ("collective_hang", "healthy", "pcie_riser", "storage_slow", "switch_port_errors")
NVSWITCHES = """
cluster: t
racks:
  - id: r1
    nodes:
      - id: node-001
        gpus:
          - {index: 0, uuid: GPU-a0}
          - {index: 1, uuid: GPU-a1}
        nvswitches:
          - {index: 0}
          - {index: 1}
        nics:
          - {name: mlx5_0, gpu: 0, switch_port: leaf-01/p1}
      - id: node-002
        gpus:
          - {index: 0, uuid: GPU-b0}
        nvswitches:
          - {index: 0}
switches:
  - {id: leaf-01, tier: leaf}
jobs:
  - id: j
    precision: bf16
    parallelism: {dp: 2}
    ranks:
      - {rank: 0, gpu: node-001/gpu0}
      - {rank: 1, gpu: node-002/gpu0}
"""


def _inventory(name: str) -> Inventory:
    if name == "nvswitches":
        return parse_inventory(NVSWITCHES)
    return load_inventory(shared_path("scenarios", name, "inventory.yaml"))


@pytest.mark.parametrize("name", [*SCENARIOS, "nvswitches"])
def test_one_label_says_when_hardware_is_downstream(name: str) -> None:
    inv = _inventory(name)
    idx, reach = EntityIndex.from_inventory(inv), Reach(inv)
    checked = downstream = 0
    for src_scope in sorted(HARDWARE_SCOPES):
        for dst_scope in sorted(HARDWARE_SCOPES):
            label = UPSTREAM_LABEL.get((src_scope, dst_scope))
            for s in idx.of_scope(src_scope):
                mine = idx.labels(src_scope, s).get(label or "")
                for t in idx.of_scope(dst_scope):
                    said = mine is not None and idx.labels(dst_scope, t).get(label or "") == mine
                    assert reach.downstream(s, t) == said, (src_scope, s, dst_scope, t)
                    checked += 1
                    downstream += said
    assert downstream > 0 and checked > downstream


@pytest.mark.parametrize("name", ["pcie_riser", "switch_port_errors"])
def test_a_job_depends_on_several_entities_of_a_scope(name: str) -> None:
    """Why ``topology: upstream`` onto a job goes through inhibitor twins, not ``equal``: no one
    label value on the job's alert can equal each of the GPUs (NICs, ports) it runs on."""
    inv = _inventory(name)
    idx, reach = EntityIndex.from_inventory(inv), Reach(inv)
    for scope in ("gpu", "nic", "switch_port"):
        for job in idx.jobs:
            assert sum(reach.downstream(e, job) for e in idx.of_scope(scope)) >= 2, (scope, job)


@pytest.mark.parametrize("name", [*SCENARIOS, "nvswitches"])
def test_job_dependency_info_is_what_inhibition_asks(name: str) -> None:
    """``suanli_job_dependency_info`` holds (entity, job) exactly when the job is downstream of the
    entity, for every hardware entity the exported rules can alert on."""
    inv = _inventory(name)
    idx, reach = EntityIndex.from_inventory(inv), Reach(inv)
    rows = {(lb["entity_kind"], lb["entity"], lb["job_id"]) for metric, lb, _ in info_series(inv, 0.0)
            if metric == "suanli_job_dependency_info"}
    want = {(scope, e, job) for scope in sorted(HARDWARE_SCOPES) for e in idx.of_scope(scope) for job in idx.jobs
            if reach.downstream(e, job)}
    assert rows == want and want
    jobs = {lb["job_id"]: lb.get("sla_id") for metric, lb, _ in info_series(inv, 0.0) if metric == "suanli_job_info"}
    assert jobs == {j.id: j.sla_id for j in inv.jobs.values()}


@pytest.mark.parametrize("name", ["pcie_riser", "switch_port_errors"])
def test_nic_info_names_the_gpu_suanlis_nic_alerts_carry(name: str) -> None:
    inv = _inventory(name)
    idx = EntityIndex.from_inventory(inv)
    rows = {labels["nic"]: labels for metric, labels, _ in info_series(inv, 0.0) if metric == "suanli_nic_info"}
    assert set(rows) == set(inv.nics)
    for nic, labels in rows.items():
        assert labels.get("sole_gpu_id") == idx.labels("nic", nic).get("gpu"), nic
        assert labels.get("switch_port") == idx.labels("nic", nic).get("switch_port"), nic
    sole = sum("sole_gpu_id" in r for r in rows.values())
    # pcie_riser: 8 NICs per node, one per GPU; switch_port_errors: 4 per node, two GPUs each
    assert sole == (len(inv.nics) if name == "pcie_riser" else 0)


@pytest.mark.integration
def test_a_recabled_nic_still_alerts_with_one_port(tmp_path: Path) -> None:
    """Re-cabled within the lookback, a NIC has two info series (old port, new port) for 5 minutes:
    the exported rule still fires once for it, carrying one of the two ports (promtool)."""
    rs = parse_rules("rules:\n  - name: nic_symbol_errors\n    scope: nic\n    conditions: {all: [symbol_errors > 10/min]}\n")
    text, notes = to_prometheus(rs)
    assert notes == []
    (tmp_path / "rules.yml").write_text(text)
    info = 'suanli_nic_info{{nic="n1/mlx5_0",node="n1",switch_port="{p}",mac="{m}"}}'
    doc = {"rule_files": ["rules.yml"], "evaluation_interval": "15s", "tests": [{
        "interval": "15s",
        "input_series": [
            {"series": 'node_infiniband_symbol_error_total{instance="n1:9100",device="mlx5_0",port="1"}',
             "values": "0+60x20"},                              # 4 errors/s: 240/min > 10/min
            {"series": info.format(p="leaf-01/p1", m="aa"), "values": "1x20"},
            {"series": info.format(p="leaf-01/p2", m="bb"), "values": "1x20"}],
        "promql_expr_test": [{"expr": 'count by (nic) (ALERTS{alertname="nic_symbol_errors", alertstate="firing", '
                                      'switch_port=~"leaf-01/p1|leaf-01/p2"})',
                              "eval_time": "2m", "exp_samples": [{"labels": '{nic="n1/mlx5_0"}', "value": 1}]}]}]}
    (tmp_path / "test.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
    out = subprocess.run([need_tool("promtool"), "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
