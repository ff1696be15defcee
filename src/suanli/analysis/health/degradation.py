"""GPU memory degradation: a non-homogeneous Poisson process fitted to SBE events, per GPU,
with a fleet prior, and the chance of a double-bit error (DBE) within a horizon.

Model (times in days from the start of each GPU's history):

    lambda(t) = lambda0 + alpha * exp(beta * t)          SBE intensity, events/day

Parameters theta = (log lambda0, log alpha, beta). The log-likelihood of an NHPP is
``sum_i log lambda(t_i) - integral lambda``; counters only say how many events fell between two
scrapes, so events are binned (``bin_days``, finer for short histories) and the interval-censored
form ``sum_k n_k log Lambda_k - Lambda_k`` is maximised (Lambda_k = integral of lambda over bin k,
the exponential part by the bin midpoint, exact to O((beta*w)^2/24) for bin width w). With bins
as fine as the scrape interval this is the exact-time likelihood up to a constant.

Fleet prior (empirical Bayes): theta ~ N(mu, diag(s^2)). Each GPU's posterior mode comes from
Newton steps (observed information; Fisher scoring where that is not positive definite),
vectorised over all GPUs (a 3x3 solve per GPU, step halving when the penalised log-likelihood
would fall; converged GPUs drop out). Posterior draws by importance sampling from the Laplace
normal give posterior means and variances; mu and s are re-estimated from them (an EM step,
``eb_iters`` rounds) when the fleet has enough GPUs and events (``eb_min_gpus``,
``eb_min_events``, ``eb_min_active_gpus``); otherwise the configured prior holds. A card with few
events therefore borrows strength from its peers, and one SBE in a 15-minute window is not read
as 96/day.

Intervals and probabilities: weighted posterior draws (equal-tailed intervals at
``interval_level``), so they are posterior quantities rather than plug-ins at the mode.

DBE link (an assumption, stated): the DBE hazard is proportional to the SBE intensity,
h_DBE(t) = rho * lambda(t), with rho DBEs per SBE fitted on the fleet (:func:`fit_dbe_ratio`,
default ``dbe_per_sbe``). Then P(DBE within H days) = 1 - E[exp(-rho * Lambda_H)] over the
posterior, where Lambda_H is the expected SBE count over (T, T+H].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "DegradationConfig", "FleetPrior", "NhppFit", "bin_event_times", "fit_dbe_ratio", "fit_nhpp",
    "recommend",
]

F64 = npt.NDArray[np.float64]


@dataclass(frozen=True)
class DegradationConfig:
    """Defaults of the SBE intensity fit, the DBE forecast and the retirement rule."""

    bin_days: float = 0.25
    """Widest bin for event counts (days); short histories use at least ``min_bins`` bins."""
    min_bins: int = 48
    """Fewest bins over a history (a 15-minute window gets ~19 s bins)."""
    horizon_days: float = 30.0
    """Forecast horizon for P(DBE) (days)."""
    dbe_per_sbe: float = 1.0e-3
    """rho: DBEs per SBE when the fleet history cannot fit it (at 10 SBE/day, P(DBE 30 d) = 26 %)."""
    interval_level: float = 0.9
    """Two-sided level of the reported intervals (0.8, 0.9 or 0.95)."""
    prior_mean: tuple[float, float, float] = (-4.0, -6.0, 0.0)
    """Prior mean of (log lambda0 [/day], log alpha [/day], beta [/day]) before empirical Bayes:
    a healthy card sees ~0.02 SBE/day (field studies find SBEs concentrated in a few cards)."""
    prior_sd: tuple[float, float, float] = (1.5, 1.5, 0.1)
    """Prior standard deviations of the same three parameters (one SBE in a 15-minute window
    moves the rate to ~0.2/day, not to 96/day; a hundred move it to thousands)."""
    min_prior_sd: tuple[float, float, float] = (0.1, 0.1, 0.01)
    """Floor of the fleet prior's standard deviations (keeps the prior proper)."""
    eb_min_gpus: int = 30
    """Fewest GPUs for which the fleet prior is re-estimated from the fleet itself."""
    eb_min_events: int = 100
    """Fewest SBE events in the whole fleet for the fleet prior to be re-estimated (a handful of
    events cannot inform hyperparameters)."""
    eb_min_active_gpus: int = 20
    """Fewest GPUs with at least one SBE for the fleet prior to be re-estimated (one sick card
    must not set the prior of all others)."""
    eb_start_inflate: float = 2.0
    """The first empirical-Bayes round widens the configured prior by this factor."""
    eb_iters: int = 8
    """Empirical-Bayes (EM) rounds."""
    newton_iters: int = 25
    """Fisher-scoring iterations per round (stops earlier once every GPU converged)."""
    n_draws: int = 96
    """Posterior draws per GPU (importance sampling from the Laplace normal)."""
    eb_draws: int = 64
    """Posterior draws per GPU in the intermediate empirical-Bayes rounds (moments only)."""
    proposal_scale: float = 1.5
    """Widening of the Laplace normal used as the proposal (heavier than the posterior's tails)."""
    seed: int = 0
    """Seed of the posterior draws (results are reproducible)."""
    tolerance: float = 1e-5
    """A GPU's fit has converged when no parameter moves more than this in a scoring step."""
    beta_limit: float = 1.5
    """|beta| is clipped to this (1/day) so exp(beta*t) cannot overflow."""
    retire_sbe_per_day: float = 10.0
    """Retire when the current SBE intensity exceeds this (events/day) ..."""
    retire_p_dbe: float = 0.15
    """... and P(DBE within the horizon) exceeds this."""
    watch_sbe_per_day: float = 1.0
    """Watch when the SBE intensity exceeds this (events/day) ..."""
    watch_p_dbe: float = 0.05
    """... or P(DBE within the horizon) exceeds this."""


