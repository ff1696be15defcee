"""Lost GPU-hours worked by hand: (T - n*b) * G / 3600 (incidents/impact.py)."""

from __future__ import annotations

import numpy as np
import pytest

from suanli.incidents.impact import lost_gpu_hours


def test_slowed_job_loses_the_unproductive_part_of_the_window() -> None:
    # healthy: a 10 s step ending at t = 10, 20, ..., 100; the fault starts at t = 100
    # faulty: 20 s steps ending at 120, 140, 160, 180, 200 -> in (100, 200]: n = 5, b = 10 s
    ends = np.array([*range(10, 101, 10), 120, 140, 160, 180, 200], dtype=float)
    durs = np.array([10.0] * 10 + [20.0] * 5)
    # (100 - 5*10) s * 8 GPUs = 400 GPU-s = 0.1111 GPU-h
    assert lost_gpu_hours(ends, durs, 100.0, 200.0, 8) == pytest.approx(400 / 3600)


def test_a_stalled_job_loses_everything() -> None:
    ends = np.arange(10.0, 101.0, 10.0)
    durs = np.full(10, 10.0)
    assert lost_gpu_hours(ends, durs, 100.0, 400.0, 16) == pytest.approx(300 * 16 / 3600)


def test_no_baseline_no_estimate_and_never_negative() -> None:
    assert lost_gpu_hours(np.array([5.0]), np.array([5.0]), 10.0, 100.0, 8) is None
    ends = np.arange(10.0, 301.0, 10.0)                 # no slowdown at all: 20 steps in 200 s
    assert lost_gpu_hours(ends, np.full(len(ends), 10.0), 100.0, 300.0, 8) == pytest.approx(0.0)
