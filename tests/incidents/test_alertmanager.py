"""Alertmanager webhook payloads (version 4) become signals anchored to canonical entities."""

from __future__ import annotations

import pytest

from suanli.incidents.correlate import correlate
from suanli.incidents.signals import alertmanager_signals
from suanli.inventory import Inventory, load_inventory
from tests.conftest import shared_path


@pytest.fixture(scope="module")
def inv() -> Inventory:
    return load_inventory(shared_path("scenarios", "switch_port_errors", "inventory.yaml"))


def _payload(inv: Inventory) -> dict[str, object]:
    uuid = inv.gpus["node-003/gpu2"].uuid
    return {
        "version": "4", "status": "firing", "receiver": "suanli", "groupKey": "{}:{}",
        "alerts": [
            {"status": "firing", "startsAt": "2026-03-10T01:40:00Z", "endsAt": "0001-01-01T00:00:00Z",
             "labels": {"alertname": "GPUOverTemperature", "UUID": uuid, "Hostname": "node-003",
                        "category": "gpu_thermal"},
             "annotations": {"summary": "GPU 2 on node-003 at 91 C"}},
            {"status": "firing", "startsAt": "2026-03-10T01:40:30Z", "endsAt": "0001-01-01T00:00:00Z",
             "labels": {"alertname": "GPUUtilizationLow", "gpu": "2", "instance": "node-003:9400"}},
            {"status": "resolved", "startsAt": "2026-03-10T01:30:00Z", "endsAt": "2026-03-10T01:35:00Z",
             "labels": {"alertname": "PortFlap", "switch": "leaf-01", "port": "3"}},
            {"status": "firing", "startsAt": "2026-03-10T01:41:00Z",
             "labels": {"alertname": "Mystery", "instance": "unknown-host:9100"}},
        ],
    }


def test_webhook_alerts_are_anchored(inv: Inventory) -> None:
    sigs = alertmanager_signals(_payload(inv), inv)
    assert [(s.name, s.entity_kind, s.entity_id) for s in sigs] == [
        ("GPUOverTemperature", "gpu", "node-003/gpu2"),
        ("GPUUtilizationLow", "gpu", "node-003/gpu2"),
        ("PortFlap", "switch_port", "leaf-01/p3"),
        ("Mystery", "cluster", inv.cluster),            # unresolvable: kept, anchored to the cluster
    ]
    assert sigs[0].end is None and sigs[2].end is not None
    assert sigs[2].end - sigs[2].start == 300


def test_webhook_alerts_make_one_incident(inv: Inventory) -> None:
    incidents, left = correlate(alertmanager_signals(_payload(inv), inv), inv)
    thermal = [i for i in incidents if i.category == "gpu_thermal"]
    assert len(thermal) == 1 and thermal[0].root_id == "node-003/gpu2" and thermal[0].alert_count == 2
    assert {s.name for s in left} == {"PortFlap", "Mystery"}
