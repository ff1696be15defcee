"""Public entry points: ``list_scenarios``, ``simulate``, ``demo_cluster``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from suanli.errors import InputError
from suanli.sim.cluster import MAX_NODES, MIN_NODES, SimCluster
from suanli.sim.families import families
from suanli.sim.faults import Effects, Fault
from suanli.sim.inventory_writer import write_inventory
from suanli.sim.jobs import JobRequest
from suanli.sim.logs import kernel_lines, trainer_lines, write_log
from suanli.sim.metrics import World
from suanli.sim.network import build_jobnet
from suanli.sim.nuisances import NuisancePlan, Nuisances, plan_nuisances
from suanli.sim.otlp import write_traces
from suanli.sim.physics import PhysicsConfig
from suanli.sim.scenarios import (
    SCENARIOS,
    STOPS_JOB,
    FaultRequest,
    Progress,
    Scenario,
    build_for,
    pick_faults,
)
from suanli.sim.state import gpu_grid
from suanli.sim.timeline import Interrupt, JobTimeline, TimingConfig, run_job
from suanli.sim.writers import write_openmetrics
from suanli.timefmt import to_rfc3339

__all__ = ["demo_cluster", "list_scenarios", "simulate", "simulate_custom"]

SCRAPE_S = 15.0


def list_scenarios() -> list[tuple[str, str]]:
    """(name, one-line description) of every scenario ``simulate`` knows."""
    return [(s.name, s.description) for s in SCENARIOS.values()]


def _interrupts(c: SimCluster, faults: list[Fault], nets: dict[str, Any]) -> dict[str, list[Interrupt]]:
    out: dict[str, list[Interrupt]] = {j.id: [] for j in c.jobs}
    for f in faults:
        for j in c.jobs:
            rank = j.ranks.index(f.root) if f.root in j.ranks else 0
            if f.category == "collective_hang" and f.root == j.id:
                out[j.id].append(Interrupt(f.start_s, "stall", f.category, int(len(j.ranks) // 2)))
            elif f.category == "oom" and f.root == j.id:
                out[j.id].append(Interrupt(f.start_s, "crash", f.category, int(len(j.ranks) // 3)))
            elif f.category == "gpu_memory_failure" and f.root in j.ranks:
                out[j.id].append(Interrupt(f.start_s, "crash", f.category, rank))
            elif f.category == "gpu_lost" and f.root in j.ranks:
                out[j.id].append(Interrupt(f.start_s, "dead", f.category, rank))
            elif f.category == "nic_down" and f.root in nets[j.id].entities:
                out[j.id].append(Interrupt(f.start_s, "stall", f.category, 0))
    return out


def _summary(tl: JobTimeline, a: float, b: float) -> dict[str, Any] | None:
    t0 = tl.step_starts()
    sel = np.flatnonzero((t0 >= a) & (t0 < b))
    if len(sel) == 0:
        return None
    step = np.asarray(tl.step_s)[sel]
    comp = np.array([float(np.mean(tl.fwd[k] + tl.bwd[k])) for k in sel]) / step
    return {"steps": len(sel), "median_step_s": round(float(np.median(step)), 4),
            "compute_share": round(float(np.median(comp)), 4)}


def _fault_truth(f: Fault) -> dict[str, Any]:
    return {"category": f.category, "root_cause": {"kind": f.kind, "id": f.root}, "start": to_rfc3339(f.start_s),
            "end": to_rfc3339(f.end_s), "jobs": f.jobs,
            "params": {"magnitude": f.magnitude, "shape": f.shape, "ramp_s": round(f.ramp_s, 1),
                       "quiet_logs": f.quiet_logs}}


def _truth(sc: Scenario, seed: int, c: SimCluster, faults: list[Fault], tls: list[JobTimeline],
           t0: float, t1: float, files: dict[str, int], n_pairs: int) -> dict[str, Any]:
    onset = min((f.start_s for f in faults), default=t1)
    jobs = []
    for tl in tls:
        j = tl.job
        d: dict[str, Any] = {"id": j.id, "style": j.style, "parallelism": {"dp": j.dp, "tp": j.tp, "pp": j.pp},
                             "world": j.world, "tokens_per_step": j.tokens_per_step,
                             "before_fault": _summary(tl, t0 - 60.0, onset)}
        if faults:
            d["during_fault"] = _summary(tl, onset + 120.0, t1)
        jobs.append(d)
    return {"scenario": sc.name, "seed": seed, "generator": "suanli.sim",
            "window": {"start": to_rfc3339(t0), "end": to_rfc3339(t1)},
            "faults": [_fault_truth(f) for f in faults],
            "cluster": {"nodes": len(c.nodes), "gpu_model": c.gpu.name, "nics_per_node": c.spec.nics_per_node,
                        "spare_nodes": c.spare, "k8s_pod_labels": c.spec.k8s_pod_labels, "latency_pairs": n_pairs},
            "jobs": jobs, "files": files,
            "variants": {"storage_probe": sc.storage_probe,
                         "finished_jobs": [{"id": tl.job.id, "at": to_rfc3339(tl.finished_s)}
                                           for tl in tls if tl.finished_s is not None]}}


def _pairs(n: int) -> list[tuple[int, int]]:
    if n <= 16:
        return [(a, b) for a in range(n) for b in range(n) if a != b]
    return sorted({(a, (a + d) % n) for a in range(n) for d in (1, n - 1, n // 2, 4) if (a + d) % n != a})


def _finishing(sc: Scenario, c: SimCluster, faults: list[Fault], seed: int, t0: float, t1: float) -> dict[str, float]:
    """The job that ends normally in the window (``Scenario.finish_job``): one no fault touches."""
    touched = {j for f in faults for j in f.jobs}
    calm = [j.id for j in c.jobs if j.id not in touched]
    if not sc.finish_job or not calm or t1 - t0 < 300:
        return {}
    rng = np.random.default_rng([seed, *b"finish"])
    return {calm[int(rng.integers(0, len(calm)))]: t0 + float(rng.uniform(0.4, 0.85)) * (t1 - t0)}


def _hang_ends(faults: list[Fault], tls: list[JobTimeline], t1: float) -> None:
    """A hang is over when its job steps again after the restart (left open if that is past the window)."""
    for f in faults:
        tl = next((x for x in tls if x.job.id == f.root), None)
        if f.category == "collective_hang" and tl is not None:
            resumes = [c for a, _, c in tl.inits if a > f.start_s]
            if resumes and resumes[0] < t1:
                f.end_s = round(resumes[0], 3)


def _run(sc: Scenario, out: Path, seed: int, nodes: int, minutes: float, progress: Progress | None,
         nz: Nuisances) -> Path:
    rng = np.random.default_rng([seed, *sc.name.encode()])
    cfg, tm = PhysicsConfig(), TimingConfig()
    t0 = float(np.floor((1772323200 + rng.uniform(0, 60) * 86400) / SCRAPE_S) * SCRAPE_S)
    t1 = t0 + minutes * 60.0
    c = build_for(sc, rng, nodes, t0, seed)
    nets = {j.id: build_jobnet(c, j, cfg) for j in c.jobs}
    faults = pick_faults(sc, c, nets, rng, t0, t1)
    fx = Effects(faults, cfg)
    intr = _interrupts(c, faults, nets)
    ts = t0 + SCRAPE_S * np.arange(int(minutes * 60.0 / SCRAPE_S))
    plan = plan_nuisances(nz, c, faults, ts, seed, {j for f in faults if f.category in STOPS_JOB for j in f.jobs})
    finish = _finishing(sc, c, faults, seed, t0, t1)
    out.mkdir(parents=True, exist_ok=True)
    write_inventory(c, out / "inventory.yaml", t0)
    tls = []
    for i, j in enumerate(c.jobs):
        _say(progress, "jobs", i, len(c.jobs))
        eff = sc.efficiency or float(rng.uniform(cfg.efficiency_low, cfg.efficiency_high))
        slow = plan.long_checkpoint[1:] if plan.long_checkpoint and plan.long_checkpoint[0] == j.id else None
        tl = JobTimeline(j, nets[j.id], efficiency=eff, slow_checkpoint=slow, keep_hung_step=nz.job_state_telemetry)
        run_job(c, tl, fx, cfg, tm, np.random.default_rng([seed, i, 5]), t0 - float(rng.uniform(0, 20)), t1,
                int(rng.integers(10000, 90000)), intr[j.id], finish.get(j.id))
        tls.append(tl)
    _hang_ends(faults, tls, t1)
    pairs = _pairs(len(c.nodes))
    world = World(c, tls, fx, cfg, tm, ts, gpu_grid(c, tls, ts), seed, pairs, nz=nz, storage_probe=sc.storage_probe)
    files = _write_files(world, out, faults, plan, progress)
    truth = _truth(sc, seed, c, faults, tls, t0, t1, files, len(pairs))
    truth["nuisances"] = {**plan.truth(c, ts), **world.noise_log}
    (out / "truth.json").write_text(json.dumps(truth, indent=2) + "\n", encoding="utf-8")
    return out


def _say(progress: Progress | None, what: str, i: int, n: int) -> None:
    if progress is not None:
        progress(what, i, n)


def _write_files(w: World, out: Path, faults: list[Fault], plan: NuisancePlan,
                 progress: Progress | None) -> dict[str, int]:
    def fams() -> Any:
        for i, fam in enumerate(families(w)):
            _say(progress, "metrics", i, 30)
            yield fam

    t0, t1 = float(w.ts[0]), float(w.ts[-1]) + SCRAPE_S
    with (out / "metrics.om").open("w", encoding="utf-8") as f:
        samples = write_openmetrics(f, fams(), w.ts, w.seed, plan)
    with (out / "traces.otlp.jsonl").open("w", encoding="utf-8") as f:
        lines, spans = write_traces(f, w.cluster, w.tls, w.seed, w.nz.gpu_id_attr)
    rng = np.random.default_rng([w.seed, 99])
    with (out / "kernel.log").open("w", encoding="utf-8") as f:
        nk = write_log(f, kernel_lines(w.cluster, faults, t0, t1, rng, w.nz.log_noise))
    with (out / "trainer.log").open("w", encoding="utf-8") as f:
        nt = write_log(f, trainer_lines(w.cluster, w.tls, rng, w.nz.log_noise))
    _say(progress, "done", 1, 1)
    return {"samples": samples, "trace_lines": lines, "spans": spans, "kernel_records": nk, "trainer_records": nt}


def simulate(scenario: str, out: Path, *, seed: int = 0, nodes: int | None = None, minutes: float | None = None,
             progress: Progress | None = None, nuisances: Nuisances | None = None) -> Path:
    """Writes the scenario folder ``out`` (inventory, metrics, traces, logs, truth.json); deterministic per seed.
    ``nuisances`` defaults to the classic library's (``Nuisances()``); ``Nuisances.sweep()`` turns all on."""
    sc = SCENARIOS.get(scenario)
    if sc is None:
        raise InputError(f"unknown scenario {scenario!r}; valid: {', '.join(SCENARIOS)}", key="--scenario")
    n = nodes if nodes is not None else sc.nodes
    if not MIN_NODES <= n <= MAX_NODES:
        raise InputError(f"nodes must be between {MIN_NODES} and {MAX_NODES}, got {n}", key="--nodes")
    m = minutes if minutes is not None else sc.minutes
    if not 1.0 <= m <= 24 * 60:
        raise InputError(f"minutes must be between 1 and 1440, got {m}", key="--minutes")
    return _run(sc, Path(out), seed, n, m, progress, nuisances or Nuisances())


def simulate_custom(scenario: Scenario, out: Path, *, seed: int = 0, nodes: int | None = None,
                    minutes: float | None = None, progress: Progress | None = None,
                    nuisances: Nuisances | None = None) -> Path:
    """``simulate`` for a Scenario built in code (tests, notebooks, the sweep) rather than a named one."""
    return _run(scenario, Path(out), seed, nodes or scenario.nodes, minutes or scenario.minutes, progress,
                nuisances or Nuisances())


def demo_cluster(out: Path, seed: int = 0) -> Path:
    """``suanli demo``: 16 nodes, two jobs, a bad leaf port and an overheating GPU."""
    sc = Scenario("demo", "16 nodes, two jobs, two faults",
                  (FaultRequest("switch_port_errors"), FaultRequest("gpu_thermal", delay_s=90.0)),
                  (JobRequest(), JobRequest()), nodes=16)
    return _run(sc, Path(out), seed, 16, 15.0, None, Nuisances())
