"""Lengths of unions and intersections of half-open intervals, vectorised (sort, running max, reduceat)."""

from __future__ import annotations

import numpy as np

__all__ = ["intersection_length", "merge", "union_length"]


def merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The disjoint, sorted intervals whose union is that of ``[starts[i], ends[i])``.

    Empty intervals (``end <= start``) are dropped; intervals that touch are joined.
    """
    s = np.asarray(starts, dtype=np.float64)
    e = np.asarray(ends, dtype=np.float64)
    keep = e > s
    s, e = s[keep], e[keep]
    if len(s) == 0:
        return s, e
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    reach = np.maximum.accumulate(e)
    first = np.empty(len(s), dtype=bool)
    first[0] = True
    first[1:] = s[1:] > reach[:-1]
    idx = np.flatnonzero(first)
    return s[idx], np.maximum.reduceat(e, idx)


def union_length(starts: np.ndarray, ends: np.ndarray) -> float:
    """Length of the union of the intervals."""
    s, e = merge(starts, ends)
    return float((e - s).sum())


def intersection_length(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> float:
    """Length of (union of ``a``) ∩ (union of ``b``): the boundary sweep of both merged sets.

    Each merged set contributes +1 at its starts and -1 at its ends; the time where the running
    count is 2 is the intersection (ends sort before starts at equal times: half-open intervals).
    """
    sa, ea = merge(*a)
    sb, eb = merge(*b)
    if len(sa) == 0 or len(sb) == 0:
        return 0.0
    t = np.concatenate([sa, sb, ea, eb])
    step = np.concatenate([np.ones(len(sa) + len(sb)), -np.ones(len(ea) + len(eb))])
    order = np.lexsort((step, t))
    t, depth = t[order], np.cumsum(step[order])
    return float(np.diff(t)[depth[:-1] == 2].sum())
