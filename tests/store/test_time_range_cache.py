"""``time_range`` is read once per state of the store: a commit makes it read again."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from suanli.ingest.records import SeriesKey
from suanli.store.duck import DuckStore


def test_time_range_follows_every_commit(tmp_path: Path) -> None:
    # Samples at 100..200 s, then a later batch at 500 s: the range is (100, 200) and then (100, 500),
    # on the same open store and after reopening it.
    path = tmp_path / "x.duckdb"
    key = SeriesKey("DCGM_FI_DEV_GPU_TEMP", (("gpu", "0"),), "gpu", "n1/gpu0", None)
    with DuckStore(path) as store:
        store.add_samples(key, np.array([100.0, 200.0]), np.array([40.0, 41.0]))
        assert store.time_range() == (100.0, 200.0)
        assert store.time_range() == (100.0, 200.0)          # the cached answer
        store.add_samples(key, np.array([500.0]), np.array([42.0]))
        assert store.time_range() == (100.0, 500.0)          # the buffered write is committed first
    with DuckStore(path) as store:
        assert store.time_range() == (100.0, 500.0)
