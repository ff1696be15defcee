"""The public scenarios of the independent simulator (../shared/scenarios): the expected root
cause is read from each folder's truth.json, never written here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from suanli.analysis.fabric import FabricResult, analyze
from suanli.ingest.load import load_paths
from suanli.inventory.loader import parse_inventory
from suanli.store.duck import DuckStore
from suanli.timefmt import parse_time
from tests.conftest import shared_path

MINE = {"switch_port_errors", "optical_degradation", "nic_down", "gpu_straggler", "storage_slow"}


def _analyze(name: str) -> tuple[FabricResult, dict[str, object]]:
    folder: Path = shared_path("scenarios", name)
    store = DuckStore(None)
    load_paths([folder], store)
    store.flush()
    text = store.inventory_text()
    assert text is not None
    truth = json.loads((folder / "truth.json").read_text())
    return analyze(store, parse_inventory(text)), truth


def test_switch_port_errors_scenario_one_finding_at_the_truth() -> None:
    res, truth = _analyze("switch_port_errors")
    faults = truth["faults"]
    assert isinstance(faults, list) and len(faults) == 1
    fault = faults[0]
    assert [(f.category, f.entity_kind, f.entity_id) for f in res.findings] == \
        [(fault["category"], fault["root_cause"]["kind"], fault["root_cause"]["id"])]
    f = res.findings[0]
    # onset within two scrapes (15 s each) of the injected start
    assert abs(f.start - parse_time(fault["start"])) <= 30.0
    assert set(f.extra["jobs"]) == set(fault["jobs"])
    assert f.symptoms, "the NIC behind the port retransmits: a symptom, not a finding"


@pytest.mark.parametrize("name", ["healthy", "pcie_riser"])
def test_no_fabric_findings_where_the_fault_is_not_the_fabric(name: str) -> None:
    res, truth = _analyze(name)
    assert not any(f.category in MINE for f in res.findings), [f.evidence for f in res.findings]
    assert isinstance(truth["faults"], list)
    for fault in truth["faults"]:
        # pcie_riser: the riser GPU's NIC retransmits; that rate is exposed, not a finding
        gpu = fault["root_cause"]["id"]
        nics = [k for k, v in res.values().items() if "rdma_retransmits_per_s" in v and
                k.startswith(gpu.split("/")[0] + "/")]
        assert nics
