"""NHPP SBE-intensity fit: parameter recovery (interval coverage), calibration, the retirement rule."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from suanli.analysis.health.degradation import (
    DegradationConfig,
    FleetPrior,
    bin_event_times,
    fit_dbe_ratio,
    fit_nhpp,
    recommend,
)

T_DAYS = 30.0


def _simulate(rng: np.random.Generator, lam0: float, alpha: float, beta: float, t0: float, t1: float) -> np.ndarray:
    """Events of lambda(t) = lam0 + alpha e^(beta t) on (t0, t1] by thinning (Lewis & Shedler)."""
    lmax = lam0 + alpha * np.exp(max(beta * t0, beta * t1))
    m = rng.poisson(lmax * (t1 - t0))
    t = np.sort(rng.uniform(t0, t1, m))
    keep = rng.uniform(0, 1, m) < (lam0 + alpha * np.exp(beta * t)) / lmax
    return t[keep]


def _fleet(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray], np.random.Generator]:
    rng = np.random.default_rng(seed)
    lam0 = np.exp(rng.normal(np.log(0.5), 0.4, n))
    alpha = np.exp(rng.normal(np.log(0.2), 0.4, n))
    beta = rng.normal(0.08, 0.02, n)
    events = [_simulate(rng, lam0[i], alpha[i], beta[i], 0.0, T_DAYS) for i in range(n)]
    return lam0, alpha, beta, events, rng


def test_intervals_cover_true_values_at_stated_rate() -> None:
    n, level = 200, 0.9
    lam0, alpha, beta, events, _ = _fleet(n, seed=7)
    cfg = DegradationConfig(interval_level=level)
    counts, edges, cover = bin_event_times(events, np.full(n, T_DAYS), cfg)
    fit = fit_nhpp(counts, edges, cover, cfg)
    h = 30.0
    true_count = lam0 * h + alpha * np.exp(beta * T_DAYS) * np.expm1(beta * h) / beta
    true_now = lam0 + alpha * np.exp(beta * T_DAYS)
    _, lo, hi = fit.expected_count(h)
    _, lo_now, hi_now = fit.intensity_now()
    # Binomial(200, 0.9): mean 180 covered, sd = sqrt(200 * 0.9 * 0.1) = 4.24; accept +-3.5 sd
    # (the Laplace approximation may err on the wide side: up to 195 is accepted)
    for covered in (np.sum((true_count >= lo) & (true_count <= hi)),
                    np.sum((true_now >= lo_now) & (true_now <= hi_now))):
        assert 165 <= covered <= 195, covered


def test_forecast_calibrated_and_beats_constant_rate() -> None:
    n, rho, h = 600, 0.002, 30.0
    lam0, alpha, beta, events, rng = _fleet(n, seed=11)
    cfg = DegradationConfig()
    counts, edges, cover = bin_event_times(events, np.full(n, T_DAYS), cfg)
    fit = fit_nhpp(counts, edges, cover, cfg)
    p, _, _ = fit.p_dbe(h, rho)
    true_count = lam0 * h + alpha * np.exp(beta * T_DAYS) * np.expm1(beta * h) / beta
    outcome = rng.uniform(0, 1, n) < -np.expm1(-rho * true_count)
    observed_rate = np.array([len(e) for e in events]) / T_DAYS
    p_const = -np.expm1(-rho * observed_rate * h)          # homogeneous Poisson at the past mean rate
    brier = np.mean((p - outcome) ** 2)
    brier_const = np.mean((p_const - outcome) ** 2)
    assert brier < brier_const
    # reliability: in each probability quintile the observed frequency is within 3 binomial sd
    edges_q = np.quantile(p, [0, 0.2, 0.4, 0.6, 0.8, 1.0])
    for lo_q, hi_q in itertools.pairwise(edges_q):
        sel = (p >= lo_q) & (p <= hi_q)
        mean_p = p[sel].mean()
        sd = np.sqrt(mean_p * (1 - mean_p) / sel.sum())
        assert abs(outcome[sel].mean() - mean_p) <= 3 * sd + 0.02, (mean_p, outcome[sel].mean())


def test_fixed_prior_single_event_is_shrunk() -> None:
    # 64 GPUs watched 15 min; one saw one SBE. The MLE is 1 / (15/1440 d) = 96/day; the default
    # prior (log lambda0 ~ N(-4, 1.5^2)) puts the mode near 0.2/day: posterior mode of u solves
    # 1 - e^u T - (u + 4)/2.25 = 0 with T = 0.0104 d -> u ~ -1.75 -> 0.17/day (plus the alpha term).
    t_days = 15 / 1440
    events = [np.zeros(0)] * 63 + [np.array([t_days / 2])]
    cfg = DegradationConfig()
    counts, edges, cover = bin_event_times(events, np.full(64, t_days), cfg)
    fit = fit_nhpp(counts, edges, cover, cfg)
    rate, _, _ = fit.intensity_now()
    assert 0.05 < rate[-1] < 1.0
    assert rate[-1] > rate[0]
    p, _, _ = fit.p_dbe(30.0, cfg.dbe_per_sbe)
    assert p[-1] < 0.05
    assert recommend(float(rate[-1]), float(p[-1]), cfg) == "ok"


def test_many_events_dominate_prior() -> None:
    # 200 SBEs in one day at a constant rate: the posterior rate is close to 200/day
    rng = np.random.default_rng(3)
    events = [np.sort(rng.uniform(0, 1.0, 200))]
    cfg = DegradationConfig()
    counts, edges, cover = bin_event_times(events, np.array([1.0]), cfg)
    prior = FleetPrior(np.array(cfg.prior_mean), np.array(cfg.prior_sd))
    fit = fit_nhpp(counts, edges, cover, cfg, prior=prior)
    rate, lo, hi = fit.intensity_now()
    assert 120 < rate[0] < 320
    assert lo[0] < rate[0] < hi[0]


def test_retirement_rule() -> None:
    cfg = DegradationConfig()
    assert recommend(12.0, 0.2, cfg) == "retire"
    assert recommend(12.0, 0.1, cfg) == "watch"       # rate high but P(DBE) below 15 %
    assert recommend(8.0, 0.5, cfg) == "watch"        # P high but rate below 10/day
    assert recommend(0.1, 0.001, cfg) == "ok"


def test_dbe_ratio_gamma_poisson() -> None:
    cfg = DegradationConfig(dbe_per_sbe=1e-3)
    # no data: the prior mean rho0 = 2 / (2 / 1e-3) = 1e-3
    assert fit_dbe_ratio(0, 0, cfg) == pytest.approx(1e-3)
    # 10 DBE over 2000 SBE with a 2-pseudo-DBE prior: (10 + 2) / (2000 + 2000) = 3e-3
    assert fit_dbe_ratio(10, 2000, cfg) == pytest.approx(3e-3)
