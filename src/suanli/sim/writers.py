"""Streaming writers: OpenMetrics (promtool-backfillable), with the noise real scrapes carry."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TextIO

import numpy as np

from suanli.sim.metrics import Family
from suanli.sim.nuisances import NoiseConfig, NuisancePlan

__all__ = ["NoiseConfig", "write_openmetrics"]


BLANK_FP64 = 140737488355328.0
BLANK_INT32 = 2147483632
BLANK_INT64 = "9.223372036854776e+18"     # 0x7ffffffffffffff0 as dcgm-exporter prints it
SENTINELS = {"DCGM_FI_DEV_POWER_USAGE": f"{BLANK_FP64:.1f}", "DCGM_FI_DEV_MEMORY_TEMP": str(BLANK_INT32)}
INT64_SENTINELS = ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_SM_CLOCK",
                   "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL")
PROBE_RESETS = ("suanli_rdma_retransmits_total", "suanli_pcie_aer_errors_total")
SWITCH_CLEARS = ("suanli_switch_port_crc_errors_total", "suanli_switch_port_packets_total")


def _stamps(fam: Family, ts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Scrape timestamps per series: one offset per exporter and host, a few ms of jitter."""
    base = {"dcgm": 0.9, "node": 0.95, "probe": 0.35}[fam.exporter]
    hosts = np.asarray(fam.hosts)
    off = base + (np.maximum(hosts, 0) % 7) * 0.011
    return np.asarray(np.round(ts[None, :] + off[:, None] + rng.uniform(0, 0.02, (len(hosts), len(ts))), 3))


def _texts(vals: np.ndarray, integer: bool) -> list[str]:
    if integer:
        return [str(v) for v in vals.astype(np.int64).tolist()]
    return [repr(v) for v in vals.tolist()]


def _series_lines(prefix: str, vals: np.ndarray, stamps: np.ndarray, keep: np.ndarray, integer: bool,
                  rng: np.random.Generator, noise: NoiseConfig, gauge: bool, sentinel: str | None) -> list[str]:
    """Lines of one series in time order, then the rare noise applied at drawn positions."""
    idx = np.flatnonzero(keep)
    ms = np.round(stamps[idx] * 1000.0).astype(np.int64)
    texts = _texts(vals[idx], integer)
    lines = [f"{prefix} {v} {t // 1000}.{t % 1000:03d}\n" for v, t in zip(texts, ms.tolist(), strict=True)]
    roll = rng.random((4, len(lines)))
    for j in np.flatnonzero(roll.min(axis=0) < max(noise.nan, noise.sentinel, noise.duplicate,
                                                   noise.out_of_order))[::-1].tolist():
        stamp = lines[j].rsplit(" ", 1)[1]
        if gauge and roll[0, j] < noise.nan:
            lines[j] = f"{prefix} NaN {stamp}"
        elif sentinel is not None and roll[1, j] < noise.sentinel:
            lines[j] = f"{prefix} {sentinel} {stamp}"
        if roll[2, j] < noise.duplicate:
            lines.insert(j, lines[j])
        elif roll[3, j] < noise.out_of_order and j > 0:
            lines[j - 1], lines[j] = lines[j], lines[j - 1]
    return lines


def _gaps(fam: Family, i: int, keep: np.ndarray, plan: NuisancePlan) -> np.ndarray:
    """Scrapes an exporter restart, a dcgm-exporter gap or a node outage take from series ``i``."""
    host = fam.hosts[i]
    out = keep
    cuts = []
    if plan.agent_restart and host == plan.agent_restart[0]:
        cuts.append((plan.agent_restart[1], plan.agent_restart[1] + 2))
    if plan.dcgm_gap and fam.exporter == "dcgm" and host == plan.dcgm_gap[0]:
        cuts.append(plan.dcgm_gap[1:])
    if plan.node_outage and host == plan.node_outage[0]:
        cuts.append(plan.node_outage[1:])
    for a, b in cuts:
        out = out.copy()
        out[a:b] = False
    return out


def _resets(fam: Family, i: int, vals: np.ndarray, plan: NuisancePlan) -> np.ndarray:
    """Counters that start again at 0: the agent's after its restart, a leaf's after it is cleared."""
    if plan.agent_restart and fam.name in PROBE_RESETS and fam.hosts[i] == plan.agent_restart[0]:
        j = plan.agent_restart[1]
        if j + 1 < len(vals):
            vals = np.maximum(np.concatenate([vals[:j + 2], vals[j + 2:] - vals[j + 1]]), 0.0)
    if plan.switch_clear and fam.name in SWITCH_CLEARS and fam.switches and fam.switches[i] == plan.switch_clear[0]:
        _, j, frac = plan.switch_clear
        at = vals[j - 1] + frac * (vals[j] - vals[j - 1])
        vals = np.concatenate([vals[:j], np.floor(np.maximum(vals[j:] - at, 0.0))])
    return vals


def write_family(f: TextIO, fam: Family, ts: np.ndarray, rng: np.random.Generator, plan: NuisancePlan) -> int:
    """Writes HELP/TYPE and every series of one family; returns the number of samples written."""
    noise = plan.nuisances.noise
    base = fam.name[:-6] if fam.type == "counter" else fam.name
    f.write(f"# HELP {base} {fam.help}\n# TYPE {base} {fam.type}\n")
    stamps = _stamps(fam, ts, rng)
    keep = np.isfinite(fam.values)
    keep &= rng.random(fam.values.shape) >= noise.missed_scrape
    gauge = fam.type == "gauge"
    sentinel = SENTINELS.get(fam.name)
    if plan.nuisances.int64_sentinel and fam.name in INT64_SENTINELS:
        sentinel = BLANK_INT64
    n = 0
    for i, lab in enumerate(fam.labels):
        vals = _resets(fam, i, fam.values[i], plan)
        k = _gaps(fam, i, keep[i], plan)
        lines = _series_lines(f"{fam.name}{{{lab}}}", vals, stamps[i], k, fam.integer, rng, noise, gauge,
                              sentinel)
        f.writelines(lines)
        n += len(lines)
    return n


def write_openmetrics(f: TextIO, fams: Iterable[Family], ts: np.ndarray, seed: int, plan: NuisancePlan) -> int:
    """Every family, then ``# EOF``. Samples of one series are contiguous and in time order (but for
    the injected out-of-order ones), which ``promtool tsdb create-blocks-from openmetrics`` accepts."""
    total = 0
    for fam in fams:
        total += write_family(f, fam, ts, np.random.default_rng([seed, *fam.name.encode()]), plan)
    f.write("# EOF\n")
    return total