@dataclass(frozen=True)
class FleetPrior:
    """theta ~ N(mean, diag(sd^2)), theta = (log lambda0, log alpha, beta), rates per day."""

    mean: F64
    sd: F64


def bin_event_times(event_times_days: list[F64], obs_days: F64,
                    config: DegradationConfig = DegradationConfig()) -> tuple[npt.NDArray[np.float64], F64, F64]:
    """Counts per bin for each GPU: (counts (n, K), bin edges (K+1,), observed mask (n, K)).

    GPU i is observed over [0, obs_days[i]]; bins beyond it are masked out (a partly observed
    bin counts as observed for the fraction it covers).
    """
    obs = np.asarray(obs_days, dtype=np.float64)
    t_max = float(obs.max()) if obs.size else 1.0
    t_max = t_max if t_max > 0 else 1.0
    k = max(config.min_bins, int(np.ceil(t_max / config.bin_days)))
    edges = np.linspace(0.0, t_max, k + 1)
    counts = np.zeros((len(event_times_days), k))
    for i, times in enumerate(event_times_days):
        if len(times):
            counts[i] = np.histogram(np.clip(times, 0.0, t_max), bins=edges)[0]
    cover = np.clip((obs[:, None] - edges[None, :-1]) / np.diff(edges)[None, :], 0.0, 1.0)
    return counts, edges, cover


def _expm1_over_x(x: F64) -> F64:
    """(e^x - 1) / x, 1 at x = 0."""
    small = np.abs(x) < 1e-8
    return np.where(small, 1.0 + 0.5 * x, np.expm1(x) / np.where(small, 1.0, x))


