"""The stopping rule for waiting on a fault that may clear by itself (ski rental).

Staying degraded is renting: it costs ``r`` per second for as long as the fault lasts. Acting is
buying: a one-off ``B``. The fault's duration is unknown. The deterministic break-even rule keeps
paying while the degraded cost accumulated since the onset, ``r·(elapsed)``, stays below ``B`` and
acts when it reaches it, at ``T* = B / r`` after the onset. Whatever the duration, it pays at most
twice what the best choice in hindsight pays (2-competitive; docs/decisions.md has the proof and
the randomized e/(e-1) variant).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BreakEven", "break_even"]


@dataclass(frozen=True)
class BreakEven:
    rent_per_s: float
    buy: float
    break_even_s: float
    """``B / r``: seconds after the onset at which the rule acts (inf when renting is free)."""
    wait_s: float
    """Seconds from now until then (0: the accumulated cost already reached ``B``)."""


def break_even(rent_per_s: float, buy: float, elapsed_s: float) -> BreakEven:
    """The rule for one action: acting costs ``buy``, staying ``rent_per_s``, ``elapsed_s`` paid so far."""
    if rent_per_s <= 0.0:
        return BreakEven(rent_per_s, buy, float("inf"), float("inf"))
    at = max(buy, 0.0) / rent_per_s
    return BreakEven(rent_per_s, buy, at, max(0.0, at - max(elapsed_s, 0.0)))
