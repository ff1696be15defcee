"""Metric families on the scrape grid: dcgm-exporter, node-exporter infiniband, suanli_* probes.

Each generator yields one ``Family`` at a time (values for every series and scrape), so memory
stays at one family's matrix however long the window is.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from suanli.sim.cluster import SimCluster, gpu_pci
from suanli.sim.dcgm_state import PHYSICAL_FIELDS, physical_value
from suanli.sim.faults import DEFAULT_MAGNITUDE, Effects
from suanli.sim.nuisances import Nuisances
from suanli.sim.physics import PhysicsConfig
from suanli.sim.state import GpuGrid, nic_loss_steps, nvlink_grid
from suanli.sim.timeline import JobTimeline, TimingConfig

__all__ = ["Family", "GpuTelemetryConfig", "World", "dcgm_families", "job_steps_done", "nic_loss"]


@dataclass
class Family:
    name: str                    # sample name (with _total for counters)
    type: str                    # gauge | counter | unknown
    help: str
    labels: list[str]            # rendered label sets, one per series
    values: np.ndarray           # (series, scrapes); NaN where no sample is written
    integer: bool
    exporter: str                # dcgm | node | probe: decides the timestamp jitter
    hosts: list[int]             # node index per series (-1 = none) for exporter outages
    switches: list[str] = field(default_factory=list)   # switch per series (switch families) for clears


@dataclass(frozen=True)
class GpuTelemetryConfig:
    """How GPU state shows in dcgm-exporter fields (documented defaults)."""

    idle_temp_c: float = 38.0
    """GPU temperature of an idle GPU."""
    load_temp_rise_c: float = 20.0
    """Rise at 100 % utilisation."""
    fault_temp_c: float = 90.0
    """Temperature an overheating GPU (thermal fault, bad riser) reaches at full ramp."""
    memory_temp_offset_c: float = 4.0
    """HBM runs this much warmer than the GPU die."""
    idle_power_w: float = 85.0
    """Board power of an idle GPU."""
    compute_power_share: float = 0.82
    """Share of TDP drawn at 100 % compute."""
    sm_active_per_compute: float = 0.78
    """DCGM_FI_PROF_SM_ACTIVE per unit of compute share."""
    tensor_active_per_compute: float = 0.48
    """DCGM_FI_PROF_PIPE_TENSOR_ACTIVE per unit of compute share."""
    nvlink_busy_share: float = 0.07
    """NVLink traffic at full utilisation as a share of the link bandwidth."""
    fb_used_share: float = 0.9
    """Framebuffer share a training process holds."""
    oom_ramp_s: float = 180.0
    """How long FB used climbs before an OOM."""
    throttle_level: float = 0.3
    """Thermal ramp level from which the throttle reason bits are set."""
    replays_per_s: float = 4.0
    """PCIe replays per second through a failing riser."""
    sbe_per_remap: float = 8.0
    """Single-bit errors per correctable row remap."""


@dataclass
class World:
    cluster: SimCluster
    tls: list[JobTimeline]
    fx: Effects
    cfg: PhysicsConfig
    tm: TimingConfig
    ts: np.ndarray               # scrape times
    grid: GpuGrid
    seed: int
    latency_pairs: list[tuple[int, int]]
    tc: GpuTelemetryConfig = GpuTelemetryConfig()
    nz: Nuisances = field(default_factory=Nuisances)
    storage_probe: bool = True   # False: no storage latency series (a storage nobody probes)
    noise_log: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)   # what counter_noise added

    def rng(self, name: str) -> np.random.Generator:
        return np.random.default_rng([self.seed, *name.encode()])


DCGM = [
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", True),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", True),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", True),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", False),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "unknown", "Total number of PCIe retries.", True),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", True),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", True),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", True),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "unknown", "Total number of single-bit volatile ECC errors.", True),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "unknown", "Total number of double-bit volatile ECC errors.", True),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "gauge", "Total NVLink bandwidth for all lanes (in B/s).", True),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "unknown", "Number of remapped rows for uncorrectable errors", True),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "unknown", "Number of remapped rows for correctable errors", True),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed", True),
    ("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "gauge", "Current clock throttle reasons (bitmask).", True),
    ("DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp assigned.", False),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active.", False),
]
THERMAL_REASONS = 0x20 | 0x40       # DCGM SW_THERMAL | HW_THERMAL clock throttle reasons
DEFAULT_SBE_PER_DAY = DEFAULT_MAGNITUDE["gpu_memory_degradation"]
XID = {"gpu_memory_failure": 94, "gpu_lost": 79, "nvlink_degradation": 74, "nvswitch_fault": 74}


def _gpu_labels(w: World) -> tuple[list[str], list[int]]:
    c, out, hosts = w.cluster, [], []
    for n in c.nodes:
        for g, uuid in enumerate(n.gpu_uuids):
            gid = f"{n.id}/gpu{g}"
            s = (f'gpu="{g}",UUID="{uuid}",pci_bus_id="{gpu_pci(g)}",device="nvidia{g}",'
                 f'modelName="{c.gpu.dcgm_name}",{w.nz.host_label}="{n.id}"')
            hit = w.grid.job_of.get(gid)
            if hit and hit[0].job.pods:
                s += f',pod="{hit[0].job.pods[hit[1]]}",namespace="training",container="pytorch"'
            out.append(s)
            hosts.append(n.index)
    return out, hosts


def _level(w: World, gid: str, cat: str) -> np.ndarray:
    f = w.fx.of(gid, cat)
    return np.zeros(len(w.ts)) if f is None else f.level(w.ts)


def _cum_rate(w: World, rate_per_s: np.ndarray) -> np.ndarray:
    """Counter from a per-scrape rate (rate held over each scrape interval)."""
    dt = np.diff(w.ts, prepend=w.ts[0] - 15.0)
    return np.asarray(np.floor(np.cumsum(rate_per_s * dt)), dtype=np.float64)


def _gpu_value(w: World, name: str, rng: np.random.Generator) -> np.ndarray:
    g, c, tc = w.grid, w.cluster, w.tc
    n, m = g.util.shape
    if w.nz.job_state_telemetry and name in PHYSICAL_FIELDS:
        return physical_value(w, name, rng)
    if name == "DCGM_FI_DEV_GPU_UTIL":
        return np.clip(np.round(g.util * 100 - rng.uniform(0, 2, (n, m))), 0, 100)
    if name == "DCGM_FI_PROF_SM_ACTIVE":
        return np.round(np.clip(g.comp * tc.sm_active_per_compute + g.util * 0.05 + rng.normal(0, 0.01, (n, m)), 0, 1), 6)
    if name == "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE":
        return np.round(np.clip(g.comp * tc.tensor_active_per_compute + rng.normal(0, 0.01, (n, m)), 0, 1), 6)
    if name == "DCGM_FI_DEV_SM_CLOCK":
        out = np.full((n, m), c.gpu.max_sm_clock_mhz) - 15.0 * (rng.random((n, m)) < 0.03)
        for gid, row in g.gpu_row.items():
            for cat in ("gpu_thermal", "gpu_straggler"):
                f = w.fx.of(gid, cat)
                if f is not None:
                    out[row] *= 1.0 - (1.0 - f.magnitude) * f.level(w.ts)
        return np.asarray(np.round(out / 15.0) * 15.0, dtype=np.float64)
    if name in ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP"):
        base = tc.idle_temp_c + tc.load_temp_rise_c * g.util + rng.normal(0, 0.6, (n, m)) + rng.normal(0, 1.5, (n, 1))
        for gid, row in g.gpu_row.items():
            heat = np.maximum(_level(w, gid, "gpu_thermal"), _level(w, gid, "pcie_riser"))
            base[row] = base[row] + heat * (tc.fault_temp_c - base[row])
        return np.round(base + (tc.memory_temp_offset_c if name.endswith("MEMORY_TEMP") else 0.0))
    if name == "DCGM_FI_DEV_POWER_USAGE":
        p = tc.idle_power_w + (c.gpu.tdp_w * tc.compute_power_share - tc.idle_power_w) * g.comp + 60.0 * g.util + rng.normal(0, 6, (n, m))
        return np.round(p, 6)
    if name == "DCGM_FI_DEV_FB_USED":
        return _fb_used(w, rng)
    if name == "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL":
        bw = c.gpu.nvlink_Bps * tc.nvlink_busy_share * g.util * (1.0 + rng.normal(0, 0.03, (n, m)))
        return np.asarray(np.round(np.maximum(bw * nvlink_grid(w.fx, g, w.ts), 0.0)), dtype=np.float64)
    return _gpu_counters(w, name)


def _fb_used(w: World, rng: np.random.Generator) -> np.ndarray:
    g = w.grid
    n, _ = g.util.shape
    out = np.where(g.util > 0.2, w.cluster.gpu.memory_mib * w.tc.fb_used_share, 1.0) + rng.integers(-40, 40, (n, 1))
    for tl in w.tls:
        for t0, kind, info in tl.events:
            if kind == "oom_onset":
                row = g.gpu_row[tl.job.ranks[int(info["rank"])]]   # type: ignore[call-overload]
                ramp = np.clip((w.ts - (t0 - w.tc.oom_ramp_s)) / w.tc.oom_ramp_s, 0, 1) * (w.ts < t0)
                out[row] = np.maximum(out[row], out[row] + ramp * (w.cluster.gpu.memory_mib - out[row] - 2))
    return np.round(out)


def _sbe_rate(w: World, gid: str) -> np.ndarray:
    """Single-bit errors per second: a degrading GPU, or the run-up to a double-bit error."""
    rate = np.zeros(len(w.ts))
    deg = w.fx.of(gid, "gpu_memory_degradation")
    if deg is not None:
        rate += deg.magnitude / 86400.0 * deg.level(w.ts)
    fail = w.fx.of(gid, "gpu_memory_failure")
    if fail is not None and fail.precursor_s > 0:
        a = fail.start_s - fail.precursor_s
        rate += DEFAULT_SBE_PER_DAY / 86400.0 * np.clip((w.ts - a) / fail.precursor_s, 0.0, 1.0) * (w.ts >= a)
    return rate


def _gpu_counters(w: World, name: str) -> np.ndarray:
    g = w.grid
    n, m = g.util.shape
    out = np.zeros((n, m))
    touched = w.fx.touched()
    for gid, row in g.gpu_row.items():
        if gid not in touched:
            continue
        fail = w.fx.of(gid, "gpu_memory_failure")
        after = (w.ts >= fail.start_s) if fail else np.zeros(m, dtype=bool)
        if name == "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL":
            out[row] = _cum_rate(w, _sbe_rate(w, gid))
        elif name == "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS":
            out[row] = np.floor(_cum_rate(w, _sbe_rate(w, gid)) / w.tc.sbe_per_remap)
        elif name == "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" and fail:
            out[row] = after * 2.0
        elif name == "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS" and fail:
            out[row] = after * 1.0
        elif name == "DCGM_FI_DEV_PCIE_REPLAY_COUNTER":
            out[row] = _cum_rate(w, w.tc.replays_per_s * _level(w, gid, "pcie_riser"))
        elif name == "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS":
            out[row] = np.where(_level(w, gid, "gpu_thermal") > w.tc.throttle_level, THERMAL_REASONS, 0)
        elif name == "DCGM_FI_DEV_XID_ERRORS":
            for cat, code in XID.items():
                f = w.fx.switch_fault_of(gid) if cat == "nvswitch_fault" else w.fx.of(gid, cat)
                if f is not None:
                    out[row] = np.where(w.ts >= f.start_s, code, out[row])
    return out


def _gpu_alive(w: World) -> np.ndarray:
    alive = np.ones(w.grid.util.shape, dtype=bool)
    for f in w.fx.faults:
        if f.category == "gpu_lost":
            alive[w.grid.gpu_row[f.root]] = w.ts < f.start_s + 5.0
    return alive


def dcgm_families(w: World) -> Iterator[Family]:
    labels, hosts = _gpu_labels(w)
    alive = _gpu_alive(w)
    for name, typ, help_, integer in DCGM:
        v = _gpu_value(w, name, w.rng(name))
        yield Family(name, typ, help_, labels, np.where(alive, v, np.nan), integer, "dcgm", hosts)


def job_steps_done(tl: JobTimeline, ts: np.ndarray) -> np.ndarray:
    return np.searchsorted(tl.step_ends(), ts, side="right").astype(np.float64)


def nic_loss(w: World) -> dict[str, np.ndarray]:
    """Cumulative packets retransmitted per faulted sending NIC on the scrape grid."""
    out: dict[str, np.ndarray] = {}
    for tl in w.tls:
        per_step = nic_loss_steps(w.cluster, w.fx, w.cfg, tl)
        ends = tl.step_ends()
        for nic, lost in per_step.items():
            cum = np.concatenate([[0.0], np.cumsum(lost)])
            out[nic] = out.get(nic, np.zeros(len(w.ts))) + cum[np.searchsorted(ends, w.ts, side="right")]
    return out