def _weighted_summary(values: F64, weights: F64, level: float) -> tuple[F64, F64, F64]:
    """Posterior mean and equal-tailed interval of per-draw values (n, K) under weights (n, K)."""
    order = np.argsort(values, axis=1)
    v = np.take_along_axis(values, order, axis=1)
    cw = np.cumsum(np.take_along_axis(weights, order, axis=1), axis=1)
    tail = (1.0 - level) / 2.0
    rows = np.arange(len(v))
    lo = v[rows, np.minimum((cw < tail).sum(axis=1), v.shape[1] - 1)]
    hi = v[rows, np.minimum((cw < 1.0 - tail).sum(axis=1), v.shape[1] - 1)]
    return (values * weights).sum(axis=1), lo, hi


@dataclass(frozen=True)
class NhppFit:
    """Per GPU: posterior mode and Laplace covariance of theta, and weighted posterior draws.

    ``draws`` (n, K, 3) come from the Laplace normal (widened by ``proposal_scale``) and carry
    importance weights ``weights`` (n, K, rows sum to 1) towards the exact posterior, so means,
    intervals and probabilities below are posterior (predictive) quantities, not plug-ins.
    """

    theta: F64                 # (n, 3) posterior modes
    cov: F64                   # (n, 3, 3) Laplace covariances
    draws: F64                 # (n, K, 3)
    weights: F64               # (n, K)
    obs_days: F64              # (n,) end of each GPU's history
    prior: FleetPrior
    level: float

    @property
    def lambda0(self) -> F64:
        return np.exp(self.theta[:, 0])

    @property
    def alpha(self) -> F64:
        return np.exp(self.theta[:, 1])

    @property
    def beta(self) -> F64:
        return self.theta[:, 2]

    def _count_draws(self, horizon_days: float) -> F64:
        d, t, h = self.draws, self.obs_days[:, None], float(horizon_days)
        trend = np.exp(d[:, :, 1] + d[:, :, 2] * t) * h * _expm1_over_x(d[:, :, 2] * h)
        return np.asarray(np.exp(d[:, :, 0]) * h + trend, dtype=np.float64)

    def intensity_now(self) -> tuple[F64, F64, F64]:
        """lambda(T) in events/day at the end of each history: posterior mean, interval (lo, hi)."""
        d = self.draws
        values = np.exp(d[:, :, 0]) + np.exp(d[:, :, 1] + d[:, :, 2] * self.obs_days[:, None])
        return _weighted_summary(values, self.weights, self.level)

    def expected_count(self, horizon_days: float) -> tuple[F64, F64, F64]:
        """Lambda_H, the expected SBE count over (T, T+H]: posterior mean and interval."""
        return _weighted_summary(self._count_draws(horizon_days), self.weights, self.level)

    def p_dbe(self, horizon_days: float, dbe_per_sbe: float) -> tuple[F64, F64, F64]:
        """P(at least one DBE within the horizon): posterior predictive 1 - E[exp(-rho Lambda_H)],
        with the interval of Lambda_H mapped through the same monotone link."""
        lam = self._count_draws(horizon_days)
        p = 1.0 - (np.exp(-dbe_per_sbe * lam) * self.weights).sum(axis=1)
        _, lo, hi = _weighted_summary(lam, self.weights, self.level)
        return p, -np.expm1(-dbe_per_sbe * lo), -np.expm1(-dbe_per_sbe * hi)


def _bin_terms(theta: F64, mid: F64, width: F64, cover: F64) -> tuple[F64, F64, F64]:
    """Lambda (n,K) and its derivatives dLambda/du, dLambda/dv (dLambda/dbeta = B * mid)."""
    a = np.exp(theta[:, 0:1]) * width[None, :] * cover
    b = np.exp(theta[:, 1:2]) * width[None, :] * cover * np.exp(theta[:, 2:3] * mid[None, :])
    return a + b, a, b


def _penalised_ll(theta: F64, counts: F64, mid: F64, width: F64, cover: F64, prior: FleetPrior) -> F64:
    lam, _, _ = _bin_terms(theta, mid, width, cover)
    ll = np.where(counts > 0, counts * np.log(np.maximum(lam, 1e-300)), 0.0) - lam
    pen = 0.5 * (((theta - prior.mean[None, :]) / prior.sd[None, :]) ** 2).sum(axis=1)
    return np.asarray(ll.sum(axis=1) - pen, dtype=np.float64)


