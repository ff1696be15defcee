"""Peers doing the same work: who they are (worked out by hand from the placement), and the NVLink
detector judged against them on hand-built fleets: a job's GPUs falling together is no GPU fault,
one GPU falling among steady peers is, and so is one that was low among them from the start."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from suanli.analysis.health import analyze
from suanli.analysis.health import events as hw
from suanli.analysis.health.peers import work_peers
from suanli.inventory.model import Gpu, Job, ModelShape, Rank
from tests.analysis.health.test_health import FAULT_S, STEP_S, T0, build

BUSY_UTIL = 90.0


def _job(job_id: str, gpus: list[str], tp: int) -> Job:
    ranks = tuple(Rank(job_id, i, g) for i, g in enumerate(gpus))
    return Job(job_id, None, None, ModelShape(), "bf16", {"tp": tp, "dp": len(gpus) // tp, "pp": 1}, ranks)


def _gpus(nodes: int) -> dict[str, Gpu]:
    return {f"node-{n:03d}/gpu{i}": Gpu(f"node-{n:03d}/gpu{i}", f"node-{n:03d}", i, None, None, "H100-SXM")
            for n in range(1, nodes + 1) for i in range(8)}


def test_peers_are_the_same_job_on_the_node_and_the_tp_group() -> None:
    gpus = _gpus(3)
    # job a: node-001 gpu0-3 and node-002 gpu0-3, tp=8 (one TP group over both nodes)
    a = [f"node-001/gpu{i}" for i in range(4)] + [f"node-002/gpu{i}" for i in range(4)]
    # job b: node-002 gpu4-7 and node-003 gpu4-7, tp=1 (no TP group, pure data parallel)
    b = [f"node-002/gpu{i}" for i in range(4, 8)] + [f"node-003/gpu{i}" for i in range(4, 8)]
    # job c: a single GPU, node-001/gpu4; node-001 gpu5-7 and node-003 gpu0-3 run nothing
    c = ["node-001/gpu4"]
    peers = work_peers(gpus, {"a": _job("a", a, 8), "b": _job("b", b, 1), "c": _job("c", c, 1)})
    # a's TP group spans both nodes: all seven others
    assert peers["node-001/gpu0"] == tuple(sorted(set(a) - {"node-001/gpu0"}))
    # b on node-002: its three node mates of job b (not job a's GPUs on the same node)
    assert peers["node-002/gpu5"] == ("node-002/gpu4", "node-002/gpu6", "node-002/gpu7")
    # the only GPU of its job: no peer (no other GPU does its work)
    assert peers["node-001/gpu4"] == ()
    # idle GPUs: the node's other idle ones
    assert peers["node-001/gpu6"] == ("node-001/gpu5", "node-001/gpu7")
    assert peers["node-003/gpu0"] == ("node-003/gpu1", "node-003/gpu2", "node-003/gpu3")


def _with_jobs(tmp_path: Path, mutate, jobs_of) -> tuple[object, object]:  # type: ignore[no-untyped-def]
    store, inv = build(tmp_path, mutate, nodes=2)
    inv.jobs = jobs_of(inv.gpus)
    return store, inv


def _one_job_per_node(gpus: dict[str, Gpu]) -> dict[str, Job]:
    """Job j1 on node-001 (tp 8), job j2 on node-002 (tp 8)."""
    return {j: _job(j, [g for g in gpus if g.startswith(node)], 8)
            for j, node in (("j1", "node-001/"), ("j2", "node-002/"))}


def _stalled_link(rng: np.random.Generator, n: int) -> np.ndarray:
    """What a hung all-reduce leaves on NVLink: a few kB/s of chatter (public sample: 8 kB/s-1 MB/s)."""
    return np.abs(rng.normal(5e4, 5e4, n))


def test_stalled_job_with_all_eight_gpus_dropping_is_no_gpu_finding(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)

    def stall(gid: str, metric: str, t: np.ndarray, v: np.ndarray) -> np.ndarray:
        after = t >= FAULT_S
        if gid.startswith("node-001/") and metric == hw.NVLINK_BW:
            return np.where(after, _stalled_link(rng, len(v)), v)
        if gid.startswith("node-001/") and metric == hw.GPU_UTIL:
            return np.where(after, BUSY_UTIL, v)          # a spinning NCCL kernel keeps the GPU "busy"
        return v

    res = analyze(*_with_jobs(tmp_path, stall, _one_job_per_node))  # type: ignore[arg-type]
    assert [f for f in res.findings if f.category == "nvlink_degradation"] == []


def test_one_gpu_dropping_among_seven_steady_peers_is_found(tmp_path: Path) -> None:
    target = "node-002/gpu5"

    def one(gid: str, metric: str, t: np.ndarray, v: np.ndarray) -> np.ndarray:
        if gid == target and metric == hw.NVLINK_BW:
            return np.where(t >= FAULT_S, v * 0.6, v)       # -40 %: 0.6 < 0.7 of its own and its peers'
        return v

    res = analyze(*_with_jobs(tmp_path, one, _one_job_per_node))  # type: ignore[arg-type]
    assert [(f.category, f.entity_id) for f in res.findings] == [("nvlink_degradation", target)]
    assert abs(res.findings[0].start - FAULT_S) <= STEP_S + 1
    assert "7 peers" in res.findings[0].evidence[0]


def test_a_drop_of_less_than_the_bar_is_not_found(tmp_path: Path) -> None:
    def mild(gid: str, metric: str, t: np.ndarray, v: np.ndarray) -> np.ndarray:
        if gid == "node-002/gpu5" and metric == hw.NVLINK_BW:
            return np.where(t >= FAULT_S, v * 0.85, v)      # -15 %: above the 0.7 bar
        return v

    assert analyze(*_with_jobs(tmp_path, mild, _one_job_per_node)).findings == []  # type: ignore[arg-type]


def test_node_mates_of_another_job_that_stalls_are_not_the_peers(tmp_path: Path) -> None:
    # node-002: gpu0-3 belong to job j1 (with all of node-001; TP groups of 4), gpu4-7 to job j2.
    # j2 stalls; one GPU of j1 on node-002 loses 60 % of its NVLink while its TP group holds.
    target = "node-002/gpu1"
    rng = np.random.default_rng(4)

    def jobs(gpus: dict[str, Gpu]) -> dict[str, Job]:
        j1 = [f"node-001/gpu{i}" for i in range(8)] + [f"node-002/gpu{i}" for i in range(4)]
        return {"j1": _job("j1", j1, 4), "j2": _job("j2", [f"node-002/gpu{i}" for i in range(4, 8)], 4)}

    def mutate(gid: str, metric: str, t: np.ndarray, v: np.ndarray) -> np.ndarray:
        after = t >= FAULT_S
        if metric == hw.NVLINK_BW and gid in {f"node-002/gpu{i}" for i in range(4, 8)}:
            return np.where(after, _stalled_link(rng, len(v)), v)
        if metric == hw.NVLINK_BW and gid == target:
            return np.where(after, v * 0.4, v)
        return v

    res = analyze(*_with_jobs(tmp_path, mutate, jobs))  # type: ignore[arg-type]
    assert [(f.category, f.entity_id) for f in res.findings] == [("nvlink_degradation", target)]


def test_job_that_finishes_and_idle_spare_node_raise_nothing(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)

    def jobs(gpus: dict[str, Gpu]) -> dict[str, Job]:    # node-002 is a spare: no job
        return {"j1": _job("j1", [g for g in gpus if g.startswith("node-001/")], 8)}

    def mutate(gid: str, metric: str, t: np.ndarray, v: np.ndarray) -> np.ndarray:
        idle = np.ones(len(v), dtype=bool) if gid.startswith("node-002/") else t >= FAULT_S
        if metric == hw.NVLINK_BW:
            return np.where(idle, np.abs(rng.normal(8e5, 4e5, len(v))), v)    # idle chatter
        if metric == hw.GPU_UTIL:
            return np.where(idle, 0.0, v)
        if metric == hw.POWER:
            return np.where(idle, 70.0 + rng.normal(0, 2, len(v)), v)
        return v

    assert analyze(*_with_jobs(tmp_path, mutate, jobs)).findings == []  # type: ignore[arg-type]


def _share_of_peers(evidence: str) -> float:
    """The "NN% of the X GB/s its peers ... move" figure of an NVLink finding's evidence."""
    return float(re.search(r"\((\d+)% of the [\d.]+ GB/s its", evidence).group(1)) / 100  # type: ignore[union-attr]


