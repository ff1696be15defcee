"""The probe never hurts the training job: no exception out, bounded queue with counted drops,
bounded memory, off at near-zero cost."""

from __future__ import annotations

import gc
import math
import os
import socket
import threading
import time
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from suanli.probe import NOOP, Probe
from tests.probe._collector import Collector
from tests.probe._otlp import by_name, read_spans

PHASES = ("data_load", "forward", "backward", "optimizer")


class RaisingExporter(SpanExporter):
    """An exporter that fails every way it can."""

    def __init__(self) -> None:
        self.calls = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.calls += 1
        raise RuntimeError("collector exploded")

    def shutdown(self) -> None:
        raise OSError("and again on shutdown")


def _train(probe: Probe, steps: int) -> None:
    for i in range(steps):
        with probe.step(i, tokens=10):
            for name in PHASES:
                with probe.phase(name):
                    pass


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_failing_exporter_never_reaches_the_loop() -> None:
    exporter = RaisingExporter()
    probe = Probe(job_id="j", rank=0, exporter=exporter)
    _train(probe, 300)
    probe.flush()
    probe.close()
    st = probe.stats()
    assert exporter.calls >= 1
    assert st["spans_exported"] == 0
    assert st["spans_export_failed"] == 300 * 5 + 1          # every span counted as failed, none lost silently
    assert st["spans_dropped"] == 0


def test_hostile_inputs_are_counted_not_raised(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    probe = Probe(job_id="j", rank=0, file=str(path))
    with probe.phase("forward"):                  # outside any step
        pass
    for bad in ("abc", None, float("nan"), 2**70, [1]):
        with probe.step(bad, tokens="many", model_flops=-1):
            with probe.phase(None):  # type: ignore[arg-type]
                pass
            with probe.phase(12345):  # type: ignore[arg-type]
                pass
            with probe.phase("x" * 10_000):
                pass
    with probe.step(7, tokens=float("inf")):
        for _ in range(1000):                     # more phases than a step keeps
            with probe.phase("forward"):
                pass
        probe.annotate(tokens=object(), model_flops="?")
    probe.step(8).__enter__()                     # never closed: closed by the next step
    with probe.step(9):
        pass
    probe.step(10).__exit__(None, None, None)     # closed, never opened
    with probe.checkpoint_save(step="not a step"):
        pass
    probe.close()
    st = probe.stats()
    assert st["outside_step"] == 1
    assert st["bad_inputs"] >= 5 + (1000 - 256) + 2
    assert st["errors"] == 0
    spans = read_spans(path)
    steps = by_name(spans, "train_step")
    # bad step numbers continue from the last good one (-1 at the start: 0, 1, 2, ...)
    assert [s["attrs"]["train.step"] for s in steps] == [0, 1, 2, 3, 4, 7, 8, 9]
    assert all("train.tokens" not in s["attrs"] and "train.model_flops" not in s["attrs"] for s in steps)
    names = {s["name"] for s in spans}
    assert {"None", "12345", "x" * 64} <= names
    seven = next(s for s in steps if s["attrs"]["train.step"] == 7)
    assert sum(1 for s in spans if s.get("parentSpanId") == seven["spanId"]) == 256


def test_the_training_codes_exception_passes_through_and_marks_the_step(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    probe = Probe(job_id="j", rank=0, file=str(path))
    with pytest.raises(ValueError, match="loss is nan"), probe.step(0), probe.phase("forward"):
        raise ValueError("loss is nan")
    with probe.step(1):
        pass
    probe.close()
    steps = by_name(read_spans(path), "train_step")
    assert [s["status"].get("code") for s in steps] == [2, None]   # STATUS_CODE_ERROR, then unset


def test_a_broken_timer_switches_the_probe_off_after_max_errors() -> None:
    class BrokenTimer:
        def mark(self) -> Any:
            raise RuntimeError("no clock")

        def resolve(self, rec: Any, force: bool) -> bool:
            return True

    probe = Probe(job_id="j", rank=0, timer=BrokenTimer(), max_errors=5, exporter=RaisingExporter())
    _train(probe, 10)
    assert not probe.enabled and probe.errors == 5
    assert probe.step(11) is NOOP
    probe.close()


def test_dead_collector_drops_and_counts_and_close_is_bounded() -> None:
    probe = Probe(job_id="j", rank=0, endpoint=f"http://127.0.0.1:{_closed_port()}/v1/traces",
                  queue_size=200, export_timeout_s=0.5)
    t0 = time.perf_counter()
    _train(probe, 2000)
    loop_s = time.perf_counter() - t0
    time.sleep(0.5)
    t1 = time.perf_counter()
    probe.close()
    close_s = time.perf_counter() - t1
    st = probe.stats()
    assert st["spans_exported"] == 0
    assert st["spans_dropped"] > 0
    assert st["spans_dropped"] + st["spans_export_failed"] + st["spans_exported"] <= 2000 * 5 + 1
    assert loop_s < 5.0                      # ~10k annotations, no waiting on the network
    assert close_s < 0.5 + 1.0 + 1.5         # the export timeout, the close margin, slack


def test_slow_collector_gets_what_fits_the_rest_is_counted() -> None:
    with Collector(delay_s=0.3) as col:
        probe = Probe(job_id="j", rank=0, endpoint=col.endpoint, queue_size=100, export_timeout_s=3)
        for _ in range(4):
            _train(probe, 250)
            time.sleep(0.2)
        probe.close(timeout_s=5)
        st = probe.stats()
        produced = 1000 * 5 + 1
        assert col.spans == st["spans_exported"] > 0
        assert st["spans_dropped"] > 0
        assert st["spans_exported"] + st["spans_dropped"] + st["spans_export_failed"] == produced


def test_a_live_collector_receives_every_span() -> None:
    with Collector() as col:
        probe = Probe(job_id="j", rank=0, endpoint=col.endpoint)
        _train(probe, 50)
        probe.close()
        assert col.spans == 50 * 5 + 1 == probe.stats()["spans_exported"]
        assert col.names.count("train_step") == 50 and col.names.count("init") == 1


def test_memory_stays_bounded_over_a_long_run() -> None:
    probe = Probe(job_id="j", rank=0, file=os.devnull)
    _train(probe, 500)
    probe.flush()
    gc.collect()
    tracemalloc.start()
    _train(probe, 2000)
    probe.flush()
    gc.collect()
    early, _ = tracemalloc.get_traced_memory()
    _train(probe, 10_000)
    probe.flush()
    gc.collect()
    late, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    probe.close()
    st = probe.stats()          # steps of no work outrun the export thread: many are dropped, as designed
    assert st["spans_exported"] > 10_000 and st["spans_exported"] + st["spans_dropped"] == 12_500 * 5 + 1
    assert late - early < 256 * 1024, (early, late)      # 10,000 more steps, 50,000 spans: no growth
    assert peak < 32 * 2**20


def test_switched_off_by_the_environment_at_near_zero_cost(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUANLI_PROBE", "off")
    threads = threading.active_count()
    path = tmp_path / "t.jsonl"
    probe = Probe(job_id="j", rank=0, file=str(path))
    assert not probe.enabled and threading.active_count() == threads
    n = 100_000
    t0 = time.perf_counter()
    for i in range(n):
        with probe.step(i), probe.phase("forward"):
            pass
    per_step_us = (time.perf_counter() - t0) / n * 1e6
    probe.close()
    assert not path.exists()
    assert math.isfinite(per_step_us) and per_step_us < 5.0      # two no-op context managers
