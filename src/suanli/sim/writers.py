"""Streaming writers: OpenMetrics (promtool-backfillable), with the noise real scrapes carry."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TextIO

import numpy as np

from suanli.sim.metrics import Family

__all__ = ["NoiseConfig", "write_openmetrics"]


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
    """Probability a DCGM float field reads as the BLANK sentinel (140737488355328.0)."""
    exporter_restart: bool = True
    """One node's exporters restart once: two scrapes missing, suanli_* counters start again at 0."""


BLANK_FP64 = 140737488355328.0
BLANK_INT32 = 2147483632
SENTINELS = {"DCGM_FI_DEV_POWER_USAGE": f"{BLANK_FP64:.1f}", "DCGM_FI_DEV_MEMORY_TEMP": str(BLANK_INT32)}
PROBE_RESETS = ("suanli_rdma_retransmits_total", "suanli_pcie_aer_errors_total")


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


def write_family(f: TextIO, fam: Family, ts: np.ndarray, rng: np.random.Generator, noise: NoiseConfig,
                 restart: tuple[int, int] | None) -> int:
    """Writes HELP/TYPE and every series of one family; returns the number of samples written."""
    base = fam.name[:-6] if fam.type == "counter" else fam.name
    f.write(f"# HELP {base} {fam.help}\n# TYPE {base} {fam.type}\n")
    stamps = _stamps(fam, ts, rng)
    keep = np.isfinite(fam.values)
    keep &= rng.random(fam.values.shape) >= noise.missed_scrape
    gauge = fam.type == "gauge"
    sentinel = SENTINELS.get(fam.name)
    n = 0
    for i, lab in enumerate(fam.labels):
        vals, k = fam.values[i], keep[i]
        if restart is not None and fam.hosts[i] == restart[0]:
            j = restart[1]
            k = k.copy()
            k[j:j + 2] = False
            if fam.name in PROBE_RESETS:
                vals = vals.copy()
                vals[j + 2:] -= vals[j + 1] if j + 1 < len(vals) else 0.0
                vals = np.maximum(vals, 0.0)
        lines = _series_lines(f"{fam.name}{{{lab}}}", vals, stamps[i], k, fam.integer, rng, noise, gauge,
                              sentinel)
        f.writelines(lines)
        n += len(lines)
    return n


def write_openmetrics(f: TextIO, fams: Iterable[Family], ts: np.ndarray, seed: int, noise: NoiseConfig,
                      n_nodes: int) -> int:
    """Every family, then ``# EOF``. Samples of one series are contiguous and in time order (but for
    the injected out-of-order ones), which ``promtool tsdb create-blocks-from openmetrics`` accepts."""
    rng = np.random.default_rng([seed, 77])
    restart = (int(rng.integers(0, n_nodes)), int(rng.integers(2, max(3, len(ts) - 4)))) \
        if noise.exporter_restart and len(ts) > 8 else None
    total = 0
    for fam in fams:
        total += write_family(f, fam, ts, np.random.default_rng([seed, *fam.name.encode()]), noise, restart)
    f.write("# EOF\n")
    return total
