"""Small non-negative integers (ranks, step numbers) as codes, without sorting every row.

``np.unique(values, return_inverse=True)`` sorts the whole array (an argsort: a 10,240-GPU job's
40 M phase spans, twice per job). Where the values are non-negative and below ``DENSE_TOP``, a
byte per possible value marks which occur, and a cumulative sum numbers them: one pass, the same
answer (issue 18).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["DENSE_TOP", "distinct_ints", "int_codes"]

I64 = npt.NDArray[np.int64]

DENSE_TOP = 1 << 26
"""Values below this are marked in a table of that many bytes at most; above it, or negative, sorted."""


def _marks(parts: Sequence[npt.NDArray[np.integer]]) -> npt.NDArray[np.bool_] | None:
    """Which values 0..max occur in any of ``parts``; None where a sort must do (empty, negative,
    or too large for the table)."""
    full = [p for p in parts if len(p)]
    if not full or min(int(p.min()) for p in full) < 0:
        return None
    top = max(int(p.max()) for p in full)
    if top >= DENSE_TOP:
        return None
    seen = np.zeros(top + 1, dtype=bool)
    for p in full:
        seen[p] = True
    return seen


def distinct_ints(*parts: npt.NDArray[np.integer]) -> I64:
    """Sorted distinct values of the arrays together: ``np.unique`` of their concatenation."""
    seen = _marks(parts)
    if seen is None:
        return np.unique(np.concatenate([np.asarray(p) for p in parts] or [np.zeros(0)])).astype(np.int64)
    return np.flatnonzero(seen).astype(np.int64)


def int_codes(values: npt.NDArray[np.integer]) -> tuple[I64, I64]:
    """(sorted distinct values, each row's index into them): ``np.unique(values, return_inverse=True)``."""
    v = np.asarray(values)
    seen = _marks([v])
    if seen is None:
        uniq, inv = np.unique(v, return_inverse=True)
        return uniq.astype(np.int64), inv.reshape(-1).astype(np.int64)
    number = np.cumsum(seen, dtype=np.int64) - 1
    return np.flatnonzero(seen).astype(np.int64), number[v]