def _scoring_step(theta: F64, counts: F64, mid: F64, width: F64, cover: F64,
                  prior: FleetPrior) -> tuple[F64, F64]:
    """Fisher-scoring direction and information matrix (both with the prior) for every GPU."""
    lam, a, b = _bin_terms(theta, mid, width, cover)
    inv_lam = 1.0 / np.maximum(lam, 1e-300)
    resid = counts * inv_lam - 1.0
    bm = b * mid[None, :]
    prec = 1.0 / prior.sd ** 2
    score = np.stack([(resid * a).sum(1), (resid * b).sum(1), (resid * bm).sum(1)], axis=1)
    score -= (theta - prior.mean[None, :]) * prec[None, :]
    # Fisher information sum_k dL dL^T / L, and the observed one: with n_k / L^2 in place of
    # 1 / L, minus sum_k (n_k / L - 1) times the second derivatives of L_k (A on uu; B on vv,
    # B m on v-beta, B m^2 on beta-beta). Newton uses the observed one where it is positive
    # definite (quadratic convergence on sparse counts), Fisher scoring elsewhere.
    a_l, b_l, bm_l = a * inv_lam, b * inv_lam, bm * inv_lam
    obs_w = counts * inv_lam
    mid2 = mid[None, :]
    fisher = _sym3((a_l * a).sum(1), (a_l * b).sum(1), (a_l * bm).sum(1), (b_l * b).sum(1),
                   (b_l * bm).sum(1), (bm_l * bm).sum(1))
    observed = _sym3((obs_w * a_l * a).sum(1) - (resid * a).sum(1), (obs_w * a_l * b).sum(1),
                     (obs_w * a_l * bm).sum(1), (obs_w * b_l * b).sum(1) - (resid * b).sum(1),
                     (obs_w * b_l * bm).sum(1) - (resid * bm).sum(1),
                     (obs_w * bm_l * bm).sum(1) - (resid * bm * mid2).sum(1))
    prior_info = np.diag(prec)[None, :, :]
    fisher, observed = fisher + prior_info, observed + prior_info
    pd = np.asarray(np.linalg.eigvalsh(observed) > 1e-12).all(axis=1).reshape(-1, 1, 1)
    info = np.where(pd, observed, fisher)
    step = np.linalg.solve(info, score[:, :, None])[:, :, 0]
    return step, info


def _sym3(xx: F64, xy: F64, xz: F64, yy: F64, yz: F64, zz: F64) -> F64:
    """Stack six (n,) arrays into symmetric (n, 3, 3) matrices."""
    return np.stack([np.stack([xx, xy, xz], 1), np.stack([xy, yy, yz], 1), np.stack([xz, yz, zz], 1)], axis=1)


def _fit_modes(theta: F64, counts: F64, edges: F64, cover: F64, prior: FleetPrior,
               config: DegradationConfig) -> tuple[F64, F64]:
    """Posterior modes by Fisher scoring with step halving; GPUs that converged drop out."""
    mid = 0.5 * (edges[1:] + edges[:-1])
    width = np.diff(edges)
    theta = theta.copy()
    active = np.arange(len(theta))
    ll = _penalised_ll(theta, counts, mid, width, cover, prior)
    for _ in range(config.newton_iters):
        th, c, cv = theta[active], counts[active], cover[active]
        step, _ = _scoring_step(th, c, mid, width, cv, prior)
        # a trust region on the largest move, the whole step scaled: clipping each coordinate
        # would turn a long step along the lambda0/alpha ridge into a mostly-beta one that no
        # halving makes an ascent
        step = step * np.minimum(1.0, 3.0 / np.maximum(np.abs(step).max(axis=1), 1e-300))[:, None]
        scale = np.ones(len(th))
        new, new_ll = th, ll[active]
        for _ in range(8):                                                # step halving
            new = th + scale[:, None] * step
            new[:, 2] = np.clip(new[:, 2], -config.beta_limit, config.beta_limit)
            new_ll = _penalised_ll(new, c, mid, width, cv, prior)
            worse = new_ll < ll[active] - 1e-10
            if not worse.any():
                break
            scale = np.where(worse, scale * 0.5, scale)
        accept = new_ll >= ll[active] - 1e-10
        moved = np.where(accept, np.abs(new - th).max(axis=1), 0.0)
        theta[active[accept]] = new[accept]
        ll[active[accept]] = new_ll[accept]
        active = active[moved > config.tolerance]
        if active.size == 0:
            break
    _, info = _scoring_step(theta, counts, mid, width, cover, prior)
    return theta, np.asarray(np.linalg.inv(info), dtype=np.float64)


