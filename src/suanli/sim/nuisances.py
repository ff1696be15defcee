"""Nuisances: what real fleets' telemetry does that is not a fault.

``Nuisances()`` is what the named scenario library writes (the classic noise of ``NoiseConfig``);
``Nuisances.sweep()`` turns every nuisance on, as the diagnosis sweep runs them. A run draws the
concrete times and places once (``plan_nuisances``) from its seed; the writers apply that plan and
truth.json lists it under ``nuisances``, never under ``faults``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from suanli.sim.cluster import SimCluster
from suanli.sim.faults import Fault
from suanli.sim.hardware import GPU_PCI_BUS
from suanli.timefmt import to_rfc3339

__all__ = ["COUNTER_NOISE", "CounterNoise", "NoiseConfig", "NuisancePlan", "Nuisances", "counter_noise",
           "plan_nuisances", "series_entity"]

LABEL = re.compile(r'(\w+)="([^"]*)"')


@dataclass(frozen=True)
class NoiseConfig:
    """How dirty the scraped data is (documented defaults)."""

    missed_scrape: float = 0.002
    """Probability a scrape of one series is missing."""
    nan: float = 0.00005
    """Probability a gauge sample is NaN."""
    duplicate: float = 0.0002
    """Probability a sample is written twice."""
    out_of_order: float = 0.0001
    """Probability a sample is written before its predecessor."""
    sentinel: float = 0.00005
    """Probability a DCGM field reads as one of its BLANK sentinels."""
    exporter_restart: bool = True
    """One node's suanli agent restarts once: two scrapes missing, suanli_* counters start again at 0."""


@dataclass(frozen=True)
class CounterNoise:
    """Error counts a healthy part shows: ``history_share`` of the series start at up to ``history_max``
    (counted before the window), ``rate_share`` of them grow at ``rate_low``..``rate_high`` per hour."""

    history_share: float
    history_max: int
    rate_share: float = 0.0
    rate_low_per_h: float = 0.0
    rate_high_per_h: float = 0.0


# Per error-counter family, as the public samples show them (a few CRC errors per hour on healthy
# ports, SBE counts of a hundred on GPUs that are fine, a link that went down twice last month).
COUNTER_NOISE: dict[str, CounterNoise] = {
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": CounterNoise(0.15, 200, 0.03, 0.5, 4.0),
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": CounterNoise(0.05, 2),
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": CounterNoise(0.15, 60, 0.05, 1.0, 8.0),
    "suanli_pcie_aer_errors_total": CounterNoise(0.1, 40, 0.06, 2.0, 20.0),
    "node_infiniband_symbol_error_total": CounterNoise(0.3, 120, 0.12, 2.0, 16.0),
    "node_infiniband_link_downed_total": CounterNoise(0.1, 2),
    "node_infiniband_port_errors_received_total": CounterNoise(0.1, 20, 0.05, 1.0, 6.0),
    "suanli_switch_port_crc_errors_total": CounterNoise(0.4, 60, 0.25, 2.0, 12.0),
}


