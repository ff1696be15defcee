"""Health score per GPU in [0, 1]: ``1 - (w_sbe * sbe + w_remap * remap + w_xid * xid)``.

Each term is normalised to [0, 1] with a documented saturation (:class:`ScoreConfig`), and the
weights lie on the simplex (non-negative, summing to 1), so the score is 1 for a clean GPU and 0
for one saturated on every term. Weights default to 0.4 / 0.3 / 0.3 and may be refitted from
history (:mod:`suanli.analysis.health.weights`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["HealthWeights", "ScoreConfig", "health_score", "score_terms"]

F64 = npt.NDArray[np.float64]


@dataclass(frozen=True)
class HealthWeights:
    """Weights of the three terms; non-negative and summing to 1."""

    sbe: float = 0.4
    remap: float = 0.3
    xid: float = 0.3

    def as_array(self) -> F64:
        return np.array([self.sbe, self.remap, self.xid], dtype=np.float64)

    @classmethod
    def from_array(cls, w: F64) -> HealthWeights:
        v = np.clip(np.asarray(w, dtype=np.float64), 0.0, None)
        v = v / v.sum() if v.sum() > 0 else np.array([0.4, 0.3, 0.3])
        return cls(float(v[0]), float(v[1]), float(v[2]))


@dataclass(frozen=True)
class ScoreConfig:
    """Saturations that map each raw quantity to a [0, 1] term."""

    sbe_saturation_per_day: float = 10.0
    """SBE intensity (events/day) at which the SBE term reaches 1 (the retirement threshold)."""
    remap_saturation_rows: float = 8.0
    """Weighted remapped rows at which the remap term reaches 1 (A100/H100 have 8 spare rows
    per bank, so 8 remaps is where replacement is due)."""
    uncorrectable_row_factor: float = 4.0
    """An uncorrectable remapped row, or a remap failure, counts as this many correctable rows."""
    xid_saturation: float = 3.0
    """Hardware Xid errors (memory, bus, GSP, NVLink codes) and DBEs at which the Xid term is 1."""


def score_terms(sbe_per_day: F64, correctable_rows: F64, uncorrectable_rows: F64, xid_errors: F64,
                config: ScoreConfig = ScoreConfig()) -> F64:
    """(n, 3) array of normalised terms (sbe, remap, xid), each in [0, 1]; NaN counts as 0."""
    sbe = np.nan_to_num(np.asarray(sbe_per_day, dtype=np.float64)) / config.sbe_saturation_per_day
    rows = (np.nan_to_num(np.asarray(correctable_rows, dtype=np.float64))
            + config.uncorrectable_row_factor * np.nan_to_num(np.asarray(uncorrectable_rows, dtype=np.float64)))
    remap = rows / config.remap_saturation_rows
    xid = np.nan_to_num(np.asarray(xid_errors, dtype=np.float64)) / config.xid_saturation
    return np.clip(np.stack([sbe, remap, xid], axis=-1), 0.0, 1.0)


def health_score(terms: F64, weights: HealthWeights = HealthWeights()) -> F64:
    """1 - terms . weights, in [0, 1]."""
    return np.asarray(np.clip(1.0 - np.asarray(terms) @ weights.as_array(), 0.0, 1.0), dtype=np.float64)
