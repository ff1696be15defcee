"""Root choice (issue 20) on the switch_port_errors inventory: which of two competing alert-only
seeds names the incident, and which of two incidents takes an alert both could explain."""

from __future__ import annotations

import pytest

from suanli.analysis.findings import Finding
from suanli.incidents.correlate import correlate
from suanli.incidents.model import Signal
from suanli.incidents.reach import Reach
from suanli.incidents.signals import finding_signals
from suanli.inventory import Inventory, load_inventory
from tests.conftest import shared_path

T0 = 1_773_106_800.0
JOB = "llama-34b-continual"
PORT = "leaf-02/p16"             # cabled to node-008/mlx5_3
NIC = "node-008/mlx5_3"          # the NIC of node-008/gpu6 and gpu7 (ranks 54, 55)
RANK = f"{JOB}/rank54"           # on node-008/gpu6
GPU = "node-008/gpu6"


@pytest.fixture(scope="module")
def inv() -> Inventory:
    return load_inventory(shared_path("scenarios", "switch_port_errors", "inventory.yaml"))


def _alert(name: str, kind: str, eid: str, start: float, category: str | None) -> Signal:
    return Signal("rule", name, kind, eid, start, None, start + 30, category, 0.6 if category else 0.3,
                  (), direct=category is not None)


def test_of_two_alert_only_seeds_the_upstream_one_names_the_incident(inv: Inventory) -> None:
    reach = Reach(inv)
    # the topology as the inventory states it: rank 54 depends on the NIC, not the other way
    assert reach.downstream(NIC, RANK) and not reach.downstream(RANK, NIC)
    assert len(reach.dependents(NIC)) > len(reach.dependents(RANK))
    # The rank's alert fires first (it is the symptom the job sees), the NIC's a minute later.
    # The NIC explains the rank (RANK is downstream of NIC); the rank cannot explain the NIC.
    # Upstream first: the NIC seeds one incident and the rank's alert joins it -> 1 incident,
    # 2 alerts, at the NIC, confidence min(0.6, alert_incident_confidence 0.5) = 0.5.
    # Downstream first would seed at the rank and leave the NIC's alert a second incident.
    sigs = [_alert("RankStepSlow", "rank", RANK, T0, "gpu_straggler"),
            _alert("NicLinkDown", "nic", NIC, T0 + 60, "nic_down")]
    incidents, left = correlate(sigs, reach)
    assert left == []
    assert [(i.category, i.root_id) for i in incidents] == [("nic_down", NIC)]
    assert incidents[0].alert_count == 2
    assert incidents[0].confidence == pytest.approx(0.5)


def test_an_alert_two_incidents_could_explain_joins_the_one_at_its_entity(inv: Inventory) -> None:
    # Two faults: the port (switch_port_errors, confidence 0.9) and a hot GPU6 behind it
    # (gpu_thermal, 0.6). A low-utilisation alert on GPU6 (no category: a symptom) is explained by
    # both: the port's fault reaches every GPU of the job it carries, and GPU6 is the thermal
    # fault's own entity. The host is ranked (same entity, same category, confidence): GPU6's
    # incident wins (1, 0, 0.6) > (0, 0, 0.9); by confidence alone the port would take it.
    f_port = Finding("switch_port_errors", "switch_port", PORT, T0, None, 0.9, ("port",), "test")
    f_gpu = Finding("gpu_thermal", "gpu", GPU, T0 + 30, None, 0.6, ("hot",), "test")
    sigs = [*finding_signals([f_port, f_gpu]), _alert("GPUUtilizationLow", "gpu", GPU, T0 + 90, None)]
    incidents, left = correlate(sigs, inv)
    assert left == []
    by_root = {i.root_id: i for i in incidents}
    assert set(by_root) == {PORT, GPU}
    assert [s.name for s in by_root[GPU].signals] == ["gpu_thermal", "GPUUtilizationLow"]
    assert [s.name for s in by_root[PORT].signals] == ["switch_port_errors"]
