"""What the time went for cost: money, energy, waste, and when (and for how much) a job finishes.

Pure functions over numbers and NumPy arrays; :mod:`suanli.analysis.ledger` feeds them.

Forecast model (docs/ledger.md): the remaining tokens run at the recent effective throughput
``r`` (tokens over the last ``forecast_window_s`` of the job, failure time in that window left
out because interruptions are modelled separately), drawn per sample from
``Normal(r, sd)`` where ``sd`` is the spread of the throughput over sub-windows (the spread,
not the standard error: deliberately wide). Interruptions arrive as a Poisson process whose rate
per GPU-hour has a Gamma posterior: prior mean ``prior_interruptions_per_gpu_hour`` with the
weight of ``prior_weight_interruptions`` events, updated with the interruptions seen over the
GPU-hours observed. Each interruption costs ``downtime_s`` (the observed mean downtime plus lost
progress per interruption, else ``default_downtime_s``). P10 / P50 / P90 of the samples.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from suanli.analysis.median import median

__all__ = [
    "EconomicsConfig",
    "Forecast",
    "energy_j",
    "forecast_finish",
    "low_util_s",
    "windowed_rate",
]

F64 = npt.NDArray[np.float64]


@dataclass(frozen=True)
class EconomicsConfig:
    """Thresholds and priors of the economics and the forecast."""

    util_idle_pct: float = 10.0
    """A GPU sample with DCGM_FI_DEV_GPU_UTIL below this (%) is wasted GPU time."""
    forecast_window_s: float = 600.0
    """Recent window (s, ending at the job's last span) whose throughput is extrapolated."""
    forecast_blocks: int = 5
    """Sub-windows of the recent window whose throughput spread gives the rate's sd."""
    forecast_samples: int = 4000
    """Monte Carlo samples of the forecast."""
    forecast_seed: int = 0
    """Seed of the forecast's random generator (same input, same forecast)."""
    prior_interruptions_per_gpu_hour: float = 419 / (54 * 24 * 16384)
    """Prior interruption rate per GPU-hour: Llama 3 (Meta 2024) saw 419 unexpected interruptions
    in 54 days on 16,384 H100s, 1.97e-5 per GPU-hour."""
    prior_weight_interruptions: float = 1.0
    """Weight of the prior, in interruptions (Gamma shape); small lets observations dominate."""
    default_downtime_s: float = 1800.0
    """Downtime plus lost progress per interruption when none was observed (s)."""


@dataclass(frozen=True)
class Forecast:
    """Finish time (epoch s) and total cost (currency) to reach the target, P10 / P50 / P90."""

    finish_s: tuple[float, float, float]
    cost: tuple[float, float, float]
    remaining_tokens: float
    tokens_per_s: float
    tokens_per_s_sd: float
    interruptions_per_h: float
    downtime_per_interruption_s: float


def energy_j(ts: F64, watts: F64, start_s: float, end_s: float) -> float:
    """Energy (J) of one power series over [start, end]: trapezoid over the samples inside the
    window, NaN samples dropped (no extrapolation beyond the first and last sample)."""
    ok = np.isfinite(watts) & (ts >= start_s) & (ts <= end_s)
    t, w = ts[ok], watts[ok]
    if len(t) < 2:
        return 0.0
    return float(np.sum((w[1:] + w[:-1]) * 0.5 * np.diff(t)))


def low_util_s(ts: F64, util_pct: F64, start_s: float, end_s: float, threshold_pct: float
               ) -> tuple[float, float]:
    """(seconds below ``threshold_pct``, seconds observed) of one utilisation series in the window.

    Each sample holds until the next one (the last for the median sample interval); NaN samples
    are not observed time.
    """
    ok = (ts >= start_s) & (ts <= end_s)
    t, u = ts[ok], util_pct[ok]
    if len(t) == 0:
        return 0.0, 0.0
    step = median(np.diff(t)) if len(t) > 1 else 0.0
    hold = np.minimum(np.append(np.diff(t), step), end_s - t)
    seen = np.isfinite(u)
    return float(hold[seen & (u < threshold_pct)].sum()), float(hold[seen].sum())


def windowed_rate(end_s: F64, tokens: F64, window_start_s: float, window_end_s: float,
                  blocks: int, excluded_s: float = 0.0) -> tuple[float, float]:
    """Tokens per second of steps ending in the window (minus ``excluded_s`` of failure time),
    and the sd of the same rate over ``blocks`` equal sub-windows."""
    span = window_end_s - window_start_s
    if span <= 0:
        return 0.0, 0.0
    inside = (end_s > window_start_s) & (end_s <= window_end_s) & np.isfinite(tokens)
    rate = float(tokens[inside].sum()) / max(span - excluded_s, 1e-9)
    edges = np.linspace(window_start_s, window_end_s, blocks + 1)
    idx = np.clip(np.searchsorted(edges, end_s[inside], side="left") - 1, 0, blocks - 1)
    per_block = np.bincount(idx, weights=tokens[inside], minlength=blocks) / (span / blocks)
    return rate, float(np.std(per_block)) if blocks > 1 else 0.0


def forecast_finish(now_s: float, remaining_tokens: float, tokens_per_s: float,
                    tokens_per_s_sd: float, n_interruptions: int, observed_gpu_h: float,
                    n_gpus: int, downtime_s: float | None, price_per_gpu_h: float,
                    config: EconomicsConfig = EconomicsConfig()) -> Forecast | None:
    """Monte Carlo forecast of finish time and total cost (module docstring); None when the job
    makes no progress or nothing remains."""
    if tokens_per_s <= 0 or remaining_tokens <= 0 or n_gpus <= 0:
        return None
    rng = np.random.default_rng(config.forecast_seed)
    n = config.forecast_samples
    shape = n_interruptions + config.prior_weight_interruptions
    prior = config.prior_interruptions_per_gpu_hour
    if prior > 0:
        rate_gpu_h = rng.gamma(shape, 1.0 / (observed_gpu_h + config.prior_weight_interruptions / prior), n)
    else:
        rate_gpu_h = np.full(n, n_interruptions / observed_gpu_h if observed_gpu_h > 0 else 0.0)
    speed = np.maximum(rng.normal(tokens_per_s, tokens_per_s_sd, n), 0.01 * tokens_per_s)
    run_s = remaining_tokens / speed
    count = rng.poisson(rate_gpu_h * n_gpus * run_s / 3600.0)
    down = config.default_downtime_s if downtime_s is None else downtime_s
    total_s = run_s + count * down
    q = np.quantile(total_s, [0.1, 0.5, 0.9], method="inverted_cdf")
    cost = q / 3600.0 * n_gpus * price_per_gpu_h
    return Forecast(
        finish_s=(now_s + float(q[0]), now_s + float(q[1]), now_s + float(q[2])),
        cost=(float(cost[0]), float(cost[1]), float(cost[2])),
        remaining_tokens=remaining_tokens, tokens_per_s=tokens_per_s,
        tokens_per_s_sd=tokens_per_s_sd,
        interruptions_per_h=float(np.mean(rate_gpu_h)) * n_gpus,
        downtime_per_interruption_s=down)
