"""Correlation on a real topology (the switch_port_errors scenario's inventory): one incident per
fault, named at the faulty part; symptoms folded in, separate faults kept apart."""

from __future__ import annotations

import pytest

from suanli.analysis.findings import Finding, Symptom
from suanli.incidents.correlate import CorrelationConfig, correlate
from suanli.incidents.model import Signal
from suanli.incidents.signals import finding_signals
from suanli.inventory import Inventory, load_inventory
from tests.conftest import shared_path

T0 = 1_773_106_800.0
JOB = "llama-34b-continual"
PORT = "leaf-02/p16"          # cabled to node-008/mlx5_3 in that inventory


@pytest.fixture(scope="module")
def inv() -> Inventory:
    return load_inventory(shared_path("scenarios", "switch_port_errors", "inventory.yaml"))


def _finding(cat: str, kind: str, eid: str, start: float = T0, conf: float = 0.9,
             symptoms: tuple[Symptom, ...] = (), end: float | None = None) -> Finding:
    return Finding(cat, kind, eid, start, end, conf, (f"{cat} at {eid}",), "test", symptoms=symptoms)


def _alert(name: str, kind: str, eid: str, start: float = T0 + 60, category: str | None = None) -> Signal:
    return Signal("rule", name, kind, eid, start, None, start + 30, category, 0.6 if category else 0.3,
                  (), direct=category is not None)


def test_port_fault_absorbs_its_symptoms_and_the_jobs_alerts(inv: Inventory) -> None:
    ranks = [r for r in inv.jobs[JOB].ranks]
    symptoms = tuple(Symptom("rank", r.id, "slow step", T0 + 30) for r in ranks)
    sigs = finding_signals([_finding("switch_port_errors", "switch_port", PORT, symptoms=symptoms),
                            _finding("collective_hang", "job", JOB, T0 + 120, 0.8)])
    sigs += [_alert("GPUUtilizationLow", "gpu", r.gpu) for r in ranks]
    incidents, left = correlate(sigs, inv)
    assert left == []
    assert [(i.category, i.root_id) for i in incidents] == [("switch_port_errors", PORT)]
    # 1 port finding + 1 hang finding + 56 slowed ranks + 56 GPU alerts, each counted once
    assert incidents[0].alert_count == 1 + 1 + 56 + 56


def test_two_simultaneous_faults_stay_two_incidents(inv: Inventory) -> None:
    hot_gpu = inv.jobs[JOB].ranks[3].gpu
    sigs = finding_signals([_finding("switch_port_errors", "switch_port", PORT),
                            _finding("gpu_thermal", "gpu", hot_gpu, T0 + 30)])
    incidents, _ = correlate(sigs, inv)
    assert sorted((i.category, i.root_id) for i in incidents) == sorted(
        [("switch_port_errors", PORT), ("gpu_thermal", hot_gpu)])


def test_hang_folds_into_the_lost_gpu_but_oom_never_folds(inv: Inventory) -> None:
    gpu = inv.jobs[JOB].ranks[10].gpu
    sigs = finding_signals([_finding("gpu_lost", "gpu", gpu), _finding("collective_hang", "job", JOB, T0 + 600),
                            _finding("oom", "job", JOB, T0 + 100)])
    incidents, _ = correlate(sigs, inv)
    assert sorted((i.category, i.root_id) for i in incidents) == sorted([("gpu_lost", gpu), ("oom", JOB)])


def test_the_more_specific_category_names_a_fault_on_one_gpu(inv: Inventory) -> None:
    gpu = inv.jobs[JOB].ranks[5].gpu
    sigs = finding_signals([_finding("gpu_thermal", "gpu", gpu), _finding("pcie_riser", "gpu", gpu, T0 + 20)])
    incidents, _ = correlate(sigs, inv)
    assert [(i.category, i.root_id) for i in incidents] == [("pcie_riser", gpu)]


def test_faults_far_apart_in_time_do_not_join(inv: Inventory) -> None:
    gpu = inv.jobs[JOB].ranks[5].gpu
    sigs = finding_signals([_finding("gpu_lost", "gpu", gpu, T0, 0.9, end=T0 + 300)])
    late = finding_signals([_finding("collective_hang", "job", JOB, T0 + 7200, 0.8)])
    incidents, _ = correlate(sigs + late, inv, CorrelationConfig(window_s=900))
    assert sorted(i.category for i in incidents) == ["collective_hang", "gpu_lost"]


def test_alerts_without_findings(inv: Inventory) -> None:
    gpu = inv.jobs[JOB].ranks[0].gpu
    sigs = [_alert("GPUOverTemperature", "gpu", gpu, category="gpu_thermal"),
            _alert("GPUUtilizationLow", "gpu", gpu),
            _alert("GPUUtilizationLow", "gpu", "node-007/gpu1")]   # spare node, nothing explains it
    incidents, left = correlate(sigs, inv)
    assert [(i.category, i.root_id) for i in incidents] == [("gpu_thermal", gpu)]
    # alert-only incident: min(the seed alert's confidence 0.6, CorrelationConfig's
    # alert_incident_confidence, 0.5 by default) = 0.5
    assert CorrelationConfig().alert_incident_confidence == 0.5
    assert incidents[0].confidence == pytest.approx(min(0.6, 0.5))
    assert incidents[0].alert_count == 2
    assert [s.entity_id for s in left] == ["node-007/gpu1"]


def test_another_gpus_own_fault_alert_is_not_absorbed_by_the_port(inv: Inventory) -> None:
    other = inv.jobs[JOB].ranks[20].gpu
    sigs = finding_signals([_finding("switch_port_errors", "switch_port", PORT)])
    sigs.append(_alert("GPUOverTemperature", "gpu", other, category="gpu_thermal"))
    incidents, _ = correlate(sigs, inv)
    assert sorted((i.category, i.root_id) for i in incidents) == sorted(
        [("switch_port_errors", PORT), ("gpu_thermal", other)])


def test_a_hang_beside_a_degrading_memory_is_a_second_fault(inv: Inventory) -> None:
    gpu = inv.jobs[JOB].ranks[7].gpu
    sigs = finding_signals([_finding("gpu_memory_degradation", "gpu", gpu),
                            _finding("collective_hang", "job", JOB, T0 + 60, 0.8)])
    incidents, _ = correlate(sigs, inv)
    assert sorted((i.category, i.root_id) for i in incidents) == sorted(
        [("gpu_memory_degradation", gpu), ("collective_hang", JOB)])
