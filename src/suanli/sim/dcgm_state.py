"""dcgm-exporter fields from what each GPU is doing (``GpuGrid.mode``), as real GPUs report them.

A stalled job's GPUs spin in an NCCL kernel: utilisation stays near 90 %, but NVLink traffic and
tensor activity fall to zero on every GPU at once and power drops to about a third of TDP. A GPU
with no process (a spare node, a job that finished or restarts) drops to its idle clock with the
GPU_IDLE throttle reason, frees its framebuffer and draws about a tenth of TDP. Temperatures follow
power with a thermal lag. Numbers are those of the public samples (H100: idle 345 MHz, ~72 W, 27 C).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from suanli.sim.state import BUSY, CKPT, IDLE, INIT, STALL, nvlink_grid

if TYPE_CHECKING:
    from suanli.sim.metrics import World

__all__ = ["PHYSICAL_FIELDS", "GpuStateConfig", "physical_value"]


@dataclass(frozen=True)
class GpuStateConfig:
    """How each GPU mode shows (documented defaults)."""

    stall_util: float = 0.9
    """Utilisation DCGM reports while NCCL kernels spin on a stuck collective."""
    stall_sm_active: float = 0.18
    """SM activity of the spinning kernels."""
    stall_power_share: float = 0.3
    """Board power of a stalled GPU, share of TDP."""
    idle_power_share: float = 0.103
    """Board power of a GPU with no process, share of TDP."""
    init_util: float = 0.14
    """Utilisation while a process starts (NCCL init, model build, checkpoint load)."""
    init_power_share: float = 0.14
    """Board power while a process starts, share of TDP."""
    ckpt_util: float = 0.05
    """Utilisation during a synchronous checkpoint save."""
    init_fb_share: tuple[float, float] = (0.3, 0.43)
    """Framebuffer share held from the start to the end of start-up."""
    idle_nvlink_Bps: float = 8e5
    """NVLink traffic with no collective running (link management)."""
    ambient_c: tuple[float, float] = (26.0, 30.0)
    """Idle die temperature, drawn per GPU."""
    temp_per_power_c: float = 37.0
    """Steady-state rise at full TDP."""
    thermal_tau_s: float = 75.0
    """Time constant of the die temperature following power."""
    idle_throttle: int = 0x1
    """DCGM clock throttle reason GPU_IDLE."""
    power_cap_throttle: int = 0x4
    """DCGM clock throttle reason SW_POWER_CAP."""


PHYSICAL_FIELDS = frozenset({
    "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_DEV_SM_CLOCK",
    "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"})
THERMAL_REASONS = 0x20 | 0x40


def _levels(w: World, cats: tuple[str, ...]) -> np.ndarray:
    """Per GPU row and scrape: the highest level of any fault of ``cats`` on that GPU."""
    out = np.zeros(w.grid.util.shape)
    for f in w.fx.faults:
        if f.category in cats and f.root in w.grid.gpu_row:
            row = w.grid.gpu_row[f.root]
            out[row] = np.maximum(out[row], f.level(w.ts))
    return out


def _factor(w: World, cats: tuple[str, ...]) -> np.ndarray:
    """Product over faults of ``cats`` of 1 - (1 - magnitude) * level (clock, NVLink factors)."""
    out = np.ones(w.grid.util.shape)
    for f in w.fx.faults:
        if f.category in cats and f.root in w.grid.gpu_row:
            out[w.grid.gpu_row[f.root]] *= 1.0 - (1.0 - f.magnitude) * f.level(w.ts)
    return out


def _power_capped(w: World) -> np.ndarray:
    return np.asarray((w.rng("power_cap").random(w.grid.util.shape) < w.nz.power_cap) & (w.grid.mode == BUSY))


def _power(w: World, sc: GpuStateConfig) -> np.ndarray:
    g, tdp, tc = w.grid, w.cluster.gpu.tdp_w, w.tc
    idle = tdp * sc.idle_power_share
    busy = idle + (tdp * tc.compute_power_share - idle) * g.comp + 60.0 * g.util
    by_mode = {STALL: tdp * sc.stall_power_share, INIT: tdp * sc.init_power_share, CKPT: idle + 0.05 * tdp,
               IDLE: idle}
    out = np.asarray(busy, dtype=np.float64)
    for m, v in by_mode.items():
        out = np.where(g.mode == m, v, out)
    return out


def _temperature(w: World, sc: GpuStateConfig, offset: float) -> np.ndarray:
    ambient = w.rng("ambient").uniform(*sc.ambient_c, (w.grid.util.shape[0], 1))
    target = ambient + sc.temp_per_power_c * _power(w, sc) / w.cluster.gpu.tdp_w
    heat = _levels(w, ("gpu_thermal", "pcie_riser"))
    target = target + heat * (w.tc.fault_temp_c - target)
    temp = np.empty_like(target)
    temp[:, 0] = target[:, 0]
    keep = np.exp(-np.diff(w.ts, prepend=w.ts[0] - 15.0) / sc.thermal_tau_s)
    for k in range(1, target.shape[1]):
        temp[:, k] = target[:, k] + (temp[:, k - 1] - target[:, k]) * keep[k]
    return np.round(temp + offset + w.rng("temp" + str(offset)).normal(0, 0.5, temp.shape))


def _clock(w: World, rng: np.random.Generator) -> np.ndarray:
    g, gpu = w.grid, w.cluster.gpu
    out = np.where(g.mode == IDLE, gpu.idle_sm_clock_mhz, gpu.max_sm_clock_mhz * _factor(w, ("gpu_thermal", "gpu_straggler")))
    dip = w.rng("power_cap_dip").choice([15.0, 30.0, 45.0, 60.0, 75.0], g.util.shape)
    out = np.where(_power_capped(w), out - dip, out) - 15.0 * ((rng.random(g.util.shape) < 0.03) & (g.mode != IDLE))
    return np.asarray(np.round(out / 15.0) * 15.0, dtype=np.float64)


def _throttle(w: World, sc: GpuStateConfig) -> np.ndarray:
    g = w.grid
    out = np.where(g.mode == IDLE, sc.idle_throttle, 0)
    out = np.where(_levels(w, ("gpu_thermal",)) > w.tc.throttle_level, out | THERMAL_REASONS, out)
    return np.asarray(np.where(_power_capped(w), out | sc.power_cap_throttle, out), dtype=np.float64)


def _fb(w: World, sc: GpuStateConfig, rng: np.random.Generator) -> np.ndarray:
    g, mem = w.grid, float(w.cluster.gpu.memory_mib)
    n, _ = g.util.shape
    held = mem * w.tc.fb_used_share + rng.integers(-40, 40, (n, 1))
    lo, hi = sc.init_fb_share
    out = np.where(g.mode == IDLE, 0.0, np.where(g.mode == INIT, mem * (lo + (hi - lo) * g.init_frac), held))
    for tl in w.tls:
        for t0, kind, info in tl.events:
            if kind == "oom_onset":
                row = g.gpu_row[tl.job.ranks[int(info["rank"])]]   # type: ignore[call-overload]
                ramp = np.clip((w.ts - (t0 - w.tc.oom_ramp_s)) / w.tc.oom_ramp_s, 0, 1) * (w.ts < t0)
                out[row] = np.maximum(out[row], out[row] + ramp * (mem - out[row] - 2))
    return np.round(out)


def _activity(w: World, name: str, sc: GpuStateConfig, rng: np.random.Generator) -> np.ndarray:
    g, tc = w.grid, w.tc
    shape = g.util.shape
    busy = g.mode == BUSY
    if name == "DCGM_FI_DEV_GPU_UTIL":
        v = np.select([busy, g.mode == STALL, g.mode == INIT, g.mode == CKPT],
                      [g.util, sc.stall_util, sc.init_util, sc.ckpt_util], 0.0)
        return np.asarray(np.clip(np.round(v * 100 - rng.uniform(0, 2, shape) * (g.mode != IDLE)), 0, 100))
    noise = rng.normal(0, 0.01, shape)
    if name == "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE":
        return np.round(np.where(busy, np.clip(g.comp * tc.tensor_active_per_compute + noise, 0, 1), 0.0), 6)
    sm = np.select([busy, g.mode == STALL, g.mode == INIT, g.mode == CKPT],
                   [g.comp * tc.sm_active_per_compute + g.util * 0.05, sc.stall_sm_active, 0.05, 0.02], 0.0)
    return np.round(np.where(g.mode == IDLE, 0.0, np.clip(sm + noise, 0, 1)), 6)


def _nvlink(w: World, sc: GpuStateConfig, rng: np.random.Generator) -> np.ndarray:
    g = w.grid
    bw = w.cluster.gpu.nvlink_Bps * w.tc.nvlink_busy_share * g.util * (1.0 + rng.normal(0, 0.03, g.util.shape))
    quiet = np.abs(rng.normal(sc.idle_nvlink_Bps, sc.idle_nvlink_Bps / 2, g.util.shape))
    return np.round(np.where(g.mode == BUSY, np.maximum(bw, 0.0) * nvlink_grid(w.fx, g, w.ts), quiet))


def physical_value(w: World, name: str, rng: np.random.Generator, sc: GpuStateConfig = GpuStateConfig()) -> np.ndarray:
    """Values of one of ``PHYSICAL_FIELDS`` for every GPU row and scrape."""
    if name == "DCGM_FI_DEV_POWER_USAGE":
        return np.round(_power(w, sc) + rng.normal(0, 4, w.grid.util.shape), 6)
    if name in ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP"):
        return _temperature(w, sc, w.tc.memory_temp_offset_c if name.endswith("MEMORY_TEMP") else 0.0)
    if name == "DCGM_FI_DEV_SM_CLOCK":
        return _clock(w, rng)
    if name == "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS":
        return _throttle(w, sc)
    if name == "DCGM_FI_DEV_FB_USED":
        return _fb(w, sc, rng)
    if name == "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL":
        return _nvlink(w, sc, rng)
    return _activity(w, name, sc, rng)
