"""What every analysis returns: findings for the incident layer and per-entity values for the rules."""

from __future__ import annotations

from typing import Protocol

from suanli.analysis.findings import Finding

__all__ = ["EntityValues", "Result", "merge_values"]

EntityValues = dict[str, dict[str, float]]
"""``{entity id: {value name: number}}``: what rules may read with an ``analysis`` condition."""


class Result(Protocol):
    """The typed result of ``analyze(store, inventory, window, config)``; each analysis's own result
    class adds its outputs (the ledger's jobs, health's forecasts, the fabric's heatmap)."""

    @property
    def findings(self) -> list[Finding]: ...

    def values(self) -> EntityValues: ...


def merge_values(results: list[Result]) -> EntityValues:
    """Every result's values, one dict per entity (later results add to earlier ones)."""
    out: EntityValues = {}
    for res in results:
        for entity, vals in res.values().items():
            out.setdefault(entity, {}).update(vals)
    return out
