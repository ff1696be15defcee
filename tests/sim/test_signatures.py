"""Each fault's signature is where physics puts it and nowhere else, checked against the topology
that the project's own inventory loader derives from the written inventory.yaml."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from suanli.inventory import load_inventory
from suanli.sim import FaultRequest, JobRequest, Scenario, simulate, simulate_custom
from tests.sim._read import by, growth, metrics, spans, truth

SLOW_JOB = JobRequest(model="llama-7b", tp=1, pp=1, samples_per_replica=6, overlap_fraction=0.8)


def _step_times(sp: list[dict], job: str, a: float, b: float) -> list[float]:
    return [s["end"] - s["start"] for s in sp if s["name"] == "train_step" and s["job"] == job
            and s["rank"] == 0 and a <= s["start"] < b]


def test_bad_port_hits_only_the_nics_and_jobs_behind_it(tmp_path: Path) -> None:
    sc = Scenario("two_jobs_bad_port", "", (FaultRequest("switch_port_errors", 1e-3),), (SLOW_JOB, SLOW_JOB),
                  nodes=8, nics_per_node=4, efficiency=0.5, spare_nodes=0)
    d = simulate_custom(sc, tmp_path / "s", seed=3, minutes=8)
    tr = truth(d)
    fault = tr["faults"][0]
    port, onset = fault["root_cause"]["id"], fault["start_s"]
    topo = load_inventory(d / "inventory.yaml").topology
    crossing = {j for j in topo.inv.jobs if port in topo.job_network(j)}
    assert set(fault["jobs"]) == crossing
    assert len(crossing) == 1          # one job per rack, no spine crossing: the other job is a control
    senders = {na for j in crossing for (na, _), (ents, _) in topo.job_nic_pairs(j).items() if port in ents}
    retx = {f"{n}/{c}": growth(s) for (n, c), s in by(metrics(d, "suanli_rdma_retransmits_total"), "node", "nic").items()}
    hot = {nic for nic, g in retx.items() if g > 5000}   # background is ~0.3/s: < 200 in 8 minutes
    assert hot and hot <= senders
    behind = [n for n, nic in topo.inv.nics.items() if nic.switch_port == port]
    assert all(n in hot for n in behind)
    crc = {f"{s}/{p}": growth(v) for (s, p), v in by(metrics(d, "suanli_switch_port_crc_errors_total"), "switch", "port").items()}
    assert crc[port] > 0 and all(g == 0 for p, g in crc.items() if p != port)
    sp = spans(d)
    t1 = max(s["end"] for s in sp)
    for j in topo.inv.jobs:
        ratio = statistics.median(_step_times(sp, j, onset + 120, t1)) / statistics.median(_step_times(sp, j, 0, onset))
        if j in crossing:
            assert ratio > 1.5
        else:
            assert ratio == pytest.approx(1.0, abs=0.03)


def test_storage_slow_grows_only_its_readers_data_load(tmp_path: Path) -> None:
    d = simulate("mixed_storage_nvlink", tmp_path / "s", seed=1, minutes=10)
    tr = truth(d)
    slow = next(f for f in tr["faults"] if f["category"] == "storage_slow")
    inv = load_inventory(d / "inventory.yaml")
    readers = {j.id for j in inv.jobs.values() if j.storage == slow["root_cause"]["id"]}
    assert readers and readers != set(inv.jobs)
    sp = [s for s in spans(d) if s["name"] == "data_load"]
    for j in inv.jobs:
        before = statistics.mean(s["end"] - s["start"] for s in sp if s["job"] == j and s["start"] < slow["start_s"])
        after = statistics.mean(s["end"] - s["start"] for s in sp if s["job"] == j and s["start"] > slow["start_s"] + 30)
        if j in readers:
            assert after / before > 5     # read latency x25 at full ramp
        else:
            assert after / before == pytest.approx(1.0, abs=0.1)


def _temps(d: Path, family: str) -> dict[str, list[tuple[float, float]]]:
    return {f"{h}/gpu{g}": s for (h, g), s in by(metrics(d, family), "Hostname", "gpu").items()}


def test_thermal_only_on_the_root_gpu(tmp_path: Path) -> None:
    d = simulate("gpu_thermal", tmp_path / "s", seed=2, nodes=4, minutes=10)
    root = truth(d)["faults"][0]["root_cause"]["id"]
    valid = lambda s: [v for _, v in s if v < 1e6]   # noqa: E731 - drop DCGM blank sentinels
    hot = {g for g, s in _temps(d, "DCGM_FI_DEV_GPU_TEMP").items() if max(valid(s)) > 85}
    assert hot == {root}
    throttled = {g for g, s in _temps(d, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS").items() if max(valid(s)) > 0}
    assert throttled == {root}
    clocks = {g: min(valid(s)) for g, s in _temps(d, "DCGM_FI_DEV_SM_CLOCK").items()}
    assert min(clocks, key=lambda g: clocks[g]) == root
    assert clocks[root] < 0.8 * 1980    # clock factor 0.72 at full ramp


def test_gpu_lost_stops_only_its_series_and_the_job(tmp_path: Path) -> None:
    d = simulate("gpu_lost", tmp_path / "s", seed=1, nodes=4, minutes=8)
    f = truth(d)["faults"][0]
    root, t = f["root_cause"]["id"], f["start_s"]
    last = {g: max(ts for ts, _ in s) for g, s in _temps(d, "DCGM_FI_DEV_GPU_UTIL").items()}
    assert last[root] < t + 30
    assert all(v > t + 60 for g, v in last.items() if g != root)
    node = root.split("/gpu")[0]
    kernel = (d / "kernel.log").read_text()
    assert f" {node} kernel: NVRM: Xid " in kernel and "): 79," in kernel
    assert not [s for s in spans(d) if s["job"] in f["jobs"] and s["name"] == "train_step" and s["start"] > t]


def test_nic_down_counts_and_stops_only_that_nic(tmp_path: Path) -> None:
    d = simulate("nic_down", tmp_path / "s", seed=4, nodes=4, minutes=8)
    f = truth(d)["faults"][0]
    node, nic = f["root_cause"]["id"].split("/")
    downs = by(metrics(d, "node_infiniband_link_downed_total"), "instance", "device")
    assert {k for k, s in downs.items() if max(v for _, v in s) > 0} == {(f"{node}:9100", nic)}
    ends = {k: max(ts for ts, _ in s) for k, s in downs.items()}
    assert ends[(f"{node}:9100", nic)] < f["start_s"] + 30
    assert all(v > f["start_s"] + 60 for k, v in ends.items() if k != (f"{node}:9100", nic))


def test_hang_has_watchdogs_and_no_hardware_evidence(tmp_path: Path) -> None:
    d = simulate("collective_hang", tmp_path / "s", seed=5, nodes=4, minutes=12)
    f = truth(d)["faults"][0]
    trainer = (d / "trainer.log").read_text()
    assert "Watchdog caught collective operation timeout" in trainer
    assert "Xid" not in (d / "kernel.log").read_text()
    steps = [s["start"] for s in spans(d) if s["name"] == "train_step" and s["job"] == f["root_cause"]["id"]]
    assert not [t for t in steps if f["start_s"] < t < f["start_s"] + 60]


def test_oom_traceback_and_restart(tmp_path: Path) -> None:
    d = simulate("oom", tmp_path / "s", seed=6, nodes=4, minutes=12)
    f = truth(d)["faults"][0]
    assert "torch.OutOfMemoryError: CUDA out of memory" in (d / "trainer.log").read_text()
    sp = spans(d)
    assert any(s["name"] == "init" and s["start"] > f["start_s"] for s in sp)
    assert any(s["name"] == "train_step" and s["start"] > f["start_s"] + 60 for s in sp)


def test_healthy_has_no_fault_evidence(tmp_path: Path) -> None:
    d = simulate("healthy", tmp_path / "s", seed=8, nodes=4, minutes=6)
    assert truth(d)["faults"] == []
    assert "Xid" not in (d / "kernel.log").read_text()
    trainer = (d / "trainer.log").read_text()
    assert "NCCL WARN" not in trainer and "Watchdog" not in trainer
    assert all(growth(s) == 0 for s in metrics(d, "suanli_switch_port_crc_errors_total").values())
    assert all(growth(s) == 0 for s in metrics(d, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL").values())


def test_seed_sbe_rate_ahead_of_dbe(tmp_path: Path) -> None:
    d = simulate("seed_sbe_then_dbe", tmp_path / "s", seed=1, nodes=4, minutes=15)
    f = truth(d)["faults"][0]
    sbe = _temps(d, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL")
    root = f["root_cause"]["id"]
    before = [(t, v) for t, v in sbe[root] if t < f["start_s"]]
    per_day = growth(before) / (before[-1][0] - before[0][0]) * 86400
    assert per_day > 10                  # seed: more than 10 SBE a day ahead of the DBE
    assert all(growth(s) == 0 for g, s in sbe.items() if g != root)
    dbe = _temps(d, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL")
    assert max(v for t, v in dbe[root] if t > f["start_s"] + 15) >= 1
    assert "): 48," in (d / "kernel.log").read_text()


def test_seed_nvlink_bandwidth_down_40_percent(tmp_path: Path) -> None:
    d = simulate("seed_nvlink_40", tmp_path / "s", seed=2, nodes=4, minutes=10)
    f = truth(d)["faults"][0]
    bw = _temps(d, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL")[f["root_cause"]["id"]]
    before = statistics.median(v for t, v in bw if t < f["start_s"] and v < 1e13)
    after = statistics.median(v for t, v in bw if t > f["start_s"] + 30 and v < 1e13)
    assert after / before == pytest.approx(0.6, rel=0.1)
    assert "): 74," in (d / "kernel.log").read_text()


def test_seed_riser_aer_rate_and_heat(tmp_path: Path) -> None:
    d = simulate("seed_pcie_riser", tmp_path / "s", seed=3, nodes=4, minutes=15)
    f = truth(d)["faults"][0]
    node = f["root_cause"]["id"].split("/gpu")[0]
    bus = load_inventory(d / "inventory.yaml").gpus[f["root_cause"]["id"]].pci_bus_id or ""
    aer = by(metrics(d, "suanli_pcie_aer_errors_total"), "node", "pci_bus_id", "severity")
    per_min = {k: growth([(t, v) for t, v in s if t > f["start_s"] + 90]) for k, s in aer.items()}
    hot = {k for k, g in per_min.items() if g > 0}
    assert len(hot) == 1 and next(iter(hot))[:3] == (node, bus[4:].lower(), "corrected")
    span_min = (truth(d)["faults"][0]["start_s"] + 90, max(t for t, _ in next(iter(aer.values()))))
    assert per_min[next(iter(hot))] / ((span_min[1] - span_min[0]) / 60) > 100
    temps = [(t, v) for t, v in _temps(d, "DCGM_FI_DEV_GPU_TEMP")[f["root_cause"]["id"]] if 85 < v < 1e6]
    assert temps[-1][0] - temps[0][0] >= 300


def test_nvswitch_fault_cuts_every_gpu_of_its_node_by_the_chips_share(tmp_path: Path) -> None:
    d = simulate("nvswitch_fault", tmp_path / "s", seed=4, nodes=4, minutes=10)
    f = truth(d)["faults"][0]
    root = f["root_cause"]["id"]
    node, chip = root.split("/nvswitch")
    assert f["root_cause"]["kind"] == "nvswitch"
    inv = load_inventory(d / "inventory.yaml")
    assert [w.index for w in inv.nodes[node].nvswitches] == [0, 1, 2, 3]      # an H100 baseboard's four chips
    pci = (inv.nvswitches[root].pci_bus_id or "")[4:].lower()
    lines = (d / "kernel.log").read_text().splitlines()
    sxid = [x for x in lines if "SXid" in x]
    fatal = [x for x in sxid if ", Fatal, Link " in x]
    # one fatal LTSSM Fault Up record per link to each of the node's 8 GPUs, three lines each, on that chip only
    assert len(sxid) == 3 * 8 and len(fatal) == 8
    assert all(f" {node} kernel: nvidia-nvswitch{chip}: SXid (PCI:{pci}): 20034, " in x for x in sxid)
    buses = {g.pci_bus_id[4:-2].lower(): g.id for g in inv.gpus.values() if g.node == node and g.pci_bus_id}
    xid74 = {buses[x.split("Xid (PCI:")[1].split(")")[0]] for x in lines if f" {node} kernel: NVRM: Xid" in x and "): 74," in x}
    assert xid74 == {g.id for g in inv.gpus.values() if g.node == node}
    assert not [x for x in lines if "Xid" in x and f" {node} kernel:" not in x]
    bw = _temps(d, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL")
    job_gpus = {r.gpu for j in inv.jobs.values() for r in j.ranks}
    for gid in sorted(job_gpus):
        before = statistics.median(v for t, v in bw[gid] if t < f["start_s"] and v < 1e13)
        after = statistics.median(v for t, v in bw[gid] if t > f["start_s"] + 30 and v < 1e13)
        # the chip carries a quarter of each GPU's links: its GPUs keep 1 - 1/4 of their bandwidth
        assert after / before == pytest.approx(0.75 if gid.startswith(node + "/") else 1.0, abs=0.04), gid


@pytest.mark.parametrize("model,chips", [("A100-SXM", 6), ("B200", 2)])
def test_nvswitch_fault_takes_one_chips_share_on_other_baseboards(model: str, chips: int, tmp_path: Path) -> None:
    sc = Scenario("nvs", "", (FaultRequest("nvswitch_fault"),), (JobRequest(),), nodes=4, gpu_model=model)
    d = simulate_custom(sc, tmp_path / "s", seed=5, minutes=8)
    f = truth(d)["faults"][0]
    node = f["root_cause"]["id"].split("/")[0]
    assert len(load_inventory(d / "inventory.yaml").nodes[node].nvswitches) == chips
    assert f["params"]["magnitude"] == pytest.approx(1 - 1 / chips)          # 5/6 on A100, 1/2 on B200
