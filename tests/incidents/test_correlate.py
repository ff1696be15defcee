"""Correlation on a real topology (the switch_port_errors scenario's inventory): one incident per
fault, named at the faulty part; symptoms folded in, separate faults kept apart."""

from __future__ import annotations

import dataclasses

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


def test_folding_on_the_same_entity_raises_confidence_folding_downstream_does_not(inv: Inventory) -> None:
    # pcie_riser (0.6) and gpu_thermal (0.9) on one GPU: one pcie_riser incident (the more specific
    # category) that is as sure as its surest finding there, max(0.6, 0.9) = 0.9. A collective hang
    # (0.9) downstream of a lost GPU (0.6) is the loss's symptom: the incident stays at 0.6.
    gpu = inv.jobs[JOB].ranks[5].gpu
    same, _ = correlate(finding_signals([_finding("pcie_riser", "gpu", gpu, conf=0.6),
                                         _finding("gpu_thermal", "gpu", gpu, T0 + 20, 0.9)]), inv)
    assert [(i.category, i.confidence) for i in same] == [("pcie_riser", 0.9)]
    lost, _ = correlate(finding_signals([_finding("gpu_lost", "gpu", gpu, conf=0.6),
                                         _finding("collective_hang", "job", JOB, T0 + 60, 0.9)]), inv)
    assert [(i.category, i.confidence) for i in lost] == [("gpu_lost", 0.6)]


def test_absorbed_evidence_is_added_once_up_to_twelve_lines(inv: Inventory) -> None:
    # The seed's 3 lines, then the folded finding's lines not already there ("a2" is), until the
    # incident holds 12: a1 a2 a3 + b1..b9 (b10, b11 are left out).
    gpu = inv.jobs[JOB].ranks[5].gpu
    seed = Finding("pcie_riser", "gpu", gpu, T0, None, 0.9, ("a1", "a2", "a3"), "test")
    more = Finding("gpu_thermal", "gpu", gpu, T0 + 20, None, 0.8, ("a2", *(f"b{k}" for k in range(1, 12))), "test")
    incidents, _ = correlate(finding_signals([seed, more]), inv)
    assert incidents[0].evidence == ["a1", "a2", "a3", *(f"b{k}" for k in range(1, 10))]


def test_direct_alerts_add_evidence_at_the_root_or_of_its_category(inv: Inventory) -> None:
    # Three direct alerts join the port's incident (the NIC is cabled to the port). Their evidence
    # counts when the alert is at the root (any category) or of the incident's category (anywhere);
    # an uncategorised alert at the NIC joins without adding its line.
    nic = "node-008/mlx5_3"

    def direct(eid: str, kind: str, cat: str | None, line: str) -> Signal:
        return Signal("rule", f"r-{line}", kind, eid, T0 + 60, None, T0 + 90, cat, 0.6, (line,), direct=True)

    sigs = finding_signals([_finding("switch_port_errors", "switch_port", PORT)])
    sigs += [direct(PORT, "switch_port", None, "at root"), direct(nic, "nic", None, "at nic"),
             direct(nic, "nic", "switch_port_errors", "same category at nic")]
    incidents, left = correlate(sigs, inv)
    assert left == [] and len(incidents) == 1
    assert incidents[0].evidence == [f"switch_port_errors at {PORT}", "at root", "same category at nic"]


def test_a_findings_symptoms_take_alerts_the_topology_does_not_reach(inv: Inventory) -> None:
    # The port's finding names node-007/gpu1 (a spare node no path from the port reaches) as a
    # symptom: an alert there joins the port's incident on that word alone.
    spare = "node-007/gpu1"
    f = _finding("switch_port_errors", "switch_port", PORT, symptoms=(Symptom("gpu", spare, "slow", T0 + 30),))
    incidents, left = correlate([*finding_signals([f]), _alert("GPUUtilizationLow", "gpu", spare)], inv)
    assert left == []
    assert incidents[0].symptom_ids == {spare}
    assert [s.entity_id for s in incidents[0].signals] == [PORT, spare, spare]


def test_a_finding_signal_without_its_finding_object_seeds_an_incident(inv: Inventory) -> None:
    # A signal of source "finding" read back without the Finding (finding=None): an incident with
    # no symptoms, not a crash.
    gpu = inv.jobs[JOB].ranks[5].gpu
    sig = Signal("finding", "gpu_thermal", "gpu", gpu, T0, None, T0, "gpu_thermal", 0.9, ("hot",))
    incidents, left = correlate([sig], inv)
    assert left == [] and [(i.category, i.root_id, i.symptom_ids) for i in incidents] == [("gpu_thermal", gpu, set())]