@dataclass(frozen=True)
class Nuisances:
    """Which nuisances a run writes. Defaults: the classic library's; ``sweep()``: all of them."""

    noise: NoiseConfig = NoiseConfig()
    counter_history: bool = False
    """Error counters start at what they counted before the window (``COUNTER_NOISE``)."""
    background_errors: bool = False
    """Healthy ports, NICs and GPUs count a few errors per hour (``COUNTER_NOISE``)."""
    idle_port_pps: tuple[float, float] | None = None
    """Packets per second a port carries besides the jobs' rings (drawn per port); None: 200,000."""
    switch_clear: bool = False
    """One leaf's counters are cleared (CRC and packet counters to 0) at a drawn time."""
    restart_anywhere: bool = False
    """The agent restart may land at any scrape, the last minutes included (else mid-window)."""
    dcgm_gap_s: tuple[float, float] | None = None
    """One node's dcgm-exporter misses scrapes for this long (drawn in the range)."""
    node_outage_s: tuple[float, float] | None = None
    """One node answers no scrape at all (dcgm, node-exporter, suanli agent) for this long."""
    gaps_anywhere: bool = False
    """Gaps and outages may land on a fault's own node too (else only on nodes no fault sits on)."""
    end_bias: float = 1.0 / 3.0
    """Share of drawn restart / gap times placed in the last three minutes of the window."""
    job_state_telemetry: bool = False
    """GPUs of stalled, restarting, checkpointing, finished or idle jobs read as real ones do."""
    long_checkpoint_s: tuple[float, float] | None = None
    """One job takes a slow synchronous checkpoint of this long (drawn in the range)."""
    gauge_spikes: float = 0.0
    """Probability a latency probe sample is a lone spike (3-10x)."""
    power_cap: float = 0.0
    """Probability a busy GPU sample is power-capped (throttle reason 0x4, SM clock 15-75 MHz down)."""
    int64_sentinel: bool = False
    """DCGM 64-bit BLANK sentinels on integer fields too (temperatures, clocks, counters)."""
    log_noise: bool = False
    """More unrelated kernel lines (NVRM checks, cgroup, xfs) and trainer warnings, NCCL INFO lines."""
    host_label: str = "Hostname"
    """dcgm-exporter's host label: ``Hostname``, or ``hostname`` as releases from 2026 on spell it."""
    gpu_id_attr: str = "uuid"
    """``resource.gpu.id`` of the spans: the GPU's ``uuid`` or its ``canonical`` id (node-001/gpu0)."""

    @classmethod
    def sweep(cls) -> Nuisances:
        """Every nuisance on, with the magnitudes the public samples show."""
        return cls(counter_history=True, background_errors=True, idle_port_pps=(300.0, 1500.0), switch_clear=True,
                   restart_anywhere=True, gaps_anywhere=True,
                   dcgm_gap_s=(120.0, 135.0), node_outage_s=(60.0, 180.0), job_state_telemetry=True,
                   long_checkpoint_s=(60.0, 150.0), gauge_spikes=0.006, power_cap=0.035,
                   int64_sentinel=True, log_noise=True, noise=NoiseConfig(nan=0.0001))

    def varied(self, k: int) -> Nuisances:
        """The label spellings alternate with ``k`` (both occur in real fleets)."""
        return replace(self, host_label=("Hostname", "hostname")[k % 2], gpu_id_attr=("uuid", "canonical")[k // 2 % 2])


@dataclass
class NuisancePlan:
    """The times and places one run's nuisances land at (scrape indices on the grid ``ts``)."""

    nuisances: Nuisances
    agent_restart: tuple[int, int] | None = None        # (node index, first missing scrape)
    switch_clear: tuple[str, int, float] | None = None  # (switch, first scrape after, fraction of the interval)
    dcgm_gap: tuple[int, int, int] | None = None        # (node index, first missing, first back)
    node_outage: tuple[int, int, int] | None = None
    long_checkpoint: tuple[str, float, float] | None = None   # (job, not before, seconds)

    def truth(self, c: SimCluster, ts: np.ndarray) -> dict[str, Any]:
        """Descriptive ``nuisances`` entry of truth.json."""
        def at(j: int) -> str | None:
            return to_rfc3339(float(ts[j]) if j < len(ts) else float(ts[-1]) + 15.0)

        out: dict[str, Any] = {}
        if self.agent_restart:
            n, j = self.agent_restart
            out["agent_restart"] = {"node": c.nodes[n].id, "at": at(j), "missing_scrapes": 2}
        if self.switch_clear:
            sw, j, frac = self.switch_clear
            out["switch_clear"] = {"switch": sw, "at": to_rfc3339(float(ts[j - 1]) + frac * 15.0)}
        for key in ("dcgm_gap", "node_outage"):
            gap = getattr(self, key)
            if gap:
                out[key] = {"node": c.nodes[gap[0]].id, "from": at(gap[1]), "to": at(gap[2])}
        if self.long_checkpoint:
            out["long_checkpoint"] = {"job": self.long_checkpoint[0], "seconds": round(self.long_checkpoint[2], 1)}
        return out


def _when(rng: np.random.Generator, n: int, end_bias: float) -> int:
    """A scrape index anywhere in 1..n-1, in the last three minutes with probability ``end_bias``."""
    if rng.random() < end_bias:
        return int(rng.integers(max(1, n - 12), n))
    return int(rng.integers(1, n))


def _quiet_nodes(c: SimCluster, faults: list[Fault]) -> list[int]:
    """Nodes no fault's root sits on: a gap there cannot hide a fault's signature."""
    busy = {f.root.split("/")[0] for f in faults}
    return [n.index for n in c.nodes if n.id not in busy] or [n.index for n in c.nodes]


def _gap(rng: np.random.Generator, nodes: list[int], n: int, span_s: tuple[float, float],
         bias: float) -> tuple[int, int, int]:
    node = nodes[int(rng.integers(0, len(nodes)))]
    j0 = _when(rng, n, bias)
    width = max(1, round(float(rng.uniform(*span_s)) / 15.0))
    return node, j0, min(n, j0 + width)


def plan_nuisances(nz: Nuisances, c: SimCluster, faults: list[Fault], ts: np.ndarray, seed: int,
                   stopping: set[str]) -> NuisancePlan:
    """Draws where and when each nuisance of ``nz`` lands; ``stopping``: jobs a fault stalls or ends."""
    plan = NuisancePlan(nz)
    n = len(ts)
    old = np.random.default_rng([seed, 77])     # the classic restart draw, kept so classic runs keep their bytes
    if nz.noise.exporter_restart and n > 8:
        node, j = int(old.integers(0, len(c.nodes))), int(old.integers(2, max(3, n - 4)))
        plan.agent_restart = (node, _when(old, n, nz.end_bias) if nz.restart_anywhere else j)
    rng = np.random.default_rng([seed, *b"nuisances"])
    quiet = [n.index for n in c.nodes] if nz.gaps_anywhere else _quiet_nodes(c, faults)
    if nz.switch_clear and n > 4:
        plan.switch_clear = (c.leaves[int(rng.integers(0, len(c.leaves)))], _when(rng, n, nz.end_bias),
                             float(rng.uniform(0.1, 0.9)))
    if nz.dcgm_gap_s and n > 8:
        plan.dcgm_gap = _gap(rng, quiet, n, nz.dcgm_gap_s, nz.end_bias)
    if nz.node_outage_s and n > 8:
        plan.node_outage = _gap(rng, quiet, n, nz.node_outage_s, nz.end_bias)
    calm = [j for j in c.jobs if j.id not in stopping]
    if nz.long_checkpoint_s and calm and n > 16:
        job = calm[int(rng.integers(0, len(calm)))]
        plan.long_checkpoint = (job.id, float(ts[0] + rng.uniform(0.1, 0.6) * (ts[-1] - ts[0])),
                                float(rng.uniform(*nz.long_checkpoint_s)))
    return plan


def series_entity(labels: str) -> str:
    """Canonical id of the part a series' labels name (GPU, NIC, switch port)."""
    d = dict(LABEL.findall(labels))
    host = d.get("Hostname") or d.get("hostname") or d.get("node") or d.get("instance", "").split(":")[0]
    if "gpu" in d:
        return f"{host}/gpu{d['gpu']}"
    if "pci_bus_id" in d:
        return f"{host}/gpu{GPU_PCI_BUS.index(d['pci_bus_id'][5:7].upper())}"
    if "device" in d:
        return f"{host}/{d['device']}"
    return f"{d.get('switch')}/{d.get('port')}"


def counter_noise(fam_name: str, labels: list[str], values: np.ndarray, ts: np.ndarray, nz: Nuisances, seed: int,
                  log: dict[str, dict[str, dict[str, float]]]) -> np.ndarray:
    """``values`` plus the history and background counts ``COUNTER_NOISE`` gives the family; what was added
    is noted in ``log`` (``history``: entity -> count, ``background_errors``: entity -> rate per hour)."""
    spec = COUNTER_NOISE.get(fam_name)
    if spec is None or not (nz.counter_history or nz.background_errors):
        return values
    rng = np.random.default_rng([seed, *b"fleet", *fam_name.encode()])
    rows = np.array(['severity="uncorrected"' not in lab for lab in labels])
    add = np.zeros(values.shape)
    if nz.counter_history:
        count = (rng.random(len(labels)) < spec.history_share) * rng.integers(1, spec.history_max + 1, len(labels))
        add += count[:, None]
        log.setdefault("counter_history", {})[fam_name] = {
            series_entity(labels[i]): float(count[i]) for i in np.flatnonzero(count * rows)}
    if nz.background_errors and spec.rate_share > 0:
        rate = (rng.random(len(labels)) < spec.rate_share) * rng.uniform(spec.rate_low_per_h, spec.rate_high_per_h,
                                                                          len(labels))
        dt = np.diff(ts, prepend=ts[0] - 15.0)
        add += np.cumsum(rng.poisson(rate[:, None] * dt[None, :] / 3600.0), axis=1)
        log.setdefault("background_errors", {})[fam_name] = {
            series_entity(labels[i]): round(float(rate[i]), 3) for i in np.flatnonzero(rate * rows)}
    return np.asarray(values + add * rows[:, None])