def test_a_link_bad_before_the_window_opened_is_found_against_its_peers(tmp_path: Path) -> None:
    # node-002/gpu5 moves 0.6 of what it should from the first sample on: against its own baseline
    # it never drops, against its 7 peers of job j2 (45 GB/s each) it is at 0.6 < 0.7 all along
    target = "node-002/gpu5"

    def low(gid: str, metric: str, t: np.ndarray, v: np.ndarray) -> np.ndarray:
        return v * 0.6 if gid == target and metric == hw.NVLINK_BW else v

    res = analyze(*_with_jobs(tmp_path, low, _one_job_per_node))  # type: ignore[arg-type]
    assert [(f.category, f.entity_id) for f in res.findings] == [("nvlink_degradation", target)]
    (f,) = res.findings
    assert f.start - T0 <= 1.0                                   # from the window's first sample
    assert _share_of_peers(f.evidence[0]) == pytest.approx(0.6, abs=0.03)
    assert "7 peers" in f.evidence[0]


def test_a_gpu_at_0_8_of_its_peers_all_along_is_not_found(tmp_path: Path) -> None:
    def low(gid: str, metric: str, t: np.ndarray, v: np.ndarray) -> np.ndarray:
        return v * 0.8 if gid == "node-002/gpu5" and metric == hw.NVLINK_BW else v   # 0.8 > the 0.7 bar

    assert analyze(*_with_jobs(tmp_path, low, _one_job_per_node)).findings == []  # type: ignore[arg-type]


def test_a_job_that_moves_less_nvlink_than_another_is_not_a_fault(tmp_path: Path) -> None:
    # j1 (node-001) moves 0.4 of j2's NVLink traffic all along (a smaller model, another parallelism):
    # its GPUs are judged against j1's, never against j2's
    def small(gid: str, metric: str, t: np.ndarray, v: np.ndarray) -> np.ndarray:
        return v * 0.4 if gid.startswith("node-001/") and metric == hw.NVLINK_BW else v

    assert analyze(*_with_jobs(tmp_path, small, _one_job_per_node)).findings == []  # type: ignore[arg-type]
