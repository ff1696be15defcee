"""A unit's peers at its own times: each peer interpolated there, then the median across them.

Health compares a GPU with the other GPUs of its node; fabric compares a port or NIC with the
others of its rail. Both ask the same question at every one of the unit's timestamps, so it is
answered here once, in columns: NumPy's ``nanmedian`` takes a slow masked-array path for the few
rows (peers) and many columns (timestamps) this has, which made it a tenth of a diagnosis.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["Track", "column_nanmedian", "interp_at", "peer_median_at", "tracks_median_at"]

F64 = npt.NDArray[np.float64]


def column_nanmedian(stack: F64) -> F64:
    """Median of each column of a 2-D array over its values that are not NaN (NaN where a column
    has none): the numbers of ``np.nanmedian(stack, axis=0)``, the middle value or the mean of the
    two middle ones, without its warning for an all-NaN column."""
    stack = np.asarray(stack, dtype=np.float64)
    if stack.shape[0] == 0:
        return np.full(stack.shape[1], np.nan)
    srt = np.sort(stack, axis=0)                              # NaN sorts last
    k = (~np.isnan(srt)).sum(axis=0)
    cols = np.arange(srt.shape[1])
    lo = srt[np.maximum((k - 1) // 2, 0), cols]                # the two middle values (equal when k is odd)
    hi = srt[np.minimum(k // 2, srt.shape[0] - 1), cols]
    with np.errstate(invalid="ignore"):                      # inf + -inf: NaN, as nanmedian's
        out = np.where(k % 2 == 1, lo, 0.5 * (lo + hi))
    return np.where(k > 0, out, np.nan)


@dataclass(frozen=True, eq=False)         # arrays: no meaningful ==
class Track:
    """A series' finite points in time order, ready to be read at other times. A unit with many
    peers, each the peer of many units (a rail's ports), prepares each series once, not once per unit."""

    t: F64
    v: F64

    @classmethod
    def of(cls, pts: F64, pv: F64) -> Track | None:
        """None with fewer than two finite points."""
        ok = np.isfinite(pv) & np.isfinite(pts)
        if ok.sum() < 2:
            return None
        t, v = pts[ok], pv[ok]
        if (np.diff(t) < 0).any():
            order = np.argsort(t, kind="stable")
            t, v = t[order], v[order]
        return cls(t, v)

    def at(self, ts: F64) -> F64:
        """Interpolated at ``ts``, NaN outside the track's range."""
        return np.interp(ts, self.t, self.v, left=np.nan, right=np.nan)


def interp_at(ts: F64, pts: F64, pv: F64) -> F64 | None:
    """``(pts, pv)`` interpolated at ``ts``, NaN outside its range; None with fewer than two finite
    points. Its points are put in time order first where they are not."""
    track = Track.of(pts, pv)
    return None if track is None else track.at(ts)


def tracks_median_at(ts: F64, tracks: Sequence[Track]) -> F64:
    """Median over the tracks of their values at ``ts`` (NaN where none has data)."""
    if not tracks:
        return np.full(np.shape(ts), np.nan)
    return column_nanmedian(np.vstack([tr.at(ts) for tr in tracks]))


def peer_median_at(ts: F64, peers: Sequence[tuple[F64, F64]]) -> F64:
    """Median over the peers of their values interpolated at ``ts`` (NaN where no peer has data);
    a peer needs two finite points (:func:`Track.of`)."""
    return tracks_median_at(ts, [tr for pts, pv in peers if (tr := Track.of(pts, pv)) is not None])
