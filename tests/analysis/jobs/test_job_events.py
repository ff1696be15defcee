"""Job-level findings from log records; a hang's detection dated by when its steps stopped."""

from __future__ import annotations

import numpy as np
import pytest

from suanli.analysis.jobs import JobEventsConfig, job_findings, stall_time
from suanli.ingest.records import Event
from suanli.inventory import Inventory, load_inventory
from tests.conftest import shared_path

JOB = "llama-34b-continual"


@pytest.fixture(scope="module")
def inv() -> Inventory:
    return load_inventory(shared_path("scenarios", "switch_port_errors", "inventory.yaml"))


def test_stall_time_is_the_last_step_plus_three_median_steps() -> None:
    # steps of 10, 10, 12, 10 s ending at 10, 20, 32, 42; then nothing: median 10 -> 42 + 30 = 72
    ends, durs = np.array([10.0, 20.0, 32.0, 42.0]), np.array([10.0, 10.0, 12.0, 10.0])
    assert stall_time(ends, durs, before_ts=500.0, stall_steps=3.0) == pytest.approx(72.0)
    assert stall_time(ends[:2], durs[:2], 500.0, 3.0) is None          # too few steps to know a pace


def _timeout(ts: float, timeout_ms: int = 600_000) -> Event:
    return Event(ts, "node-001", "rank", f"{JOB}/rank3", "nccl_timeout", "Watchdog caught collective "
                 "operation timeout", attrs={"timeout_ms": timeout_ms, "op_type": "ALLREDUCE"},
                 source="trainer.log:9")


def test_hang_onset_from_the_watchdog_and_detection_from_the_stall(inv: Inventory) -> None:
    # watchdog at t = 1000 with a 600 s timeout: the collective started at 400
    (f,) = job_findings([_timeout(1000.0)], inv, JobEventsConfig(), lambda job, before: 430.0)
    assert (f.category, f.entity_id, f.start, f.detected_at) == ("collective_hang", JOB, 400.0, 430.0)
    (g,) = job_findings([_timeout(1000.0)], inv, JobEventsConfig(), None)   # no spans: the watchdog
    assert g.detected_at == 1000.0


def test_oom_is_the_jobs_own_finding(inv: Inventory) -> None:
    oom = Event(50.0, "node-002", "gpu", "node-002/gpu3", "cuda_oom", "torch.OutOfMemoryError: CUDA out of "
                "memory. Tried to allocate 2.00 GiB", source="trainer.log:3")
    (f,) = job_findings([oom], inv)
    assert (f.category, f.entity_kind, f.entity_id, f.start) == ("oom", "job", JOB, 50.0)
