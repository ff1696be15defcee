"""Refit the health-score weights from history, shrunk toward the prior, versioned in JSON.

History: for each GPU the three normalised terms at some time and whether it later failed (a DBE,
Xid 48/63/64/79/94/95, or retirement). Model: P(fail) = sigmoid(a + b * terms . w) with w on the
simplex (w >= 0, sum w = 1) and b >= 0, fitted by maximum likelihood with SLSQP.

Shrinkage: the information about w grows with the number of failures, not of GPUs, so the fit is
blended with the prior as w = (F * w_fit + F0 * w_prior) / (F + F0), F the failures in the history
and F0 = ``prior_failures`` pseudo-failures (default 20): with 20 failures the fit and the prior
weigh the same; fewer than ``min_failures`` keep the prior unchanged. The blend stays on the simplex.

Versions are kept in a small JSON file ``{"versions": [...]}``, newest last, each with the date,
data size (GPUs, failures), reason, the raw fit and the shrunk weights in use.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from suanli.analysis.health.score import HealthWeights
from suanli.errors import InputError

__all__ = ["WeightsConfig", "WeightsVersion", "load_weight_history", "load_weights", "refit_weights",
           "save_weights"]

F64 = npt.NDArray[np.float64]
_DEFAULT_WEIGHTS = HealthWeights()


@dataclass(frozen=True)
class WeightsConfig:
    """Shrinkage of refitted weights toward the prior."""

    prior_failures: float = 20.0
    """F0: pseudo-failures the prior weights are worth."""
    min_failures: int = 3
    """Below this many failures the prior is kept as is."""


@dataclass(frozen=True)
class WeightsVersion:
    """One refit: what is in use (``weights``), what the data alone said (``fitted``), and why."""

    version: int
    date: str
    weights: HealthWeights
    fitted: HealthWeights | None
    n_gpus: int
    n_failures: int
    shrinkage: float                # share of the prior in ``weights``
    reason: str


def _nll(x: F64, terms: F64, failed: F64) -> float:
    a, b, w = x[0], x[1], x[2:]
    z = a + b * (terms @ w)
    return float(np.mean(np.logaddexp(0.0, z) - failed * z))


def refit_weights(terms: F64, failed: npt.ArrayLike, prior: HealthWeights = _DEFAULT_WEIGHTS,
                  config: WeightsConfig = WeightsConfig(), reason: str = "refit",
                  version: int = 1) -> WeightsVersion:
    """Constrained logistic fit of the weights on a history, shrunk toward ``prior``."""
    x_terms = np.asarray(terms, dtype=np.float64)
    y = np.asarray(failed, dtype=np.float64)
    n_fail = int(y.sum())
    date = datetime.now(tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if n_fail < config.min_failures or n_fail == len(y):
        return WeightsVersion(version, date, prior, None, len(y), n_fail, 1.0,
                              f"{reason}: too few failures ({n_fail}), prior kept")
    base = float(np.log(max(y.mean(), 1e-6) / max(1 - y.mean(), 1e-6)))
    x0 = np.concatenate([[base, 1.0], prior.as_array()])
    from scipy.optimize import minimize  # here: SciPy's import costs every CLI verb a second

    res = minimize(_nll, x0, args=(x_terms, y), method="SLSQP",
                   bounds=[(-30.0, 30.0), (0.0, 100.0), (0.0, 1.0), (0.0, 1.0), (0.0, 1.0)],
                   constraints=[{"type": "eq", "fun": lambda x: float(np.sum(x[2:]) - 1.0)}],
                   options={"maxiter": 200, "ftol": 1e-10})
    fitted = HealthWeights.from_array(res.x[2:])
    share = config.prior_failures / (n_fail + config.prior_failures)
    used = HealthWeights.from_array((1 - share) * fitted.as_array() + share * prior.as_array())
    return WeightsVersion(version, date, used, fitted, len(y), n_fail, share, reason)


def _to_json(v: WeightsVersion) -> dict[str, Any]:
    return asdict(v)


def _from_json(d: dict[str, Any], path: Path, i: int) -> WeightsVersion:
    try:
        fitted = d.get("fitted")
        return WeightsVersion(int(d["version"]), str(d["date"]), HealthWeights(**d["weights"]),
                              HealthWeights(**fitted) if fitted else None, int(d["n_gpus"]),
                              int(d["n_failures"]), float(d["shrinkage"]), str(d["reason"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"bad weights version: {exc}", file=str(path), key=f"versions[{i}]") from exc


def load_weight_history(path: str | Path) -> list[WeightsVersion]:
    """All versions in the file, oldest first; [] when the file does not exist."""
    p = Path(path)
    if not p.exists():
        return []
    try:
        doc = json.loads(p.read_text())
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc.msg}", file=str(p), line=exc.lineno) from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("versions"), list):
        raise InputError("expected an object with a 'versions' list", file=str(p), key="versions")
    return [_from_json(d, p, i) for i, d in enumerate(doc["versions"])]


def load_weights(path: str | Path | None) -> HealthWeights:
    """The weights in use: the newest version in the file, else the defaults."""
    history = load_weight_history(path) if path else []
    return history[-1].weights if history else HealthWeights()


def save_weights(path: str | Path, version: WeightsVersion) -> WeightsVersion:
    """Append a version (its number becomes last + 1) and return it as stored."""
    p = Path(path)
    history = load_weight_history(p)
    stored = WeightsVersion(**{**asdict(version), "weights": version.weights, "fitted": version.fitted,
                               "version": (history[-1].version + 1) if history else 1})
    doc = {"versions": [_to_json(v) for v in [*history, stored]]}
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(doc, indent=2) + "\n")
    return stored
