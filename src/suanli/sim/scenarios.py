"""Named scenarios: a cluster, jobs and faults; ``simulate`` writes the scenario folder."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from suanli.sim.cluster import ClusterSpec, SimCluster, build_cluster
from suanli.sim.faults import CATEGORIES, DEFAULT_MAGNITUDE, ROOT_KIND, Fault
from suanli.sim.jobs import JobRequest, place_jobs
from suanli.sim.network import JobNet

__all__ = ["SCENARIOS", "SHAPES", "Scenario", "pick_faults"]

Progress = Callable[[str, int, int], None]

# How a fault may unfold in time: a ``step`` (its usual ramp), a slow ``ramp`` over a quarter to
# two fifths of the window, a ``transient`` that rises and recovers inside the window (5-8 min), or
# ``running`` already when the window opens (``quiet_logs``: with no kernel line left in the window, as
# a link that trained down once and logged its Xid then). Faults that are events (a DBE, a GPU off the bus, a
# hang, an OOM, a link down) only come as steps: their signature is the event.
LEVELS = ("step", "ramp", "transient", "running")
SHAPES: dict[str, tuple[str, ...]] = {c: LEVELS for c in (
    "gpu_memory_degradation", "gpu_thermal", "pcie_riser", "gpu_straggler", "nvlink_degradation",
    "switch_port_errors", "optical_degradation", "storage_slow")}
DEFAULT_RAMP_S = {"gpu_thermal": 120.0, "pcie_riser": 60.0, "optical_degradation": 120.0,
                  "gpu_memory_degradation": 30.0}


@dataclass(frozen=True)
class FaultRequest:
    category: str
    magnitude: float | None = None
    same_root_as: int | None = None     # index of an earlier fault whose root this one shares
    delay_s: float = 0.0                # after the earlier fault / the drawn onset
    precursor_s: float = 0.0            # gpu_memory_failure: SBEs climb this long before the DBE
    shape: str = "step"                 # one of SHAPES[category] (step for every category)
    quiet_logs: bool = False            # running only: its kernel lines all came before the window


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    faults: tuple[FaultRequest, ...] = ()
    jobs: tuple[JobRequest, ...] = (JobRequest(),)
    nodes: int = 8
    minutes: float = 15.0
    nics_per_node: int | None = None
    efficiency: float | None = None
    spare_nodes: int = 1
    gpu_model: str = "H100-SXM"         # a key of suanli.sim.hardware.GPU_CATALOG
    storage_probe: bool = True          # False: no storage latency series (data_load spans only)
    finish_job: bool = False            # a job no fault touches finishes normally in the window


_DESC = {
    "gpu_memory_degradation": "one GPU's single-bit ECC rate climbs past 10/day with correctable row remaps",
    "gpu_memory_failure": "a double-bit ECC error (Xid 48/94/63) kills the job on one GPU; it restarts",
    "gpu_lost": "a GPU falls off the bus (Xid 79), its series stop and the job fails",
    "gpu_thermal": "one GPU overheats, throttles (HW/SW thermal) and slows its job",
    "pcie_riser": "a bad riser: PCIe AER storm and replays, GPU over 85 C, RDMA retransmits on its NIC",
    "gpu_straggler": "one rank's SM clock is low with no error; the whole job waits for it",
    "nvlink_degradation": "NVLink bandwidth of one GPU down 40 % with Xid 74; its tensor-parallel group slows",
    "nvswitch_fault": "an NVSwitch chip fails (fatal SXid on its links, Xid 74 on every GPU of the node); "
                      "the node's NVLink bandwidth drops by the chip's share",
    "switch_port_errors": "a leaf port drops 0.1 % of packets as CRC errors; rings crossing it crawl",
    "optical_degradation": "an optic's pre-FEC BER rises by orders of magnitude; one-way latency up",
    "nic_down": "a NIC's link goes down; its series stop, the job stalls, restarts on the other rails",
    "storage_slow": "a storage system's read latency rises 25x; its readers' data loading grows",
    "collective_hang": "an NCCL collective hangs with no hardware cause; watchdog timeouts, restart",
    "oom": "a rank runs out of GPU memory (CUDA OOM traceback); the job restarts",
}


def _base_scenarios() -> list[Scenario]:
    out = [Scenario("healthy", "no fault: healthy noise only (missed scrapes, resets, NaN, sentinels)",
                    jobs=(JobRequest(), JobRequest()))]
    for cat in CATEGORIES:
        out.append(Scenario(cat, _DESC[cat], (FaultRequest(cat),)))
    return out


def _seed_scenarios() -> list[Scenario]:
    fsdp7 = JobRequest(model="llama-7b", tp=1, pp=1, samples_per_replica=6, overlap_fraction=0.8)
    small = JobRequest(model="gpt-1.3b", tp=1, pp=1, samples_per_replica=4, overlap_fraction=0.95)
    return [
        Scenario("seed_switch_crc", "seed case: CRC ratio 0.1 % on a leaf port, compute share 92 % -> 35 %",
                 (FaultRequest("switch_port_errors", 1e-3),), (fsdp7,), nics_per_node=4, efficiency=0.5,
                 spare_nodes=0),
        Scenario("seed_optical_ber", "seed case: pre-FEC BER 1e-12 -> 5e-10, retransmits up, step 210 -> 230 ms",
                 (FaultRequest("optical_degradation", 5e-10),), (small,), nodes=2, nics_per_node=8,
                 efficiency=0.5, spare_nodes=0),
        Scenario("seed_pcie_riser", "seed case: riser card: AER > 100/min, replays, GPU > 85 C for 5 min",
                 (FaultRequest("pcie_riser"),)),
        Scenario("seed_sbe_then_dbe", "seed case: SBE > 10/day on a GPU ahead of a DBE on the same GPU",
                 (FaultRequest("gpu_memory_failure", precursor_s=240.0),)),
        Scenario("seed_xid79", "seed case: Xid 79, GPU fallen off the bus", (FaultRequest("gpu_lost"),)),
        Scenario("seed_nvlink_40", "seed case: NVLink bandwidth -40 % on one GPU",
                 (FaultRequest("nvlink_degradation", 0.6),)),
        Scenario("seed_thermal_straggler", "seed case: a thermally throttled GPU makes its rank the straggler",
                 (FaultRequest("gpu_thermal", 0.7),)),
        Scenario("seed_hang", "seed case: collective hang with NCCL watchdog timeouts",
                 (FaultRequest("collective_hang"),)),
        Scenario("seed_oom", "seed case: CUDA out of memory, job restarts", (FaultRequest("oom"),)),
        Scenario("mixed_port_thermal", "two faults: a CRC-erroring leaf port and an overheating GPU",
                 (FaultRequest("switch_port_errors"), FaultRequest("gpu_thermal", delay_s=90.0)),
                 (JobRequest(), JobRequest())),
        Scenario("mixed_storage_nvlink", "two faults: slow storage and a degraded NVLink GPU",
                 (FaultRequest("storage_slow"), FaultRequest("nvlink_degradation", delay_s=60.0)),
                 (JobRequest(), JobRequest())),
    ]


SCENARIOS: dict[str, Scenario] = {s.name: s for s in _base_scenarios() + _seed_scenarios()}


def _candidates(c: SimCluster, nets: dict[str, JobNet], category: str) -> list[tuple[str, list[str]]]:
    """Plausible roots for a category, each with the jobs it can touch."""
    kind = ROOT_KIND[category]
    if kind == "gpu":
        return [(g, [j.id]) for j in c.jobs for g in j.ranks]
    if kind == "job":
        return [(j.id, [j.id]) for j in c.jobs]
    if kind == "nvswitch":
        nodes = sorted({g.split("/")[0] for j in c.jobs for g in j.ranks})
        return [(w, [j.id for j in c.jobs if any(g.startswith(n + "/") for g in j.ranks)])
                for n in nodes for w in c.nvswitches(n)]
    if kind == "storage":
        return [(j.storage, [k.id for k in c.jobs if k.storage == j.storage]) for j in c.jobs]
    out: list[tuple[str, list[str]]] = []
    seen: set[str] = set()
    if category == "optical_degradation":   # the receiving side of a hop a ring really uses
        rx = sorted({e for j in c.jobs for hops in nets[j.id].hops for h in hops for e in h.rx})
        return [(e, [k.id for k in c.jobs if e in nets[k.id].entities]) for e in rx]
    for j in c.jobs:
        for e in sorted(nets[j.id].entities):
            if e in seen:
                continue
            ok = ("/mlx5" in e) if kind == "nic" else ("/p" in e and "~" not in e and e.startswith("leaf"))
            if ok:
                seen.add(e)
                out.append((e, [k.id for k in c.jobs if e in nets[k.id].entities]))
    return out



# Faults after which a job no longer steps (it failed, hung or restarts): a later fault lands on
# another job where it can, or its signature would never be written while truth still claims it.
STOPS_JOB: frozenset[str] = frozenset({"gpu_lost", "gpu_memory_failure", "nic_down", "collective_hang", "oom"})


def _shaped(req: FaultRequest, start: float, rng: np.random.Generator, t0: float,
            t1: float) -> tuple[float, float, float | None, str]:
    """(start, ramp, end, shape) of a fault: a shape the window cannot show falls back to a step."""
    ramp = DEFAULT_RAMP_S.get(req.category, 1.0)
    shape = req.shape if req.shape in SHAPES.get(req.category, ("step",)) else "step"
    span = t1 - t0
    if shape == "ramp" and span >= 600:
        ramp = float(rng.uniform(0.25, 0.4)) * span
        return min(start, t1 - 180.0 - ramp), ramp, None, shape
    if shape == "transient" and span >= 600:
        dur = float(rng.uniform(300.0, 480.0))
        start = max(t0 + 60.0, min(start, t1 - 120.0 - dur))
        return start, ramp, start + dur, shape
    if shape == "running":
        return t0 - float(rng.uniform(120.0, 1800.0)), ramp, None, shape
    return start, ramp, None, "step"


def _default_magnitude(category: str, c: SimCluster) -> float:
    """The category's default; a failing NVSwitch chip takes its share of every GPU's links: one of
    the baseboard's chips (4 on H100: x0.75; 6 on A100; 2 on B200)."""
    if category == "nvswitch_fault":
        return 1.0 - 1.0 / c.gpu.nvswitches
    return DEFAULT_MAGNITUDE[category]


