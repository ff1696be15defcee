"""Inventory discovery on real exporter output (shared/realdata: dcgm-exporter issue dumps and
node-exporter's own test fixture) and on a public scenario merged into its hand-written inventory.
The expected GPUs, UUIDs and devices are read off the files' lines by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from suanli.errors import InputError
from suanli.ingest.resolve import parse_labels
from suanli.inventory import parse_inventory
from suanli.inventory.discover import (
    NodeSeen,
    build_inventory,
    expand_hostlist,
    from_dcgm,
    from_infiniband,
    jobs_from_pods,
    jobs_from_slurm,
    pod_gpus,
)
from tests.conftest import shared_path


def _label_sets(path: Path, prefix: str, extra: dict[str, str] | None = None) -> list[dict[str, str]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith(prefix) and "{" in line:
            labels, _ = parse_labels(line, line.index("{"))
            out.append({**labels, **(extra or {})})
    return out


def _dcgm(name: str, extra: dict[str, str] | None = None) -> tuple[dict[str, NodeSeen], set[str]]:
    nodes: dict[str, NodeSeen] = {}
    notes: set[str] = set()
    from_dcgm(_label_sets(shared_path("realdata", "dcgm", name), "DCGM_", extra), nodes, notes)
    return nodes, notes


def test_four_v100s_of_one_host() -> None:
    nodes, notes = _dcgm("issue250-v100x4-excerpt.prom")
    assert list(nodes) == ["r6i3n0"] and notes == set()
    uuids = {i: g.uuid for i, g in nodes["r6i3n0"].gpus.items()}
    assert uuids == {0: "GPU-a6158b59-2c1e-1e63-0068-9178c4298abd", 1: "GPU-8d5053b3-9280-7d1a-751b-4fd2fdd547c5",
                     2: "GPU-a9079f15-493e-6c1c-c78c-73ec2b840cba", 3: "GPU-bd94f0f5-8c2f-bc95-74ad-5f99fdc33d01"}
    found = build_inventory("lab", nodes)
    inv = parse_inventory(found.yaml())
    assert inv.resolver.gpu(uuid="GPU-a9079f15-493e-6c1c-c78c-73ec2b840cba") == "r6i3n0/gpu2"
    assert found.unknown == ["r6i3n0: rack unknown (put in 'unracked')"]     # V100-SXM2-32GB has a built-in spec


def test_mig_instances_are_one_gpu_with_their_pods() -> None:
    nodes, _ = _dcgm("issue512-h100-mig-excerpt.prom")
    gpu = nodes["gsrh100-074"].gpus[0]
    assert gpu.mig and gpu.pci_bus_id == "00000000:1A:00.0" and len(nodes["gsrh100-074"].gpus) == 1
    assert gpu.pods == {("model-playground-stg", "text-embedding-predictor-00008-deployment-57946f6c67-vdtjl"),
                        ("model-playground-stg", "tts-predictor-00011-deployment-5554f75554-8j8pl")}


def test_an_exporter_pod_name_is_no_node() -> None:
    nodes, notes = _dcgm("issue736-ada-a30-mixed-excerpt.prom")
    assert nodes == {} and any("'dcgm-exporter-wwwjh' is the exporter's pod name" in n for n in notes)
    nodes, notes = _dcgm("issue736-ada-a30-mixed-excerpt.prom", {"node": "gpu-worker-3"})   # a scrape's relabel
    assert sorted(nodes["gpu-worker-3"].gpus) == [1, 2]
    found = build_inventory("lab", nodes)
    assert "GPU model 'NVIDIA RTX 2000 Ada Generation': no spec (add it under gpu_models)" in found.unknown
    assert not any("A30" in u for u in found.unknown)                        # A30 is a built-in part


def test_infiniband_devices_of_node_exporter() -> None:
    path = shared_path("realdata", "third-party", "metrics", "node_exporter-e2e-output.txt")
    nodes: dict[str, NodeSeen] = {}
    notes: set[str] = set()
    from_infiniband(_label_sets(path, "node_infiniband_"), nodes, notes)
    assert nodes == {} and notes      # the fixture is the exporter's own output: no instance label yet
    from_infiniband(_label_sets(path, "node_infiniband_", {"instance": "gpu-node-7:9100"}), nodes, notes)
    assert nodes["gpu-node-7"].nics == {"mlx4_0", "i40iw0"}


def test_scenario_exporters_merged_into_its_inventory() -> None:
    folder = shared_path("scenarios", "pcie_riser")
    text = (folder / "inventory.yaml").read_text()
    written = yaml.safe_load(text)
    for rack in written["racks"]:                       # a file that lost node-003's UUIDs and all of node-008
        rack["nodes"] = [n for n in rack["nodes"] if n["id"] != "node-008"]
        for n in rack["nodes"]:
            if n["id"] == "node-003":
                for g in n["gpus"]:
                    g.pop("uuid")
    nodes: dict[str, NodeSeen] = {}
    notes: set[str] = set()
    seen: set[str] = set()
    dcgm, ib = [], []
    with (folder / "metrics.om").open() as fh:
        for line in fh:
            series = line.rstrip("\n").rsplit(" ", 2)[0]
            if series in seen or "{" not in series:
                continue
            seen.add(series)
            if line.startswith("DCGM_FI_DEV_GPU_TEMP"):
                dcgm.append(parse_labels(series, series.index("{"))[0])
            elif line.startswith("node_infiniband_port_data_transmitted_bytes_total"):
                ib.append(parse_labels(series, series.index("{"))[0])
    from_dcgm(dcgm, nodes, notes)
    from_infiniband(ib, nodes, notes)
    found = build_inventory("x", nodes, existing=written)
    inv = parse_inventory(found.yaml())
    original = parse_inventory(text)
    assert inv.resolver.gpu(uuid=original.gpus["node-003/gpu5"].uuid) == "node-003/gpu5"
    assert set(inv.gpus) == set(original.gpus) and inv.cluster == original.cluster
    assert set(inv.switches) == set(original.switches) and set(inv.jobs) == set(original.jobs)
    assert "node-008: rack unknown (put in 'unracked')" in found.unknown
    assert sum("node-008/" in u and "switch port unknown" in u for u in found.unknown) == len(
        [n for n in original.nics if n.startswith("node-008/")])
    assert not any(u.startswith("node-00") and "switch port" in u and not u.startswith("node-008") for u in found.unknown)


SCONTROL = """JobId=4242 JobName=llama-70b
   UserId=ml(1000) GroupId=ml(1000) MCS_label=N/A
   JobState=RUNNING Reason=None Dependency=(null)
   NodeList=node-[001-002] BatchHost=node-001
   NumNodes=2 NumCPUs=128 NumTasks=16 CPUs/Task=8 ReqB:S:C:T=0:0:*:*
     Nodes=node-001 CPU_IDs=0-63 Mem=0 GRES=gpu:h100:8(IDX:0-7)
     Nodes=node-002 CPU_IDs=0-63 Mem=0 GRES=gpu:h100:4(IDX:0-3)

