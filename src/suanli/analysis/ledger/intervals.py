"""Vectorised interval algebra for the ledger: union length of many interval sets at once.

Every function takes intervals as parallel arrays (group id, start, end) and works per group
without a Python loop over groups, so one call handles every rank (or every step of every rank)
of a 10,000-GPU job.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["I64", "group_union_s", "merge_groups", "prefix_max_before", "suffix_min_after"]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


def merge_groups(group: I64, start_s: F64, end_s: F64, presorted: bool = False
                 ) -> tuple[I64, F64, F64]:
    """Merge overlapping intervals within each group.

    Returns (group, start, end) of the disjoint merged intervals, sorted by group then start.
    Empty or inverted intervals (end <= start) are dropped. ``presorted``: the rows are already
    sorted by (group, start), so the sort is skipped.
    """
    ok = end_s > start_s
    if ok.all():                              # the usual case: no copies to make
        g, s, e = group, start_s, end_s
    else:
        g, s, e = group[ok], start_s[ok], end_s[ok]
    if len(s) == 0:
        return g.astype(np.int64), s.astype(np.float64), e.astype(np.float64)
    if not presorted:
        order = np.lexsort((s, g))
        g, s, e = g[order], s[order], e[order]
    # Running max of ends, reset at each group start: shift every group above the previous
    # group's values by a span larger than the whole time range, then undo the shift. In place:
    # at 40 M spans each temporary is 320 MB of fresh pages.
    lo = float(min(s.min(), 0.0))
    span = float(e.max() - lo) + 1.0
    shift = g.astype(np.float64)
    shift -= float(g[0])
    shift *= span
    run_end = np.subtract(e, lo)
    run_end += shift
    np.maximum.accumulate(run_end, out=run_end)
    run_end -= shift
    run_end += lo
    del shift
    starts = np.empty(len(g), dtype=bool)
    starts[0] = True
    np.not_equal(g[1:], g[:-1], out=starts[1:])
    starts[1:] |= s[1:] > run_end[:-1]
    idx = np.flatnonzero(starts)
    seg_end = np.maximum.reduceat(e, idx)
    return g[idx].astype(np.int64), s[idx], seg_end


def group_union_s(group: I64, start_s: F64, end_s: F64, n_groups: int, presorted: bool = False) -> F64:
    """Length of the union of each group's intervals (groups 0..n_groups-1; absent groups 0)."""
    g, s, e = merge_groups(group, start_s, end_s, presorted)
    return np.bincount(g, weights=e - s, minlength=n_groups)[:n_groups].astype(np.float64)


def prefix_max_before(group: I64, values: I64) -> I64:
    """Max of ``values`` over earlier rows of the same group (rows sorted by group); min-int first."""
    lo = int(values.min()) if len(values) else 0
    span = int(values.max()) - lo + 2 if len(values) else 1
    shifted = (values - lo + 1) + group * span
    run = np.maximum.accumulate(shifted)
    prev = np.empty_like(run)
    if len(run):
        prev[0] = 0
        prev[1:] = run[:-1]
    before = prev - group * span + lo - 1
    first = np.ones(len(group), dtype=bool)
    first[1:] = group[1:] != group[:-1]
    return np.where(first, np.iinfo(np.int64).min, before)


def suffix_min_after(group: I64, values: I64) -> I64:
    """Min of ``values`` over later rows of the same group (rows sorted by group); max-int last."""
    neg = prefix_max_before(group[::-1].max() - group[::-1] if len(group) else group, -values[::-1])
    out = -neg[::-1]
    last = np.ones(len(group), dtype=bool)
    last[:-1] = group[1:] != group[:-1]
    return np.where(last, np.iinfo(np.int64).max, out)
