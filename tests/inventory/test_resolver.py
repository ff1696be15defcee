"""Alias resolution with the spellings real exporters and kernels wrote (../shared/realdata)."""

from __future__ import annotations

import re

import pytest

from suanli.inventory import Inventory, Resolver, parse_inventory
from tests.conftest import shared_path
from tests.inventory._mini import A30, MINI_YAML


@pytest.fixture(scope="module")
def inv() -> Inventory:
    return parse_inventory(MINI_YAML)


@pytest.fixture(scope="module")
def res(inv: Inventory) -> Resolver:
    return inv.resolver


@pytest.mark.parametrize(("host", "node"), [
    ("r6i3n0", "r6i3n0"),
    ("R6I3N0", "r6i3n0"),
    ("r6i3n0.cluster.local", "r6i3n0"),
    ("r6i3n0:9400", "r6i3n0"),                       # Prometheus instance label
    ("r6i3n0.cluster.local:9100", "r6i3n0"),
    ("http://r6i3n0:9400/metrics", "r6i3n0"),
    (f"{A30}.mt", A30),                              # issue736 writes the FQDN with a .mt suffix
    ("  gsrh100-074 ", "gsrh100-074"),
    ("dcgm-exporter-wwwjh", None),                   # a pod name in `hostname`, not a node
    ("10.0.0.1:9400", None),
    ("", None),
    (None, None),
])
def test_node(res: Resolver, host: str | None, node: str | None) -> None:
    assert res.node(host) == node


def test_node_ids_written_as_fqdn() -> None:
    inv = parse_inventory("cluster: c\nracks:\n  - id: r\n    nodes:\n      - id: gpu-7.dc1.example\n")
    assert inv.resolver.node("gpu-7") == "gpu-7.dc1.example"
    assert inv.resolver.node("GPU-7.dc1.example:9400") == "gpu-7.dc1.example"


def _labels(line: str) -> dict[str, str]:
    return dict(re.findall(r'(\w+)="([^"]*)"', line.split("}", 1)[0]))


def test_every_real_dcgm_label_set_resolves(res: Resolver) -> None:
    """Every series in the real DCGM excerpts whose UUID the mini inventory holds resolves to one GPU,
    whichever label we resolve by (UUID; Hostname/hostname + gpu; Hostname + pci_bus_id)."""
    seen = 0
    for path in sorted(shared_path("realdata", "dcgm").glob("*.prom")):
        for line in path.read_text().splitlines():
            if line.startswith("#") or "{" not in line:
                continue
            lab = _labels(line.split("{", 1)[1])
            gid = res.gpu(uuid=lab.get("UUID"))
            if gid is None:
                continue
            seen += 1
            host = lab.get("Hostname") or lab.get("hostname")
            assert res.gpu_any(lab["UUID"]) == gid
            if host is not None and res.node(host) is not None:
                assert res.gpu(host=host, index=lab["gpu"]) == gid
                if "pci_bus_id" in lab:
                    assert res.gpu(host=host, pci_bus_id=lab["pci_bus_id"]) == gid
    # issue250: 4 V100 on r6i3n0 (9 series); issue512: 3 MIG series on gsrh100-074; issue736: 11 A30
    # series and 4 on the pod-named host (UUIDs we placed on node-004): at least 20 series in all
    assert seen >= 20


@pytest.mark.parametrize("pci", [
    "00000000:1A:00.0", "00000000:1a:00.0", "0000:1A:00.0", "0000:1a:00.0", "1A:00.0", "1a:00.0",
    "0000:1a:00", "PCI:0000:1a:00", "1a:00",
])
def test_gpu_by_pci_any_spelling(res: Resolver, pci: str) -> None:
    assert res.gpu(host="gsrh100-074", pci_bus_id=pci) == "gsrh100-074/gpu0"


def test_gpu_by_xid_line(res: Resolver) -> None:
    # real line from realdata/logs/kernel/gpud-pr46-dmesg-xid13-xid109-peermem.log
    line = "NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception"
    m = re.search(r"Xid \((PCI:[0-9a-fA-F:.]+)\)", line)
    assert m is not None
    assert res.gpu(host="gsrh100-074", pci_bus_id=m.group(1)) == "gsrh100-074/gpu1"


def test_gpu_misses(res: Resolver) -> None:
    assert res.gpu(host="gsrh100-074", pci_bus_id="0001:1a:00.0") is None     # other domain
    assert res.gpu(host="gsrh100-074", pci_bus_id="1a:00.1") is None          # other function
    assert res.gpu(host="r6i3n0", pci_bus_id="1a:00.0") is None               # other node
    assert res.gpu(host="gsrh100-074", pci_bus_id="not-a-bus-id") is None
    assert res.gpu(host="r6i3n0", index=9) is None
    assert res.gpu(host="r6i3n0", index="x") is None
    assert res.gpu(uuid="GPU-ffffffff-0000-0000-0000-000000000000") is None
    assert res.gpu() is None


