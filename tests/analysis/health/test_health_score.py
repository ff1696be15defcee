"""Health score: saturations and weights, worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from suanli.analysis.health.score import HealthWeights, ScoreConfig, health_score, score_terms


def test_terms_and_score_by_hand() -> None:
    # GPU a: 5 SBE/day -> 0.5; 2 correctable rows -> 2/8 = 0.25; 1 Xid -> 1/3
    # score = 1 - (0.4*0.5 + 0.3*0.25 + 0.3/3) = 1 - (0.2 + 0.075 + 0.1) = 0.625
    # GPU b: 50 SBE/day saturates at 1; 1 uncorrectable row = 4 rows -> 0.5; 0 Xid
    # score = 1 - (0.4 + 0.15) = 0.45
    terms = score_terms(np.array([5.0, 50.0]), np.array([2.0, 0.0]), np.array([0.0, 1.0]),
                        np.array([1.0, 0.0]), ScoreConfig())
    assert terms[0] == pytest.approx([0.5, 0.25, 1 / 3])
    assert terms[1] == pytest.approx([1.0, 0.5, 0.0])
    assert health_score(terms) == pytest.approx([0.625, 0.45])


def test_clean_gpu_scores_one_and_nan_is_no_data() -> None:
    terms = score_terms(np.array([0.0, np.nan]), np.zeros(2), np.zeros(2), np.array([0.0, np.nan]))
    assert health_score(terms) == pytest.approx([1.0, 1.0])


def test_everything_saturated_scores_zero_and_weights_normalise() -> None:
    terms = score_terms(np.array([99.0]), np.array([99.0]), np.array([9.0]), np.array([99.0]))
    assert health_score(terms, HealthWeights(0.2, 0.2, 0.6)) == pytest.approx([0.0])
    w = HealthWeights.from_array(np.array([2.0, 1.0, 1.0]))
    assert (w.sbe, w.remap, w.xid) == pytest.approx((0.5, 0.25, 0.25))
