"""The stopping rule for waiting on a fault that may clear by itself (ski rental).

Staying degraded is renting: it costs ``r`` per second for as long as the fault lasts. Acting is
buying: ``P(t)``, what acting would cost at that moment (the work since the checkpoint to redo,
the restart, and the loss rate afterwards until the horizon). The fault's duration is unknown. The
rule keeps paying while the degraded cost accumulated since the onset, ``r·(e + t)``, stays below
``P(t)``, and acts at the first moment it reaches it. For a constant price ``B`` that is the
classical break-even rule, ``T* = B / r``: whatever the duration, it pays at most twice what the
best choice in hindsight pays (2-competitive). A price that moves with the checkpoint cycle
between ``P_min`` and ``P_max`` weakens the bound to ``2·P_max / P_min`` (docs/decisions.md).

``P`` is linear between checkpoints (``slope`` per second: work accumulates, the remaining
horizon shrinks) and drops at each checkpoint (``resets``), so the first crossing is found piece
by piece, exactly.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

__all__ = ["first_crossing"]


def first_crossing(rent_per_s: float, elapsed_s: float, price_at: Callable[[float], float], slope: float,
                   resets: Sequence[float], horizon_s: float) -> float | None:
    """Seconds from now until ``r·(elapsed + t) >= P(t)``, or None if not before ``horizon_s``.

    ``price_at(t)`` is the price at ``t`` (right after a reset when ``t`` is one); between resets it
    changes by ``slope`` per second."""
    if rent_per_s <= 0.0:
        return None
    edges = [*sorted({0.0, *(t for t in resets if 0.0 < t < horizon_s)}), horizon_s]
    for a, b in itertools.pairwise(edges):
        gap = rent_per_s * (elapsed_s + a) - price_at(a)     # >= 0: the sum has reached the price
        if gap >= 0.0:
            return a
        gain = rent_per_s - slope                              # how fast the sum catches up
        if gain > 0.0 and a - gap / gain < b:
            return a - gap / gain
    return None
