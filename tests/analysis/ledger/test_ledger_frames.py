"""Helpers that build small SpanFrames by hand for the ledger tests (no tests of their own)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from suanli.store.api import SpanFrame

Row = tuple[int, int, str, float, float]        # rank, step (-1 unknown), name, start_s, end_s


def make_frame(rows: Sequence[Row], job: str = "job-a", t0: float = 1.7e9) -> SpanFrame:
    """A SpanFrame of the given rows; times are offsets from ``t0`` (epoch seconds)."""
    n = len(rows)

    def obj(values: Sequence[object]) -> np.ndarray:  # type: ignore[type-arg]
        out = np.empty(n, dtype=object)
        out[:] = list(values)
        return out

    return SpanFrame(
        job_id=obj([job] * n),
        rank=np.array([r[0] for r in rows], dtype=np.int64),
        step=np.array([r[1] for r in rows], dtype=np.int64),
        name=obj([r[2] for r in rows]),
        start_s=np.array([t0 + r[3] for r in rows], dtype=np.float64),
        end_s=np.array([t0 + r[4] for r in rows], dtype=np.float64),
        gpu_id=obj([f"node-001/gpu{r[0]}" for r in rows]),
        node_id=obj(["node-001"] * n),
        trace_id=obj([f"t{r[1]}" for r in rows]),
        span_id=obj([f"s{i}" for i in range(n)]),
        parent_id=obj([None] * n),
    )


def split_rows(rows: Sequence[Row]) -> tuple[list[Row], list[Row]]:
    """(train_step rows, other rows)."""
    return [r for r in rows if r[2] == "train_step"], [r for r in rows if r[2] != "train_step"]