def test_gpu_uuid_wins_over_host(res: Resolver) -> None:
    # issue736: hostname is the exporter pod's name; the UUID still finds the GPU
    assert res.gpu(uuid="GPU-fc60126e-514d-3522-2828-c5daa8e99d85", host="dcgm-exporter-wwwjh") == "node-004/gpu0"
    assert res.gpu(uuid="gpu-FC60126E-514d-3522-2828-c5daa8e99d85") == "node-004/gpu0"
    # unknown UUID falls back to host + index
    assert res.gpu(uuid="GPU-unknown", host="r6i3n0", index="2") == "r6i3n0/gpu2"


@pytest.mark.parametrize(("text", "host", "gpu"), [
    ("r6i3n0/gpu3", None, "r6i3n0/gpu3"),                      # canonical id in resource.gpu.id
    ("R6I3N0/GPU3", None, "r6i3n0/gpu3"),
    ("GPU-bd94f0f5-8c2f-bc95-74ad-5f99fdc33d01", None, "r6i3n0/gpu3"),
    ("3", "r6i3n0", "r6i3n0/gpu3"),
    ("0000:CA:00.0", "node-004.local", "node-004/gpu1"),
    ("3", None, None),
    ("", None, None),
])
def test_gpu_any(res: Resolver, text: str, host: str | None, gpu: str | None) -> None:
    assert res.gpu_any(text, host=host) == gpu


@pytest.mark.parametrize(("kwargs", "nic"), [
    ({"host": "r6i3n0:9100", "device": "mlx5_1"}, "r6i3n0/mlx5_1"),   # node-exporter infiniband labels
    ({"host": "r6i3n0", "device": "MLX5_0"}, "r6i3n0/mlx5_0"),
    ({"mac": "b8:ce:f6:00:00:02"}, "r6i3n0/mlx5_1"),
    ({"mac": "B8-CE-F6-00-00-02"}, "r6i3n0/mlx5_1"),
    ({"mac": "b8ce.f600.0003"}, "gsrh100-074/mlx5_0"),                 # Cisco dotted form
    ({"mac": "b8cef6000003"}, "gsrh100-074/mlx5_0"),
    ({"host": "r6i3n0", "device": "mlx5_9", "mac": "b8:ce:f6:00:00:03"}, "gsrh100-074/mlx5_0"),
    ({"host": "r6i3n0", "device": "mlx5_9"}, None),
    ({"mac": "b8:ce:f6:00:00"}, None),
    ({"mac": "zz:ce:f6:00:00:03"}, None),
    ({}, None),
])
def test_nic(res: Resolver, kwargs: dict[str, str], nic: str | None) -> None:
    assert res.nic(**kwargs) == nic


@pytest.mark.parametrize(("switch", "port", "out"), [
    ("leaf-01", "p33", "leaf-01/p33"),
    ("leaf-01", "33", "leaf-01/p33"),
    ("leaf-01", 33, "leaf-01/p33"),
    ("LEAF-01", "P33", "leaf-01/p33"),
    (None, "leaf-01/p33", "leaf-01/p33"),
    ("leaf-01", "leaf-01/p33", "leaf-01/p33"),
    ("leaf-01", "033", "leaf-01/p33"),
    ("leaf-01", "p40", "leaf-01/p40"),          # an uncabled port of a known switch still gets its id
    ("leaf-09", "p1", None),
    ("leaf-01", None, None),
    (None, "p1", None),
])
def test_port(res: Resolver, switch: str | None, port: str | int | None, out: str | None) -> None:
    assert res.port(switch, port) == out


def test_port_written_without_p() -> None:
    text = ("cluster: c\nswitches: [{id: sw1}, {id: sw2}]\nlinks: [{a: sw1/17, b: sw2/Eth1/3}]\n")
    r = parse_inventory(text).resolver
    assert r.port("sw1", "p17") == "sw1/17"
    assert r.port("sw1", "17") == "sw1/17"
    assert r.port("sw2", "Eth1/3") == "sw2/Eth1/3"


def test_job_and_rank(res: Resolver) -> None:
    assert res.job("demo") == "demo"
    assert res.job("DEMO") == "demo"
    assert res.job("other") is None
    assert res.rank("demo", 3) == "demo/rank3"
    assert res.rank("demo", "7") == "demo/rank7"
    assert res.rank("idle-job", 40) == "idle-job/rank40"     # ranks may come from spans only
    assert res.rank("demo", -1) is None
    assert res.rank("demo", "x") is None
    assert res.rank("other", 0) is None