JobId=4243 JobName=queued
   JobState=PENDING Reason=Resources
   NodeList=(null)
"""


def test_slurm_jobs_and_host_lists() -> None:
    assert expand_hostlist("node-[001-003,007],login1") == ["node-001", "node-002", "node-003", "node-007", "login1"]
    assert expand_hostlist("gpu[1-2]-[a,b]") == ["gpu1-a", "gpu1-b", "gpu2-a", "gpu2-b"]
    (job,) = jobs_from_slurm(SCONTROL)
    assert job.id == "llama-70b" and job.nodes == ["node-001", "node-002"]
    assert job.gpus == [("node-001", i, None) for i in range(8)] + [("node-002", i, None) for i in range(4)]


def test_kubernetes_pods_become_jobs() -> None:
    nodes, _ = _dcgm("issue512-h100-mig-excerpt.prom")
    pods = {"items": [
        {"metadata": {"name": "tts-predictor-00011-deployment-5554f75554-8j8pl", "namespace": "model-playground-stg",
                      "labels": {"app": "tts-predictor"}}, "spec": {"nodeName": "gsrh100-074", "containers": []}},
        {"metadata": {"name": "cpu-only", "namespace": "default"}, "spec": {"containers": [{"resources": {}}]}},
        {"metadata": {"name": "waiting", "namespace": "default", "labels": {"job-name": "batch-7"}},
         "spec": {"nodeName": "gsrh100-075", "containers": [{"resources": {"limits": {"nvidia.com/gpu": "2"}}}]}}]}
    jobs = {j.id: j for j in jobs_from_pods(json.dumps(pods), pod_gpus(nodes))}
    assert set(jobs) == {"tts-predictor", "batch-7"}
    assert jobs["tts-predictor"].gpus == [("gsrh100-074", 0, "tts-predictor-00011-deployment-5554f75554-8j8pl")]
    found = build_inventory("k8s", nodes, jobs.values())
    assert "batch-7: on gsrh100-075 but no GPU attributed to it (pods.json)" in found.unknown
    inv = parse_inventory(found.yaml())
    assert inv.jobs["tts-predictor"].ranks[0].gpu == "gsrh100-074/gpu0"
    with pytest.raises(InputError, match=r"pods\.json:1"):
        jobs_from_pods("{not json", {})