def test_the_default_window_is_900_s_either_side_inclusive(inv: Inventory) -> None:
    # A lost GPU from T0 to T0 + 300, then a hang: 900 s after its end (T0 + 1200) the hang is
    # still its symptom (start <= end + 900), 901 s after (T0 + 1201) a fault of its own.
    gpu = inv.jobs[JOB].ranks[5].gpu
    lost = _finding("gpu_lost", "gpu", gpu, T0, 0.9, end=T0 + 300)
    for t, n in ((T0 + 1200, 1), (T0 + 1201, 2)):
        incidents, _ = correlate(finding_signals([lost, _finding("collective_hang", "job", JOB, t, 0.8)]), inv)
        assert len(incidents) == n, t - T0
    # the other way round: the hang from T0 to T0 + 300, the GPU lost (folded first) 900 s later
    hang = _finding("collective_hang", "job", JOB, T0, 0.8, end=T0 + 300)
    for t, n in ((T0 + 1200, 1), (T0 + 1201, 2)):
        incidents, _ = correlate(finding_signals([hang, _finding("gpu_lost", "gpu", gpu, t, 0.9)]), inv)
        assert len(incidents) == n, t - T0


def test_a_symptom_finding_folds_into_the_first_fault_that_explains_it(inv: Inventory) -> None:
    # Two lost GPUs of the job (0.9 first, then 0.8: same category, surer first) both explain the
    # job's hang; it folds into the first, and the second incident is its finding alone.
    a, b = inv.jobs[JOB].ranks[5].gpu, inv.jobs[JOB].ranks[9].gpu
    incidents, _ = correlate(finding_signals([_finding("gpu_lost", "gpu", a, conf=0.9),
                                              _finding("gpu_lost", "gpu", b, conf=0.8),
                                              _finding("collective_hang", "job", JOB, T0 + 60, 0.8)]), inv)
    by_root = {i.root_id: [s.name for s in i.signals] for i in incidents}
    assert by_root == {a: ["gpu_lost", "collective_hang"], b: ["gpu_lost"]}


def test_a_finding_at_exactly_the_seed_confidence_seeds(inv: Inventory) -> None:
    # min_seed_confidence 0.5: a finding at 0.5 seeds an incident (>=), one at 0.4 does not.
    cfg = CorrelationConfig(min_seed_confidence=0.5)
    gpu = inv.jobs[JOB].ranks[5].gpu
    assert len(correlate(finding_signals([_finding("gpu_thermal", "gpu", gpu, conf=0.5)]), inv, cfg)[0]) == 1
    assert correlate(finding_signals([_finding("gpu_thermal", "gpu", gpu, conf=0.4)]), inv, cfg)[0] == []


def test_an_alert_skips_an_incident_that_does_not_explain_it_for_one_that_does(inv: Inventory) -> None:
    # A lost GPU on the spare node-007 (more specific: first in the list) and the port. An
    # uncategorised alert at the NIC behind the port: the spare GPU's incident does not explain it,
    # the next one, the port's, does.
    nic = "node-008/mlx5_3"
    sigs = finding_signals([_finding("gpu_lost", "gpu", "node-007/gpu1"),
                            _finding("switch_port_errors", "switch_port", PORT)])
    incidents, left = correlate([*sigs, _alert("NicRetransmits", "nic", nic)], inv)
    assert left == []
    by_root = {i.root_id: [s.entity_id for s in i.signals] for i in incidents}
    assert by_root == {"node-007/gpu1": ["node-007/gpu1"], PORT: [PORT, nic]}


def test_detected_at_reads_the_root_finding_and_direct_alerts_at_the_root_or_of_its_category(
        inv: Inventory) -> None:
    # The port's finding starts at T0 and was detected at T0 + 200; a direct switch_port_errors alert
    # at its NIC fired at T0 + 150: detected at T0 + 150. Earlier but not counted: the folded hang
    # finding (detected T0 + 100, not at the root) and an indirect alert at the port (T0 + 120).
    # Then a direct alert of another category at the port itself, fired at T0 + 130, counts.
    nic = "node-008/mlx5_3"
    port = Finding("switch_port_errors", "switch_port", PORT, T0, None, 0.9, ("crc",), "test", detected_at=T0 + 200)
    hang = Finding("collective_hang", "job", JOB, T0 + 60, None, 0.8, ("hang",), "test", detected_at=T0 + 100)
    sigs = [*finding_signals([port, hang]),
            Signal("rule", "PortFlaps", "switch_port", PORT, T0 + 90, None, T0 + 120, None, 0.3, (), direct=False),
            Signal("rule", "NicPortErrors", "nic", nic, T0 + 140, None, T0 + 150, "switch_port_errors", 0.6, ())]
    incidents, left = correlate(sigs, inv)
    assert left == [] and len(incidents) == 1
    assert incidents[0].detected_at == T0 + 150
    at_root = Signal("rule", "PortDown", "switch_port", PORT, T0 + 125, None, T0 + 130, "nic_down", 0.6, ())
    incidents, _ = correlate([*sigs, at_root], inv)
    assert len(incidents) == 1 and incidents[0].detected_at == T0 + 130


