"""One DuckStore read and written from several threads at once, as ``suanli serve`` does (its step,
its receivers and its API share the store): a DuckDB connection refuses a second call while one is
running ("connection is busy with another call"), so every use of it must hold the store's lock.
Before every read held it, ``/api/v1/check`` (which reads the ingest reports) answered 503 in CI
while a step read spans."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from suanli.ingest.records import IngestReport, SeriesKey, Span
from suanli.store.duck import DuckStore

T0 = 1_773_400_000.0


def _key(i: int) -> SeriesKey:
    return SeriesKey("DCGM_FI_DEV_GPU_TEMP", (("UUID", f"GPU-{i}"),), "gpu", f"node-001/gpu{i}")


def _span(sid: str, name: str, start: float, job: str, rank: int, step: int) -> Span:
    return Span("t", sid, None, name, start, start + 0.9, job, rank, step, f"node-001/gpu{rank}", "node-001")


def _filled(path: Path) -> DuckStore:
    store = DuckStore(path)
    for i in range(8):
        store.add_samples(_key(i), T0 + np.arange(2000.0), np.full(2000, 50.0 + i))
    store.add_spans([_span(f"{s}-{r}", "train_step", T0 + s, "j", r, s) for s in range(500) for r in range(4)])
    store.put_inventory("nodes: []\n", "inventory.yaml")
    store.add_report("f", IngestReport())
    store.flush()
    return store


def _hammer(calls: dict[str, Callable[[], object]], seconds: float) -> tuple[dict[str, int], list[str]]:
    """Each call in its own thread, over and over for ``seconds``: (calls done, errors)."""
    done = dict.fromkeys(calls, 0)
    errors: list[str] = []
    stop = time.monotonic() + seconds

    def loop(name: str, call: Callable[[], object]) -> None:
        while time.monotonic() < stop:
            try:
                call()
                done[name] += 1
            except Exception as exc:            # what the test counts
                errors.append(f"{name}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=loop, args=item) for item in calls.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return done, errors


def test_every_read_and_a_writer_from_their_own_threads(tmp_path: Path) -> None:
    store = _filled(tmp_path / "s.duckdb")
    written = [0]

    def write() -> None:                    # a receiver's transaction: new series and spans
        written[0] += 1
        store.add_samples(_key(100 + written[0]), np.array([T0]), np.array([1.0]))
        store.add_spans([_span(f"w{written[0]}", "recv", T0, "k", 0, written[0])])
        store.flush()

    small = {"reports": store.reports, "loaded_files": store.loaded_files, "inventory": store.inventory_text,
             "inventory_source": store.inventory_source, "stats": store.stats, "counts": store.counts,
             "metrics": store.metrics, "file_loaded": lambda: store.file_loaded("x"),
             "series_keys": store.series_keys, "unresolved": store.unresolved_series}
    reads = {"spans": lambda: store.spans("j"), "series": lambda: store.series("DCGM_FI_DEV_GPU_TEMP"),
             "events": store.events, "time_range": store.time_range, "small": lambda: [f() for f in small.values()],
             "write": write}
    try:
        done, errors = _hammer(reads, 1.0)
        assert errors == []
        assert min(done.values()) > 0, done
        assert len(store.spans("j")) == 2000                  # nothing the writer did touched job j
        assert len(store.series_keys()) == 8 + written[0]
    finally:
        store.close()
