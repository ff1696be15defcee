"""Per-entity state on the scrape grid, derived from the job timelines and the faults."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from suanli.sim.cluster import SimCluster
from suanli.sim.faults import Effects
from suanli.sim.physics import PhysicsConfig
from suanli.sim.timeline import JobTimeline

__all__ = ["BUSY", "CKPT", "IDLE", "INIT", "STALL", "GpuGrid", "gpu_grid", "nvlink_grid", "step_index"]

# What a GPU is doing at a scrape (``GpuGrid.mode``).
BUSY, STALL, INIT, CKPT, IDLE = range(5)   # stepping, stuck in a collective, starting up, checkpointing, no process


@dataclass
class GpuGrid:
    """``util`` (kernel busy 0..1), ``comp`` (compute share 0..1) and ``mode`` per GPU (row) and scrape
    (column); ``init_frac`` says how far through its start-up (init, checkpoint load) a GPU is."""

    gpu_row: dict[str, int]
    util: np.ndarray
    comp: np.ndarray
    job_of: dict[str, tuple[JobTimeline, int]]
    mode: np.ndarray
    init_frac: np.ndarray


def step_index(tl: JobTimeline, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index of the step running at each time, and whether a step runs then."""
    starts, ends = tl.step_starts(), tl.step_ends()
    if len(starts) == 0:
        return np.zeros(len(ts), dtype=np.int64), np.zeros(len(ts), dtype=bool)
    idx = np.clip(np.searchsorted(starts, ts, side="right") - 1, 0, len(starts) - 1)
    inside = (ts >= starts[idx]) & (ts < ends[idx])
    return idx, inside


def _intervals(ts: np.ndarray, spans: list[tuple[float, float, str]] | list[tuple[float, float, float]]) -> np.ndarray:
    m = np.zeros(len(ts), dtype=bool)
    for s in spans:
        m |= (ts >= s[0]) & (ts < s[1])
    return m


def _init_frac(ts: np.ndarray, inits: list[tuple[float, float, float]]) -> np.ndarray:
    out = np.zeros(len(ts))
    for a, _, b in inits:
        inside = (ts >= a) & (ts < b)
        out[inside] = (ts[inside] - a) / max(b - a, 1e-9)
    return out


def _mode(inside: np.ndarray, stall: np.ndarray, init: np.ndarray, ckpt: np.ndarray) -> np.ndarray:
    mode = np.where(inside, BUSY, IDLE)
    mode = np.where(ckpt, CKPT, mode)
    return np.asarray(np.where(init, INIT, np.where(stall, STALL, mode)), dtype=np.int8)


def gpu_grid(c: SimCluster, tls: list[JobTimeline], ts: np.ndarray) -> GpuGrid:
    rows = {f"{n.id}/gpu{g}": i * 8 + g for i, n in enumerate(c.nodes) for g in range(8)}
    util = np.zeros((len(rows), len(ts)), dtype=np.float32)
    comp = np.zeros_like(util)
    mode = np.full(util.shape, IDLE, dtype=np.int8)
    init_frac = np.zeros(util.shape, dtype=np.float32)
    job_of: dict[str, tuple[JobTimeline, int]] = {}
    for tl in tls:
        idx, inside = step_index(tl, ts)
        stall = _intervals(ts, tl.stalls)
        init = _intervals(ts, [(a, c_, "") for a, _, c_ in tl.inits])
        ckpt = _intervals(ts, [(a, b, "") for a, b, _ in tl.checkpoints])
        job_mode, frac = _mode(inside, stall, init, ckpt), _init_frac(ts, tl.inits)
        if tl.t0:
            step = np.asarray(tl.step_s)[idx]
            own, dl = np.stack(tl.own)[idx], np.stack(tl.dl)[idx]
            busy = 1.0 - (dl + np.asarray(tl.bubble)[idx][:, None]) / step[:, None]
            cshare = own / step[:, None]      # SMs busy with the rank's own math, not with waiting
        for r, gid in enumerate(tl.job.ranks):
            row = rows[gid]
            job_of[gid] = (tl, r)
            if tl.t0:
                util[row] = np.where(inside, busy[:, r], 0.0)
                comp[row] = np.where(inside, cshare[:, r], 0.0)
            util[row] = np.where(stall, 1.0, np.where(init, 0.25, np.where(ckpt, 0.05, util[row])))
            comp[row] = np.where(stall | init | ckpt, 0.0, comp[row])
            mode[row], init_frac[row] = job_mode, frac
    return GpuGrid(rows, util, comp, job_of, mode, init_frac)


def nvlink_grid(fx: Effects, grid: GpuGrid, ts: np.ndarray) -> np.ndarray:
    """Share of its NVLink bandwidth each GPU (row) keeps at each scrape (``Effects.nvlink_level``)."""
    out = np.ones(grid.util.shape)
    for gid in sorted(fx.touched() & grid.gpu_row.keys()):
        out[grid.gpu_row[gid]] = fx.nvlink_level(gid, ts)
    return out


def nic_loss_steps(c: SimCluster, fx: Effects, cfg: PhysicsConfig, tl: JobTimeline) -> dict[str, np.ndarray]:
    """Per sending NIC with a faulted hop: packets lost per step (one value per completed step)."""
    out: dict[str, np.ndarray] = {}
    touched = fx.touched()
    starts = tl.step_starts()
    pkts = tl.net.hop_bytes / cfg.packet_bytes
    for hops in tl.net.hops:
        for h in hops:
            if not h.path or not touched & set(h.path):
                continue
            lost = np.array([sum(fx.loss(e, float(t), e in h.rx) for e in h.path) for t in starts])
            nic = h.path[0]
            out[nic] = out.get(nic, np.zeros(len(starts))) + pkts * np.minimum(lost, 1.0)
    return out