def test_the_config_is_immutable() -> None:
    # CorrelationConfig() is the default argument every correlate() call shares: it cannot change.
    with pytest.raises(dataclasses.FrozenInstanceError):
        CorrelationConfig().window_s = 1.0  # type: ignore[misc]


def test_a_fault_far_in_time_does_not_stop_the_search_for_a_close_one(inv: Inventory) -> None:
    # GPU a lost at T0 (0.9, ended T0 + 300) and GPU b lost at T0 + 7200 (0.8): a is first in the
    # list but too far from the hang at T0 + 7300 and from a low-utilisation alert on a third GPU
    # of the job at T0 + 7300; b, next, is close and takes both.
    a, b, c = (inv.jobs[JOB].ranks[k].gpu for k in (5, 9, 20))
    sigs = finding_signals([_finding("gpu_lost", "gpu", a, T0, 0.9, end=T0 + 300),
                            _finding("gpu_lost", "gpu", b, T0 + 7200, 0.8),
                            _finding("collective_hang", "job", JOB, T0 + 7300, 0.8)])
    incidents, left = correlate([*sigs, _alert("GPUUtilizationLow", "gpu", c, T0 + 7300)], inv)
    assert left == []
    by_root = {i.root_id: [s.name for s in i.signals] for i in incidents}
    assert by_root == {a: ["gpu_lost"], b: ["gpu_lost", "collective_hang", "GPUUtilizationLow"]}


def test_of_two_explaining_incidents_the_one_of_the_alerts_category_wins(inv: Inventory) -> None:
    # nic_down at node-001/mlx5_0 (0.6) and the port (0.9): an indirect nic_down alert at
    # node-002/gpu3 (a job member, at neither root) is explained by both (the job depends on
    # both; nic_down is a network symptom the port causes). Host rank (same entity, same category,
    # confidence): the NIC's (0, 1, 0.6) > the port's (0, 0, 0.9).
    nic = "node-001/mlx5_0"
    sigs = finding_signals([_finding("nic_down", "nic", nic, conf=0.6),
                            _finding("switch_port_errors", "switch_port", PORT)])
    alert = Signal("rule", "JobNicTrouble", "gpu", "node-002/gpu3", T0 + 60, None, T0 + 90, "nic_down", 0.6, (),
                   direct=False)
    incidents, left = correlate([*sigs, alert], inv)
    assert left == []
    by_root = {i.root_id: [s.name for s in i.signals] for i in incidents}
    assert by_root == {nic: ["nic_down", "JobNicTrouble"], PORT: ["switch_port_errors"]}


def test_only_direct_categorised_alerts_seed_incidents(inv: Inventory) -> None:
    # Alone, an indirect alert with a category and a direct one without stay unexplained.
    gpu = inv.jobs[JOB].ranks[5].gpu
    indirect = Signal("rule", "HotJob", "gpu", gpu, T0, None, T0 + 30, "gpu_thermal", 0.6, (), direct=False)
    uncategorised = Signal("rule", "Odd", "gpu", gpu, T0, None, T0 + 30, None, 0.3, (), direct=True)
    for sig in (indirect, uncategorised):
        assert correlate([sig], inv) == ([], [sig])


def test_between_equally_ranked_hosts_the_first_fault_keeps_the_alert(inv: Inventory) -> None:
    # GPUs a (from T0) and b (from T0 + 10) of the job both lost, both 0.9: the folding order is
    # (priority, confidence, start), so a's incident comes first. A low-utilisation alert on a third
    # GPU of the job is explained by both (a member of the job each fault reaches), ranked (0, 0, 0.9)
    # by both: the tie goes to the first, a.
    a, b, c = (inv.jobs[JOB].ranks[k].gpu for k in (5, 9, 20))
    sigs = finding_signals([_finding("gpu_lost", "gpu", b, T0 + 10), _finding("gpu_lost", "gpu", a, T0)])
    incidents, left = correlate([*sigs, _alert("GPUUtilizationLow", "gpu", c)], inv)
    assert left == []
    by_root = {i.root_id: [s.entity_id for s in i.signals] for i in incidents}
    assert by_root == {a: [a, c], b: [b]}


def test_a_second_finding_on_the_same_entity_folds_there_first(inv: Inventory) -> None:
    # oom at the job (more specific: first) and the port: the job's hang is on the oom's own
    # entity, so it folds there and the search stops, though the port would explain it too.
    # Two ooms on the job are one fault: oom folds only into oom (never into another category).
    sigs = finding_signals([_finding("oom", "job", JOB), _finding("switch_port_errors", "switch_port", PORT),
                            _finding("collective_hang", "job", JOB, T0 + 60, 0.8),
                            _finding("oom", "job", JOB, T0 + 100, 0.7)])
    incidents, _ = correlate(sigs, inv)
    by_root = {i.root_id: [s.name for s in i.signals] for i in incidents}
    assert by_root == {JOB: ["oom", "oom", "collective_hang"], PORT: ["switch_port_errors"]}
