"""The inventory's optional ``nvswitches`` (spec/inventory.md): loading, errors naming the key path,
the resolver's aliases and the switch's dependants (every GPU of its node)."""

from __future__ import annotations

import pytest

from suanli.errors import InputError
from suanli.inventory import parse_inventory

_INV = """
cluster: t
racks:
  - id: r1
    nodes:
      - id: node-001
        gpus:
          - {index: 0, uuid: GPU-a0, pci_bus_id: "00000000:18:00.0"}
          - {index: 1, uuid: GPU-a1, pci_bus_id: "00000000:2a:00.0"}
        nvswitches:
          - {index: 0, pci_bus_id: "00000000:84:00.0"}
          - {index: 2}
      - id: node-002
        gpus:
          - {index: 0, uuid: GPU-b0}
jobs:
  - id: j
    precision: bf16
    parallelism: {dp: 3}
    ranks:
      - {rank: 0, gpu: node-001/gpu0}
      - {rank: 1, gpu: node-001/gpu1}
      - {rank: 2, gpu: node-002/gpu0}
"""


def test_nvswitches_load_with_canonical_ids() -> None:
    inv = parse_inventory(_INV)
    assert sorted(inv.nvswitches) == ["node-001/nvswitch0", "node-001/nvswitch2"]
    assert inv.kind_of("node-001/nvswitch2") == "nvswitch"
    assert inv.nodes["node-002"].nvswitches == ()


@pytest.mark.parametrize(("device", "pci", "want"), [
    ("nvidia-nvswitch2", None, "node-001/nvswitch2"),       # the kernel's device name
    (None, "0000:84:00.0", "node-001/nvswitch0"),           # the chip's address, any spelling
    (None, "84:00.0", "node-001/nvswitch0"),
    ("nvidia-nvswitch1", None, None),                       # a chip the node does not list
])
def test_resolver_finds_a_switch_by_device_name_or_address(device: str | None, pci: str | None,
                                                            want: str | None) -> None:
    res = parse_inventory(_INV).resolver
    assert res.nvswitch("node-001", device=device, pci_bus_id=pci) == want
    assert res.nvswitch("node-002", device=device, pci_bus_id=pci) is None


def test_a_switch_reaches_every_gpu_of_its_node_and_their_job() -> None:
    topo = parse_inventory(_INV).topology
    deps = topo.dependents("node-001/nvswitch0")
    assert {"node-001/gpu0", "node-001/gpu1", "j/rank0", "j/rank1", "j"} <= deps
    assert "node-002/gpu0" not in deps and "j/rank2" not in deps
    assert "node-001/nvswitch2" in topo.dependents("node-001")
    assert set(topo.physical.successors("node-001/nvswitch2")) == {"node-001/gpu0", "node-001/gpu1"}


@pytest.mark.parametrize(("entry", "message"), [
    ('{pci_bus_id: "00000000:84:00.0"}', "racks[0].nodes[0].nvswitches[0].index: missing"),
    ("{index: 0}, {index: 0}", "racks[0].nodes[0].nvswitches[1].index: duplicate nvswitch index 0"),
    ('{index: 0, pci_bus_id: "zz"}', "racks[0].nodes[0].nvswitches[0].pci_bus_id: not a PCI bus id"),
    ('{index: 0, pci_bus_id: "84:00.0"}, {index: 1, pci_bus_id: "0000:84:00.0"}',
     "racks[0].nodes[0].nvswitches[1].pci_bus_id: duplicate nvswitch pci_bus_id"),
])
def test_bad_entries_name_their_key_path(entry: str, message: str) -> None:
    text = f"cluster: t\nracks:\n  - id: r1\n    nodes:\n      - id: n\n        nvswitches: [{entry}]\n"
    with pytest.raises(InputError) as err:
        parse_inventory(text)
    assert message in str(err.value)


@pytest.mark.parametrize(("labels", "want"), [
    ({"Hostname": "node-001", "nvswitch": "2"}, ("nvswitch", "node-001/nvswitch2")),
    ({"Hostname": "node-001", "pci_bus_id": "00000000:84:00.0"}, ("nvswitch", "node-001/nvswitch0")),
    ({"Hostname": "node-001", "gpu": "1", "pci_bus_id": "00000000:2A:00.0"}, ("gpu", "node-001/gpu1")),
    ({"Hostname": "node-002", "nvswitch": "2"}, ("node", "node-002")),   # node-002 lists no switch: its node
])
def test_dcgm_series_of_a_switch_resolve_to_it(labels: dict[str, str], want: tuple[str | None, str | None]) -> None:
    from suanli.ingest.resolve import series_key

    key = series_key("DCGM_FI_DEV_NVSWITCH_TEMPERATURE_CURRENT", labels, parse_inventory(_INV).resolver)
    assert (key.entity_kind, key.entity_id) == want
