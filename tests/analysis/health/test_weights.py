"""Weight refit: moves toward the true predictor, shrinks when data is thin, versioned JSON."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from suanli.analysis.health.score import HealthWeights
from suanli.analysis.health.weights import load_weight_history, load_weights, refit_weights, save_weights
from suanli.errors import InputError


def _history(driver: int, n: int = 3000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Terms uniform in [0, 1]; failure odds driven by term ``driver`` only (logit -4 + 6 x)."""
    rng = np.random.default_rng(seed)
    terms = rng.uniform(0, 1, (n, 3))
    p = 1 / (1 + np.exp(-(-4 + 6 * terms[:, driver])))
    return terms, (rng.uniform(0, 1, n) < p).astype(float)


@pytest.mark.parametrize("driver", [0, 1, 2])
def test_refit_moves_toward_true_predictor(driver: int) -> None:
    terms, failed = _history(driver)
    prior = HealthWeights()
    v = refit_weights(terms, failed, prior)
    assert v.fitted is not None
    # the data alone put most weight on the driver (the truth is all of it)
    assert v.fitted.as_array()[driver] > 0.8
    # the weights in use moved from the prior toward it, and stay on the simplex
    assert v.weights.as_array()[driver] > prior.as_array()[driver]
    assert v.weights.as_array().sum() == pytest.approx(1.0)
    assert (v.weights.as_array() >= 0).all()
    # hundreds of failures against 20 pseudo-failures: the prior's share is 20/(F+20) < 5 %
    assert v.shrinkage == pytest.approx(20 / (v.n_failures + 20))


def test_thin_data_keeps_prior() -> None:
    terms, failed = _history(0, n=40, seed=1)
    failed[:] = 0
    failed[:2] = 1                                # 2 failures < min_failures = 3
    v = refit_weights(terms, failed)
    assert v.weights == HealthWeights() and v.fitted is None and v.shrinkage == 1.0


def test_versions_append_and_load(tmp_path: Path) -> None:
    path = tmp_path / "weights.json"
    assert load_weights(path) == HealthWeights()
    terms, failed = _history(1, n=800)
    v1 = save_weights(path, refit_weights(terms, failed, reason="first"))
    v2 = save_weights(path, refit_weights(terms, failed, reason="second"))
    hist = load_weight_history(path)
    assert [h.version for h in hist] == [1, 2] and (v1.version, v2.version) == (1, 2)
    assert hist[-1].reason == "second" and hist[-1].n_gpus == 800
    assert load_weights(path) == v2.weights
    doc = json.loads(path.read_text())
    assert set(doc["versions"][0]) >= {"version", "date", "weights", "n_gpus", "n_failures", "reason"}


def test_bad_weights_file_is_input_error(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    path.write_text("{not json")
    with pytest.raises(InputError, match=r"w\.json:1"):
        load_weights(path)
