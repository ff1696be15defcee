"""Memory findings against a healthy card's background: numbers worked out by hand.

The window is 80 scrapes of 15 s (20 min). At the background ceiling of 10 SBE/h a healthy card
counts Poisson(10/3) SBEs in it: P(N >= 10) = 0.0024 and P(N >= 11) = 0.00069, so 10 spread evenly
are background and 11 are not (alpha 1e-3). A rise: all of n SBEs in the later half has probability
0.5^n under an even rate: 9 -> 0.0020 (not enough), 10 -> 0.00098 (rising).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from suanli.analysis.health import analyze
from suanli.analysis.health import events as hw
from tests.analysis.health.test_health import N_STEPS, build

TARGET = "node-002/gpu6"


def _sbe_at(indices: list[int], reset_at: int | None = None, gap: slice | None = None):  # type: ignore[no-untyped-def]
    def mutate(gid: str, metric: str, t: np.ndarray, v: np.ndarray) -> np.ndarray:
        if gid != TARGET or metric != hw.SBE:
            return v
        inc = np.zeros(N_STEPS)
        np.add.at(inc, indices, 1.0)
        out = v + np.cumsum(inc)
        if reset_at is not None:                       # driver reload: the volatile counter restarts at 0
            out[reset_at:] = np.cumsum(inc[reset_at:])
        if gap is not None:
            out[gap] = np.nan                          # exporter gap
        return out
    return mutate


def _memory(tmp_path: Path, mutate) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    store, inv = build(tmp_path, mutate)
    inv.jobs = {}
    return [(f.category, f.entity_id) for f in analyze(store, inv).findings]  # type: ignore[arg-type]


def _even(n: int) -> list[int]:
    return [int(x) for x in np.linspace(2, N_STEPS - 2, n)]


def test_a_few_background_sbes_on_a_zero_baseline_are_no_finding(tmp_path: Path) -> None:
    assert _memory(tmp_path, _sbe_at([20, 40, 60, 75])) == []


def test_ten_even_sbes_are_background_eleven_are_not(tmp_path: Path) -> None:
    assert _memory(tmp_path, _sbe_at(_even(10))) == []
    assert _memory(tmp_path, _sbe_at(_even(11))) == [("gpu_memory_degradation", TARGET)]


def test_a_rising_rate_is_found_nine_late_are_not_enough(tmp_path: Path) -> None:
    assert _memory(tmp_path, _sbe_at(list(range(50, 59)))) == []
    assert _memory(tmp_path, _sbe_at(list(range(50, 60)))) == [("gpu_memory_degradation", TARGET)]


def test_counter_reset_and_exporter_gap_raise_nothing(tmp_path: Path) -> None:
    # the counter starts at its lifetime count, restarts at 0 mid-window, then counts 4: increase 4
    assert _memory(tmp_path, _sbe_at([10, 50, 60, 70], reset_at=40)) == []
    # 2 minutes without readings, then the count goes on: the increase lands after the gap
    assert _memory(tmp_path, _sbe_at([30, 33, 36], gap=slice(30, 38))) == []


def test_remap_and_dbe_are_found_on_their_own(tmp_path: Path) -> None:
    def remap(gid: str, metric: str, t: np.ndarray, v: np.ndarray) -> np.ndarray:
        if gid == TARGET and metric == hw.REMAP_CORR:
            return v + (np.arange(N_STEPS) >= 50)
        if gid == "node-003/gpu1" and metric == hw.DBE:
            return v + (np.arange(N_STEPS) >= 60)
        return v

    assert sorted(_memory(tmp_path, remap)) == [("gpu_memory_degradation", TARGET),
                                                ("gpu_memory_failure", "node-003/gpu1")]
