"""What an analysis tells the incident layer: a suspected fault at one entity, with evidence.

Analyses return lists of :class:`Finding`; ``symptoms`` are the dependants where the fault
shows (the ranks it slows, the NICs that retransmit) so the incident layer can count and
suppress them instead of raising incidents of their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from suanli.analysis.categories import CATEGORIES

__all__ = ["CATEGORIES", "Finding", "Symptom"]

@dataclass(frozen=True)
class Symptom:
    """Where a fault shows, not where it is: an entity, what was seen there and when."""

    entity_kind: str
    entity_id: str
    what: str
    ts: float


@dataclass(frozen=True)
class Finding:
    category: str                   # one of CATEGORIES
    entity_kind: str                # root cause kind: gpu | nic | switch_port | storage | job ...
    entity_id: str                  # canonical id
    start: float                    # onset (epoch s)
    end: float | None               # None: still open at the end of the window
    confidence: float               # [0, 1]
    evidence: tuple[str, ...]
    source: str                     # the analysis that found it: "health", "fabric", ...
    detected_at: float | None = None
    symptoms: tuple[Symptom, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
