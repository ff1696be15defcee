"""Exporter labels -> canonical entities (spec/telemetry.md table, spec/inventory.md aliases)."""

from __future__ import annotations

import pytest

from suanli.ingest.resolve import series_key
from suanli.inventory import Resolver, parse_inventory

INV = """
cluster: t
racks:
  - id: rack-01
    nodes:
      - id: node-001
        gpus:
          - {index: 0, uuid: GPU-aaaaaaaa-0000-0000-0000-000000000000, pci_bus_id: "00000000:18:00.0"}
          - {index: 1, uuid: GPU-bbbbbbbb-0000-0000-0000-000000000000, pci_bus_id: "00000000:2A:00.0"}
        nics:
          - {name: mlx5_0, mac: "b8:ce:f6:00:00:01", gpu: 0, switch_port: leaf-01/p1}
      - id: node-002
        gpus:
          - {index: 0, uuid: GPU-cccccccc-0000-0000-0000-000000000000, pci_bus_id: "00000000:18:00.0"}
switches:
  - {id: leaf-01, tier: leaf, rack: rack-01}
storage:
  - {id: lustre-01, kind: lustre}
jobs:
  - id: job-a
    sla_id: pretrain_v3
    model: {flops_per_token: 1.0e9}
    precision: bf16
    parallelism: {dp: 1, tp: 1, pp: 1}
    ranks:
      - {rank: 0, gpu: node-001/gpu0}
"""


@pytest.fixture(scope="module")
def lookups() -> Resolver:
    return parse_inventory(INV).resolver


CASES = [
    # DCGM: UUID wins, then (Hostname, gpu), then (Hostname, pci_bus_id; any domain width, any case)
    ("DCGM_FI_DEV_GPU_TEMP", {"UUID": "GPU-bbbbbbbb-0000-0000-0000-000000000000", "gpu": "0"}, "gpu", "node-001/gpu1", None),
    ("DCGM_FI_DEV_GPU_TEMP", {"Hostname": "node-002", "gpu": "0"}, "gpu", "node-002/gpu0", None),
    ("DCGM_FI_DEV_GPU_TEMP", {"hostname": "node-001", "pci_bus_id": "0000:2a:00.0"}, "gpu", "node-001/gpu1", None),
    ("DCGM_FI_DEV_GPU_TEMP", {"UUID": "GPU-unknown", "gpu": "0"}, None, None, None),
    # node-exporter infiniband: host from instance (port stripped), device -> NIC
    ("node_infiniband_port_errors_received_total", {"instance": "node-001:9100", "device": "mlx5_0", "port": "1"},
     "nic", "node-001/mlx5_0", None),
    ("node_infiniband_port_errors_received_total", {"instance": "node-001:9100", "device": "mlx5_9"}, None, None, None),
    ("suanli_switch_port_crc_errors_total", {"switch": "leaf-01", "port": "p1"}, "switch_port", "leaf-01/p1", None),
    ("suanli_port_pre_fec_ber", {"switch": "leaf-01", "port": "p1"}, "switch_port", "leaf-01/p1", None),
    ("suanli_port_pre_fec_ber", {"node": "node-001", "nic": "mlx5_0"}, "nic", "node-001/mlx5_0", None),
    ("suanli_rdma_retransmits_total", {"node": "node-001", "nic": "mlx5_0"}, "nic", "node-001/mlx5_0", None),
    # AER: the GPU's own bus id -> the GPU; an upstream port's -> the node
    ("suanli_pcie_aer_errors_total", {"node": "node-002", "pci_bus_id": "0000:18:00.0", "severity": "corrected"},
     "gpu", "node-002/gpu0", None),
    ("suanli_pcie_aer_errors_total", {"node": "node-002", "pci_bus_id": "0000:17:01.0", "severity": "corrected"},
     "node", "node-002", None),
    ("suanli_link_latency_seconds", {"src": "node-001", "dst": "node-002"}, "node", "node-001", "node-002"),
    ("suanli_storage_read_latency_seconds", {"storage": "lustre-01"}, "storage", "lustre-01", None),
    ("suanli_storage_read_latency_seconds", {"storage": "nfs-9"}, None, None, None),
    ("suanli_sla_latency_seconds", {"sla_id": "pretrain_v3"}, "sla", "pretrain_v3", None),
    ("node_load1", {"instance": "node-002:9100", "job": "node"}, "node", "node-002", None),
    ("something_else", {"foo": "bar"}, None, None, None),
]


@pytest.mark.parametrize(("metric", "labels", "kind", "entity", "peer"), CASES)
def test_series_key_maps_labels(lookups: Resolver, metric: str, labels: dict[str, str],
                                kind: str | None, entity: str | None, peer: str | None) -> None:
    key = series_key(metric, labels, lookups)
    assert (key.entity_kind, key.entity_id, key.peer_id) == (kind, entity, peer)
    assert key.labels == tuple(sorted(labels.items()))       # nothing lost


def test_without_inventory_everything_is_kept_unresolved() -> None:
    key = series_key("DCGM_FI_DEV_GPU_TEMP", {"UUID": "GPU-x"}, None)
    assert key.entity_id is None and key.label("UUID") == "GPU-x"


@pytest.mark.parametrize(("metric", "labels", "entity"), [
    # the inventory writes 00000000:18:00.0 / 00000000:2A:00.0; an exporter writing another domain
    # still names that GPU (health and fabric matched so on their own before)
    ("DCGM_FI_DEV_GPU_TEMP", {"Hostname": "node-001", "pci_bus_id": "00000001:2A:00.0"}, "node-001/gpu1"),
    ("suanli_pcie_aer_errors_total", {"node": "node-002", "pci_bus_id": "0001:18:00.0"}, "node-002/gpu0"),
    # another function is another device (a GPU's audio function): not the GPU
    ("suanli_pcie_aer_errors_total", {"node": "node-002", "pci_bus_id": "0000:18:00.1"}, "node-002"),
])
def test_a_bus_id_in_another_domain_still_names_the_gpu(lookups: Resolver, metric: str, labels: dict[str, str],
                                                         entity: str) -> None:
    assert series_key(metric, labels, lookups).entity_id == entity
