"""Runs each job step by step over the window: per-rank phases, synchronisation, outages, checkpoints."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from suanli.sim.cluster import SimCluster, SimJob
from suanli.sim.faults import Effects
from suanli.sim.network import Hop, JobNet
from suanli.sim.physics import (
    PhysicsConfig,
    comm_inflation,
    data_load_s,
    flops_per_rank,
    optimizer_s,
    ring_allreduce_s,
    tp_comm_s,
)

__all__ = ["Interrupt", "JobTimeline", "TimingConfig", "run_job"]


@dataclass(frozen=True)
class TimingConfig:
    """Control-flow timings of a training job (documented defaults)."""

    watchdog_timeout_s: float = 300.0
    """NCCL watchdog timeout (PyTorch ``timeout=``); capped at 40 % of what is left of the window."""
    restart_delay_s: float = 45.0
    """From process exit to the new process starting (scheduler, container start)."""
    init_s: float = 40.0
    """``init`` span: process start to first step (NCCL init, model build)."""
    checkpoint_load_s: float = 25.0
    """``checkpoint_load`` span after a restart."""
    storage_latency_s: float = 1.1e-3
    """Healthy storage read latency."""


@dataclass
class Interrupt:
    """A control-flow event: ``stall`` until the watchdog fires, ``crash`` at once, ``dead`` for good."""

    t_s: float
    mode: str                  # stall | crash | dead
    category: str
    rank: int = 0


@dataclass
class JobTimeline:
    job: SimJob
    net: JobNet
    steps: list[int] = field(default_factory=list)
    t0: list[float] = field(default_factory=list)          # step start
    dl: list[np.ndarray] = field(default_factory=list)      # per rank, seconds
    bubble: list[float] = field(default_factory=list)
    fwd: list[np.ndarray] = field(default_factory=list)
    own: list[np.ndarray] = field(default_factory=list)     # own compute (without waiting for TP peers)
    bwd: list[np.ndarray] = field(default_factory=list)
    ar_start: list[np.ndarray] = field(default_factory=list)   # offset from step start
    sync: list[float] = field(default_factory=list)         # offset where all-reduce ends everywhere
    step_s: list[float] = field(default_factory=list)
    inflation: list[float] = field(default_factory=list)    # worst ring slowdown of the step
    checkpoints: list[tuple[float, float, int]] = field(default_factory=list)
    stalls: list[tuple[float, float, str]] = field(default_factory=list)   # GPUs spinning in NCCL
    downs: list[tuple[float, float, str]] = field(default_factory=list)    # processes gone
    inits: list[tuple[float, float, float]] = field(default_factory=list)  # init start, end, ckpt-load end
    events: list[tuple[float, str, dict[str, object]]] = field(default_factory=list)   # for logs
    efficiency: float = 0.5
    slow_checkpoint: tuple[float, float] | None = None     # (not before, seconds): one slow save
    keep_hung_step: bool = False                           # keep the phases a hung step finished
    hung: list[tuple[float, int, float, np.ndarray, np.ndarray, np.ndarray, float]] = field(default_factory=list)
    finished_s: float | None = None                        # the job ended normally then

    def step_starts(self) -> np.ndarray:
        return np.asarray(self.t0, dtype=np.float64)

    def step_ends(self) -> np.ndarray:
        return np.asarray(self.t0, dtype=np.float64) + np.asarray(self.step_s, dtype=np.float64)


def _hop_state(c: SimCluster, fx: Effects, cfg: PhysicsConfig, hop: Hop, t: float) -> tuple[float, float]:
    """(bandwidth bytes/s, extra latency s) of one hop at time t."""
    if not hop.path:
        f = min(fx.nvlink_factor(hop.src_gpu, t), fx.nvlink_factor(hop.dst_gpu, t))
        return c.gpu.nvlink_Bps * f, 0.0
    per_gpu = c.gpu.nic_Bps * len(c.nodes[0].nics) / 8.0 * cfg.bus_efficiency
    loss, lat = 0.0, 0.0
    for e in hop.path:
        rx = e in hop.rx
        loss += fx.loss(e, t, rx)
        lat += fx.extra_latency_s(e, t, rx)
    bw = per_gpu / comm_inflation(cfg, loss)
    bw *= min(fx.riser_factor(hop.src_gpu, t), fx.riser_factor(hop.dst_gpu, t))
    for nic in (hop.path[0], hop.path[-1]):
        down = fx.down_at(nic, "nic_down")
        if down is not None and t >= down:
            bw *= 0.5              # NCCL moved this rail onto a sibling NIC
    return bw, lat


def _rings(c: SimCluster, fx: Effects, cfg: PhysicsConfig, tl: JobTimeline, sens: list[list[int]],
           t: float) -> tuple[np.ndarray, float]:
    """Per-ring all-reduce time and the worst slowdown against a healthy ring."""
    net, n = tl.net, tl.job.dp
    per_gpu = c.gpu.nic_Bps * len(c.nodes[0].nics) / 8.0 * cfg.bus_efficiency
    inter = any(h.path for hops in net.hops for h in hops)
    base_bw = per_gpu if inter else c.gpu.nvlink_Bps
    base = ring_allreduce_s(cfg, n, net.grad_bytes, base_bw)
    out = np.full(len(net.groups), base)
    worst = 1.0
    for g, idx in enumerate(sens):
        if not idx:
            continue
        bw, lat = base_bw, 0.0
        for i in idx:
            b, extra = _hop_state(c, fx, cfg, net.hops[g][i], t)
            bw, lat = min(bw, b), max(lat, extra)
        out[g] = ring_allreduce_s(cfg, n, net.grad_bytes, bw, lat)
        worst = max(worst, out[g] / base if base > 0 else 1.0)
    return out, worst


def _sensitive(tl: JobTimeline, fx: Effects) -> list[list[int]]:
    touched = fx.touched()
    return [[i for i, h in enumerate(hops) if touched & ({h.src_gpu, h.dst_gpu} | set(h.path))]
            for hops in tl.net.hops]


def _compute(c: SimCluster, fx: Effects, cfg: PhysicsConfig, tl: JobTimeline, rng: np.random.Generator,
             t: float, faulted: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    job = tl.job
    w = job.world
    peak = c.gpu.bf16_tflops * 1e12 * tl.efficiency
    comp = np.full(w, flops_per_rank(job) / peak) * (1.0 + rng.normal(0.0, cfg.rank_jitter, w))
    tp = np.full(w, tp_comm_s(job, c.gpu, 1.0))
    for r in faulted:
        comp[r] /= max(fx.clock_factor(job.ranks[r], t), 0.05)
        slow_tp = tp_comm_s(job, c.gpu, fx.nvlink_factor(job.ranks[r], t))
        base = r - r % job.tp
        tp[base:base + job.tp] = np.maximum(tp[base:base + job.tp], slow_tp)
    fwd = comp / 3.0 + tp / 2.0
    bwd = comp * 2.0 / 3.0 + tp / 2.0
    own = comp.copy()
    if job.tp > 1:   # tensor-parallel peers meet at every layer: the group runs at its slowest member
        fwd = np.repeat(fwd.reshape(-1, job.tp).max(axis=1), job.tp)
        bwd = np.repeat(bwd.reshape(-1, job.tp).max(axis=1), job.tp)
    return fwd, bwd, own


def _one_step(c: SimCluster, fx: Effects, cfg: PhysicsConfig, tm: TimingConfig, tl: JobTimeline,
              rng: np.random.Generator, t: float, sens: list[list[int]], faulted: list[int]) -> float:
    job = tl.job
    lat = tm.storage_latency_s * fx.storage_factor(job.storage, t)
    dl = data_load_s(cfg, job, lat) * rng.lognormal(0.0, 0.05, job.world)
    fwd, bwd, own = _compute(c, fx, cfg, tl, rng, t, faulted)
    comp = fwd + bwd
    bubble = (job.pp - 1) / job.micro_batches * float(np.median(comp)) if job.pp > 1 else 0.0
    rings, worst = _rings(c, fx, cfg, tl, sens, t)
    bwd_end = dl.max() + bubble + comp          # all ranks start compute once the slowest batch is in
    ready = np.empty(job.world)
    sync = float(bwd_end.max())
    for g, ranks in enumerate(tl.net.groups):
        idx = np.asarray(ranks)
        overlap = np.minimum(rings[g], job.overlap_fraction * bwd[idx])
        ready[idx] = bwd_end[idx] - overlap
        sync = max(sync, float(ready[idx].max()) + rings[g])
    step = sync + optimizer_s(cfg, job, c.gpu) * float(rng.lognormal(0.0, 0.02))
    tl.t0.append(t)
    tl.dl.append(dl.astype(np.float32))
    tl.bubble.append(bubble)
    tl.fwd.append(fwd.astype(np.float32))
    tl.own.append(own.astype(np.float32))
    tl.bwd.append(bwd.astype(np.float32))
    tl.ar_start.append(ready.astype(np.float32))
    tl.sync.append(sync)
    tl.step_s.append(step)
    tl.inflation.append(worst)
    return step


def _outage(tl: JobTimeline, tm: TimingConfig, intr: Interrupt, t_end: float) -> float:
    """Applies an interrupt; returns when the next step starts (inf when the job is dead)."""
    left = max(0.0, t_end - intr.t_s)
    timeout = min(tm.watchdog_timeout_s, 0.4 * left) if intr.mode == "stall" else 0.0
    tl.events.append((intr.t_s, f"{intr.category}_onset", {"rank": intr.rank}))
    if intr.mode == "stall":
        tl.stalls.append((intr.t_s, intr.t_s + timeout, intr.category))
        tl.events.append((intr.t_s + timeout, "watchdog", {"rank": intr.rank, "timeout_s": timeout}))
    if intr.mode == "dead":
        tl.downs.append((intr.t_s, float("inf"), intr.category))
        return float("inf")
    exit_t = intr.t_s + timeout
    init0 = exit_t + tm.restart_delay_s
    tl.downs.append((exit_t, init0, intr.category))
    tl.inits.append((init0, init0 + tm.init_s, init0 + tm.init_s + tm.checkpoint_load_s))
    tl.events.append((exit_t, "restart", {"category": intr.category}))
    return init0 + tm.init_s + tm.checkpoint_load_s


def _abort(tl: JobTimeline, n_before: int, step: int, intr: Interrupt) -> None:
    """Drops the step an interrupt landed in; a hung step keeps the phases it finished (its spans)."""
    if tl.keep_hung_step and intr.mode == "stall" and len(tl.t0) > n_before:
        k = n_before
        tl.hung.append((tl.t0[k], step, intr.t_s, tl.dl[k], tl.fwd[k], tl.bwd[k], tl.bubble[k]))
    for lst in (tl.t0, tl.dl, tl.bubble, tl.fwd, tl.own, tl.bwd, tl.ar_start, tl.sync, tl.step_s, tl.inflation):
        del lst[n_before:]


def _checkpoint(tl: JobTimeline, t: float, step: int, seconds: float) -> float:
    tl.checkpoints.append((t, t + seconds, step))
    tl.events.append((t, "checkpoint", {"step": step, "end": t + seconds}))
    return t + seconds


def run_job(c: SimCluster, tl: JobTimeline, fx: Effects, cfg: PhysicsConfig, tm: TimingConfig,
            rng: np.random.Generator, t_begin: float, t_end: float, first_step: int,
            interrupts: list[Interrupt], finish_s: float | None = None) -> None:
    """Steps from ``t_begin`` until ``t_end`` (or until the job is done at ``finish_s``); an interrupt
    aborts the step it lands in."""
    job = tl.job
    sens = _sensitive(tl, fx)
    faulted = [r for r, g in enumerate(job.ranks) if g in fx.touched()]
    ckpt_s = job.params * 14.0 / (cfg.checkpoint_write_Bps * max(1, job.world // 8))
    pending = sorted(interrupts, key=lambda i: i.t_s)
    slow = tl.slow_checkpoint
    stop = min(t_end, finish_s) if finish_s is not None else t_end
    t, step = t_begin, first_step
    while t < stop:
        n_before = len(tl.t0)
        dur = _one_step(c, fx, cfg, tm, tl, rng, t, sens, faulted)
        if pending and pending[0].t_s < t + dur:
            intr = pending.pop(0)
            _abort(tl, n_before, step, intr)
            t = _outage(tl, tm, intr, t_end)
            continue
        tl.steps.append(step)
        t += dur
        if finish_s is not None and t >= finish_s:     # the last step: final checkpoint, then the job exits
            t = _checkpoint(tl, t, step, ckpt_s)
            tl.finished_s = t
            tl.events.append((t, "finished", {"step": step}))
            return
        if step % job.checkpoint_every == 0:
            t = _checkpoint(tl, t, step, ckpt_s)
        elif slow is not None and t >= slow[0]:
            t, slow = _checkpoint(tl, t, step, slow[1]), None
        step += 1
