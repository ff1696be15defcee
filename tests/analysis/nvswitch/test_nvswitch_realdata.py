"""``nvswitch_fault`` end to end on real SXid records: ingest -> analysis -> rules -> incident,
root at the switch (``h/nvswitch1``), or at the node when the inventory lists no switches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from suanli.analysis.nvswitch import NvSwitchConfig, nvswitch_findings
from suanli.config import Config
from suanli.ingest.load import IngestConfig, load_paths
from suanli.ingest.logs import LogConfig, read_log
from suanli.ingest.records import IngestReport
from suanli.inventory import load_inventory
from suanli.pipeline.batch import diagnose
from suanli.pipeline.inputs import Inputs, load_rules
from suanli.report.json_doc import diagnosis_json
from suanli.store.duck import DuckStore
from tests.conftest import shared_path

_NODE = """
cluster: t
racks:
  - id: r1
    nodes:
      - id: h
        gpus:
          - {index: 0, uuid: GPU-00000000-0000-0000-0000-000000000000}
          - {index: 1, uuid: GPU-00000000-0000-0000-0000-000000000001}
"""
_SWITCHES = """        nvswitches:
          - {index: 0}
          - {index: 1, pci_bus_id: "00000000:84:00.0"}
"""
_JOB = """jobs:
  - id: j
    precision: bf16
    parallelism: {dp: 2}
    ranks:
      - {rank: 0, gpu: h/gpu0}
      - {rank: 1, gpu: h/gpu1}
"""


def _diagnose(tmp_path: Path, inventory: str, log: Path) -> list[dict[str, Any]]:
    inv_path = tmp_path / "inventory.yaml"
    inv_path.write_text(inventory)
    store = DuckStore(None)
    load_paths([inv_path, log], store, config=IngestConfig(logs=LogConfig(default_host="h")))
    diag = diagnose(store, load_inventory(inv_path), None, Config(), Inputs(load_rules(None)))
    assert not diag.analysis_errors
    incidents: list[dict[str, Any]] = diagnosis_json(diag)["incidents"]
    return incidents


def test_fatal_sxid_12028_is_one_incident_at_its_switch(tmp_path: Path) -> None:
    # gpud PR 338: one "nvidia-nvswitch1: SXid (PCI:0000:84:00.0): 12028" record, fatal in NVIDIA's
    # catalogue (egress nonposted PRIV error): the switch and the GPUs of its node must be reset
    log = shared_path("realdata", "third-party", "logs", "gpud-pr338-sxid12028-decode-iso.log")
    incs = _diagnose(tmp_path, _NODE + _SWITCHES + _JOB, log)
    assert [(i["category"], i["root_cause"]) for i in incs] == [
        ("nvswitch_fault", {"kind": "nvswitch", "id": "h/nvswitch1"})]
    inc = incs[0]
    assert inc["start"] == "2025-01-25T10:34:55Z"                 # 10:34:54.859532, to the second
    assert any("SXid 12028 (egress nonposted PRIV error, fatal)" in e for e in inc["evidence"])
    assert inc["impact"]["jobs"] == ["j"] and inc["impact"]["gpus"] == 2
    acts = {(a["action"], a["target"]) for a in inc["actions"]}
    assert {("drain_node", "h"), ("reschedule_job", "j")} <= acts
    assert all(a["status"] == "dry_run" for a in inc["actions"])


def test_without_listed_switches_the_root_is_the_node(tmp_path: Path) -> None:
    log = shared_path("realdata", "third-party", "logs", "gpud-pr338-sxid12028-decode-iso.log")
    incs = _diagnose(tmp_path, _NODE + _JOB, log)
    assert [(i["category"], i["root_cause"]) for i in incs] == [("nvswitch_fault", {"kind": "node", "id": "h"})]


def test_non_fatal_sxids_count_only_when_they_repeat(tmp_path: Path) -> None:
    # nvtrust 124: eight non-fatal SXid 22013 lines from nvidia-nvswitch3 (Minion Link DLREQ
    # interrupt on links 44-46 at boot). repeat_min records make a finding; fewer do not.
    inv_path = tmp_path / "inventory.yaml"
    inv_path.write_text(_NODE + "        nvswitches: [{index: 3}]\n")
    inv = load_inventory(inv_path)
    log = shared_path("realdata", "third-party", "logs", "nvtrust-124-sxid22013-three-line-records.log")
    boot = 1_780_000_000.0           # raw dmesg stamps are seconds since boot (node_boot_time_seconds)
    evs = [e for e in read_log(log, inv.resolver, IngestReport(), LogConfig(default_host="h", boot_time_s=boot))
           if e.kind == "sxid"]
    n = int(sum(e.count for e in evs))
    found, counts = nvswitch_findings(evs, [], inv, NvSwitchConfig(repeat_min=n))
    assert [(f.category, f.entity_kind, f.entity_id) for f in found] == [("nvswitch_fault", "nvswitch", "h/nvswitch3")]
    assert counts == {"h/nvswitch3": {"sxid_fatal": 0.0, "sxid_nonfatal": float(n)}}
    assert found[0].confidence == 0.6                            # non-fatal only: the weak confidence
    assert found[0].start == boot + 38.175561                    # the first SXid line, 38.175561 s after boot
    none, _ = nvswitch_findings(evs, [], inv, NvSwitchConfig(repeat_min=n + 1))
    assert none == []