def _sparse_log_target(theta: F64, rows: npt.NDArray[np.intp], mids: F64, n_k: F64, log_w: F64,
                       t_obs: F64, prior: FleetPrior) -> F64:
    """Penalised log-likelihood over the non-empty bins only, with the integral in closed form:
    sum_k n_k log(lambda(m_k) w_k) - lambda0 T - alpha T (e^(beta T) - 1) / (beta T)."""
    lam = np.exp(theta[rows, 0]) + np.exp(theta[rows, 1] + theta[rows, 2] * mids)
    events = np.bincount(rows, weights=n_k * (np.log(lam) + log_w), minlength=len(theta))
    integral = (np.exp(theta[:, 0]) * t_obs
                + np.exp(theta[:, 1]) * t_obs * _expm1_over_x(theta[:, 2] * t_obs))
    pen = 0.5 * (((theta - prior.mean[None, :]) / prior.sd[None, :]) ** 2).sum(axis=1)
    return np.asarray(events - integral - pen, dtype=np.float64)


def _posterior_draws(theta: F64, cov: F64, counts: F64, edges: F64, cover: F64, prior: FleetPrior,
                     config: DegradationConfig, n_draws: int) -> tuple[F64, F64]:
    """Importance sampling from the Laplace normal: draws (n, K, 3) and normalised weights (n, K).

    The target is the NHPP likelihood with each bin's events at its midpoint and the exact
    integral over each GPU's observed time (sum of covered bin widths, taken as one stretch
    from 0); only non-empty bins are visited, so a draw costs O(events), not O(GPUs x bins).
    """
    mid, width = 0.5 * (edges[1:] + edges[:-1]), np.diff(edges)
    rows, cols = np.nonzero(counts)
    n_k = counts[rows, cols]
    log_w = np.log(width[cols] * cover[rows, cols])
    t_obs = (cover * width[None, :]).sum(axis=1)
    rng = np.random.default_rng(config.seed)
    z = rng.standard_normal((n_draws, 3))
    chol = np.linalg.cholesky(cov + 1e-12 * np.eye(3)[None, :, :]) * config.proposal_scale
    draws = theta[:, None, :] + np.einsum("nij,kj->nki", chol, z)
    draws[:, :, 2] = np.clip(draws[:, :, 2], -config.beta_limit, config.beta_limit)
    logw = np.empty(draws.shape[:2])
    for k in range(n_draws):
        logw[:, k] = (_sparse_log_target(draws[:, k, :], rows, mid[cols], n_k, log_w, t_obs, prior)
                      + 0.5 * (z[k] ** 2).sum())
    logw -= logw.max(axis=1, keepdims=True)
    w = np.exp(logw)
    return draws, w / w.sum(axis=1, keepdims=True)