def pick_faults(sc: Scenario, c: SimCluster, nets: dict[str, JobNet], rng: np.random.Generator,
                t0: float, t1: float) -> list[Fault]:
    """Draws each fault's root among plausible entities and its onset a third to half into the window."""
    faults: list[Fault] = []
    onset = t0 + (t1 - t0) * float(rng.uniform(1 / 3, 1 / 2))
    for req in sc.faults:
        mag = req.magnitude if req.magnitude is not None else _default_magnitude(req.category, c)
        if req.same_root_as is not None:
            prev = faults[req.same_root_as]
            root, jobs, start = prev.root, list(prev.jobs), prev.start_s + req.delay_s
        else:
            cands = _candidates(c, nets, req.category)
            used = {f.root for f in faults}
            cands = [x for x in cands if x[0] not in used] or cands
            stopped = {j for f in faults if f.category in STOPS_JOB for j in f.jobs}
            cands = [x for x in cands if not set(x[1]) & stopped] or cands
            root, jobs = cands[int(rng.integers(0, len(cands)))]
            start = onset + req.delay_s
        start, ramp, end, shape = _shaped(req, start, rng, t0, t1) if req.shape != "step" else \
            (start, DEFAULT_RAMP_S.get(req.category, 1.0), None, "step")
        faults.append(Fault(req.category, root, round(start, 3), mag, None if end is None else round(end, 3), ramp,
                            True, req.precursor_s, sorted(jobs), shape, req.quiet_logs and shape == "running"))
    return faults


def build_for(sc: Scenario, rng: np.random.Generator, nodes: int, t0: float, seed: int) -> SimCluster:
    nics = sc.nics_per_node or (4 if rng.random() < 0.5 else 8)
    spec = ClusterSpec(nodes=nodes, gpu_model=sc.gpu_model, nics_per_node=nics,
                       spare_nodes=sc.spare_nodes if nodes >= 4 else 0, k8s_pod_labels=bool(rng.random() < 0.5),
                       spines=2 if nodes <= 64 else 8, uplinks_per_leaf=8)
    c = build_cluster(spec, rng, f"sim-{sc.name.replace('_', '-')}-{seed}")
    reqs = list(sc.jobs) if nodes >= 2 * len(sc.jobs) else list(sc.jobs[:1])
    place_jobs(c, rng, reqs, t0)
    return c