def test_scenario_labels_resolve() -> None:
    """The label spellings of a public scenario's metrics.om resolve (first 2,000 lines)."""
    from suanli.inventory import load_inventory

    folder = shared_path("scenarios", "switch_port_errors")
    r = load_inventory(folder / "inventory.yaml").resolver
    with (folder / "metrics.om").open() as fh:
        lines = [next(fh) for _ in range(2000)]
    hits = 0
    for line in lines:
        if "{" not in line or line.startswith("#"):
            continue
        lab = _labels(line.split("{", 1)[1])
        if "UUID" in lab:
            gid = r.gpu(uuid=lab["UUID"])
            assert gid is not None and gid == r.gpu(host=lab["Hostname"], pci_bus_id=lab["pci_bus_id"])
            hits += 1
        elif "instance" in lab and "device" in lab:
            assert r.nic(host=lab["instance"], device=lab["device"]) is not None
            hits += 1
        elif "switch" in lab:
            assert r.port(lab["switch"], lab["port"]) in r._inv.ports
            hits += 1
        elif lab.get("pci_bus_id") and "node" in lab:
            assert r.gpu(host=lab["node"], pci_bus_id=lab["pci_bus_id"]) is not None
            hits += 1
    assert hits > 500


def test_named_entities(res: Resolver) -> None:
    assert res.storage("lustre-01") == "lustre-01"
    assert res.storage("LUSTRE-01") == "lustre-01"
    assert res.storage("gpfs") is None
    assert res.sla("gold") == "gold" and res.sla(" Bronze ") == "bronze"
    assert res.sla(None) is None
    assert res.kind_of("leaf-01/p1") == "switch_port"
    assert res.switch("LEAF-02") == "leaf-02" and res.switch("leaf-02.mgmt.local") == "leaf-02"


def test_jobs_on_node_and_nic_by_pci_bus_id() -> None:
    from suanli.inventory import load_inventory
    from tests.conftest import shared_path

    inv = load_inventory(shared_path("scenarios", "switch_port_errors", "inventory.yaml"))
    r = inv.resolver
    # node-001 hosts ranks 0-7 of the one job; node-007 is the spare (truth.json: spare_nodes)
    assert r.jobs_on_node("node-001") == ["llama-34b-continual"]
    assert r.jobs_on_node("node-007.cluster.local") == []
    assert r.jobs_on_node("nowhere") == []
    # node-001's mlx5_1 sits at pci_bus_id '0000:3b:00.0' in that inventory
    assert r.nic(host="node-001", pci_bus_id="3B:00.0") == "node-001/mlx5_1"
    assert r.nic(host="node-001", pci_bus_id="00000000:3b:00.0") == "node-001/mlx5_1"
    assert r.nic(host="node-001", pci_bus_id="0000:3c:00.0") is None


def test_gpu_in_any_domain(res: Resolver) -> None:
    # gsrh100-074 gpu0 sits at 00000000:1A:00.0 (the mini inventory); the strict lookup misses another domain
    assert res.gpu(host="gsrh100-074", pci_bus_id="0001:1a:00.0") is None
    assert res.gpu_in_any_domain("gsrh100-074", "0001:1a:00.0") == "gsrh100-074/gpu0"
    assert res.gpu_in_any_domain("gsrh100-074", "0001:1a:00") == "gsrh100-074/gpu0"     # Xid form, no function
    assert res.gpu_in_any_domain("gsrh100-074", "0000:1a:00.1") is None    # another function: the audio device
    assert res.gpu_in_any_domain("gsrh100-074", "0000:1b:00.0") is None    # another bus
    assert res.gpu_in_any_domain("r6i3n0", "0000:1a:00.0") is None         # that node's GPUs have no bus id
    assert res.gpu_in_any_domain(None, "0000:1a:00.0") is None and res.gpu_in_any_domain("gsrh100-074", "x") is None


def test_gpu_in_any_domain_needs_one_gpu_there() -> None:
    text = ("cluster: c\nracks:\n  - id: r\n    nodes:\n      - id: n1\n        gpus:\n"
            "          - {index: 0, uuid: GPU-a, pci_bus_id: '0000:18:00.0'}\n"
            "          - {index: 1, uuid: GPU-b, pci_bus_id: '0001:18:00.0'}\n")
    r = parse_inventory(text).resolver
    assert r.gpu(host="n1", pci_bus_id="0001:18:00.0") == "n1/gpu1"          # exact still answers
    assert r.gpu_in_any_domain("n1", "0002:18:00.0") is None                 # two GPUs at 18:00.0


def test_gpu_any_takes_a_canonical_id_written_with_a_host_alias(res: Resolver) -> None:
    assert res.gpu_any("r6i3n0.cluster.local/gpu2") == "r6i3n0/gpu2"
    assert res.gpu_any("nowhere/gpu2") is None and res.gpu_any("r6i3n0/gpu9") is None


def test_answers_are_memoised(inv: Inventory) -> None:
    r = Resolver(inv)
    assert r.node("R6I3N0.cluster.local") == "r6i3n0"
    assert ("node", ("R6I3N0.cluster.local",), ()) in r._memo
    r._memo[("node", ("R6I3N0.cluster.local",), ())] = "remembered"
    assert r.node("R6I3N0.cluster.local") == "remembered"                    # served from the memo
    assert r.gpu(host="r6i3n0", index=[2]) is None                           # unhashable: answered, not kept
