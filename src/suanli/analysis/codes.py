"""Small non-negative integers (ranks, step numbers) as codes, without sorting every row.

``np.unique(values, return_inverse=True)`` sorts the whole array (an argsort: a 10,240-GPU job's
40 M phase spans, twice per job). Where the values are non-negative and below ``DENSE_TOP``, a
byte per possible value marks which occur, and a cumulative sum numbers them: one pass, the same
answer (issue 18).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["DENSE_TOP", "int_codes"]

I64 = npt.NDArray[np.int64]

DENSE_TOP = 1 << 26
"""Values below this are marked in a table of that many bytes at most; above it, or negative, sorted."""


def int_codes(values: npt.NDArray[np.integer]) -> tuple[I64, I64]:
    """(sorted distinct values, each row's index into them): ``np.unique(values, return_inverse=True)``."""
    v = np.asarray(values)
    if len(v) == 0 or int(v.min()) < 0 or int(v.max()) >= DENSE_TOP:
        uniq, inv = np.unique(v, return_inverse=True)
        return uniq.astype(np.int64), inv.reshape(-1).astype(np.int64)
    seen = np.zeros(int(v.max()) + 1, dtype=bool)
    seen[v] = True
    number = np.cumsum(seen, dtype=np.int64) - 1
    return np.flatnonzero(seen).astype(np.int64), number[v]
