"""End to end through the real loader and DuckStore: log events (Xid, NCCL watchdog) raise the default
pack's alerts on the right entities, plan the right actions, and the dry run audits them; the
scenario metrics give the same alerts as through the in-memory store."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from suanli.ingest.load import load_paths
from suanli.inventory import parse_inventory
from suanli.rules import ActionRunner, EntityIndex, evaluate_window, load_rules
from suanli.store.duck import DuckStore
from suanli.timefmt import parse_time
from tests.conftest import shared_path
from tests.rules.scenario_data import load_scenario

KERNEL = """2026-03-17T17:45:03.123456+00:00 node-002 kernel: NVRM: Xid (PCI:0000:ab:00): 79, pid=1234, name=python, GPU has fallen off the bus.
2026-03-17T17:46:03.123456+00:00 node-003 kernel: NVRM: Xid (PCI:0000:18:00): 48, pid=1234, name=python, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.
"""
TRAINER = ("2026-03-17T17:47:00.000000+00:00 node-001 python[77]: [rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] "
           "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, "
           "NumelOut=1, Timeout(ms)=600000) ran for 600032 milliseconds before timing out.\n")


def test_log_events_drive_the_default_pack(tmp_path: Path) -> None:
    src = shared_path("scenarios", "pcie_riser", "inventory.yaml")
    shutil.copy(src, tmp_path / "inventory.yaml")
    (tmp_path / "kernel.log").write_text(KERNEL)
    (tmp_path / "trainer.log").write_text(TRAINER)
    store = DuckStore(None)
    load_paths([tmp_path], store)
    inv = parse_inventory(src.read_text())
    idx = EntityIndex.from_inventory(inv)
    rs = load_rules(None)
    start = parse_time("2026-03-17T17:44:00Z")
    alerts = evaluate_window(rs, store, idx, start, start + 600)
    fired = {(a.rule, a.entity_id): a for a in alerts if a.fired_at is not None}
    lost = fired[("gpu_fallen_off_bus", "node-002/gpu5")]
    assert lost.fired_at == parse_time("2026-03-17T17:45:15Z")       # first 15 s evaluation after 17:45:03
    assert ("drain_node", "node-002") in {(p.action, p.target) for p in lost.actions}
    assert ("gpu_memory_xid", "node-003/gpu0") in fired
    jobs_on_node1 = {j.id for j in inv.jobs.values() if any(r.gpu.startswith("node-001/") for r in j.ranks)}
    assert {e for (r, e) in fired if r == "nccl_collective_timeout"} == jobs_on_node1
    runner = ActionRunner.from_ruleset(rs, idx)
    decisions = runner.handle([lost], now=lost.fired_at)
    assert {(d["action"], d["target"], d["decision"]) for d in decisions} >= {("drain_node", "node-002", "dry_run")}


@pytest.mark.slow
def test_duckstore_and_memory_store_agree_on_a_scenario() -> None:
    folder = shared_path("scenarios", "pcie_riser")
    inv, mem, _, start, end = load_scenario(folder)
    duck = DuckStore(None)
    load_paths([folder], duck)
    idx = EntityIndex.from_inventory(inv)
    rs = load_rules(None)
    a = [(x.rule, x.entity_id, x.fired_at, x.resolved_at) for x in evaluate_window(rs, mem, idx, start, end)]
    b = [(x.rule, x.entity_id, x.fired_at, x.resolved_at) for x in evaluate_window(rs, duck, idx, start, end)]
    assert a == b and ("pcie_riser_fault", "node-002/gpu5") in {(r, e) for r, e, _, _ in a}