def fit_nhpp(counts: F64, edges: F64, cover: F64 | None = None,
             config: DegradationConfig = DegradationConfig(), prior: FleetPrior | None = None,
             obs_days: F64 | None = None) -> NhppFit:
    """Fit lambda(t) = lambda0 + alpha e^(beta t) to binned SBE counts of n GPUs (see module doc).

    ``prior`` fixes the fleet prior (no empirical Bayes); otherwise it is estimated from the
    fleet when it has enough GPUs and events (``eb_min_gpus``, ``eb_min_events``, ``eb_min_active_gpus``).
    """
    counts = np.asarray(counts, dtype=np.float64)
    n, k = counts.shape
    cov_mask = np.ones((n, k)) if cover is None else np.asarray(cover, dtype=np.float64)
    obs = (np.full(n, float(edges[-1])) if obs_days is None else np.asarray(obs_days, dtype=np.float64))
    fixed = prior is not None
    pr = prior or FleetPrior(np.array(config.prior_mean, dtype=np.float64),
                             np.array(config.prior_sd, dtype=np.float64))
    theta = np.tile(pr.mean, (n, 1)).astype(np.float64)
    rate = counts.sum(axis=1) / np.maximum(obs, 1e-9)
    start = np.log(np.maximum(rate, np.exp(pr.mean[0] - 2 * pr.sd[0])) / 2.0)
    theta[:, 0] = start                       # half the mean rate constant, half in the trend term:
    theta[:, 1] = start                       # at alpha ~ 0 the beta direction has no information
    theta[:, 2] = 0.0
    active = int((counts.sum(axis=1) > 0).sum())
    few = n < config.eb_min_gpus or counts.sum() < config.eb_min_events or active < config.eb_min_active_gpus
    rounds = 1 if fixed or few else config.eb_iters
    if rounds > 1:        # empirical Bayes starts from a vaguer prior so the fleet, not it, decides
        pr = FleetPrior(pr.mean, pr.sd * config.eb_start_inflate)
    for r in range(rounds):
        theta, cov = _fit_modes(theta, counts, edges, cov_mask, pr, config)
        last = r == rounds - 1
        draws, w = _posterior_draws(theta, cov, counts, edges, cov_mask, pr, config,
                                    config.n_draws if last else config.eb_draws)
        if last:
            break
        # EM step on posterior means and variances (not modes: the beta posterior is skewed,
        # and modes would bias the fleet's trend upward)
        post_mean = np.einsum("nk,nkj->nj", w, draws)
        post_var = np.einsum("nk,nkj->nj", w, (draws - post_mean[:, None, :]) ** 2)
        mean = post_mean.mean(axis=0)
        var = ((post_mean - mean) ** 2).mean(axis=0) + post_var.mean(axis=0)
        pr = FleetPrior(mean, np.maximum(np.sqrt(var), np.array(config.min_prior_sd)))
    return NhppFit(theta, cov, draws, w, obs, pr, config.interval_level)


def fit_dbe_ratio(dbe_events: float, sbe_events: float, config: DegradationConfig = DegradationConfig(),
                  prior_dbe: float = 2.0) -> float:
    """rho = DBEs per SBE on a fleet history, shrunk to ``config.dbe_per_sbe``.

    Gamma-Poisson: a Gamma(prior_dbe, prior_dbe / rho0) prior on rho and DBE ~ Poisson(rho * SBE)
    give the posterior mean (dbe + prior_dbe) / (sbe + prior_dbe / rho0).
    """
    rho0 = config.dbe_per_sbe
    return (float(dbe_events) + prior_dbe) / (float(sbe_events) + prior_dbe / rho0)


def recommend(sbe_per_day: float, p_dbe: float, config: DegradationConfig = DegradationConfig()) -> str:
    """"retire" when SBE/day > retire_sbe_per_day AND P(DBE) > retire_p_dbe; "watch"; else "ok"."""
    if sbe_per_day > config.retire_sbe_per_day and p_dbe > config.retire_p_dbe:
        return "retire"
    if sbe_per_day > config.watch_sbe_per_day or p_dbe > config.watch_p_dbe:
        return "watch"
    return "ok"
