"""suanli.analysis: analyses over the store's frames, one subpackage each (ledger: MFU, goodput,
cost; health: scores and forecasts; fabric: latency, counters, stragglers, storage; jobs:
out-of-memory and hangs). Each is ``analyze(store, inventory, window, config) -> Result``
(findings for the incident layer, ``values()`` per entity for the rules), with one config of
documented defaults, and reads no file. The category table (``categories``) is the policy every
layer shares."""

from typing import TYPE_CHECKING

from suanli.lazy import lazy_exports

if TYPE_CHECKING:
    from suanli.analysis import fabric, health, jobs, ledger
    from suanli.analysis.changepoint import ChangeConfig, ChangePoint, sudden_increase
    from suanli.analysis.fabric import FabricConfig, FabricResult, Heatmap
    from suanli.analysis.findings import CATEGORIES, Finding, Symptom
    from suanli.analysis.health import HealthConfig, HealthResult
    from suanli.analysis.health.overrides import load_overrides, record_override
    from suanli.analysis.health.weights import load_weights, refit_weights, save_weights
    from suanli.analysis.jobs import JobEventsConfig, JobEventsResult
    from suanli.analysis.ledger import LedgerConfig, LedgerResult

__all__ = [
    "CATEGORIES",
    "ChangeConfig",
    "ChangePoint",
    "FabricConfig",
    "FabricResult",
    "Finding",
    "HealthConfig",
    "HealthResult",
    "Heatmap",
    "JobEventsConfig",
    "JobEventsResult",
    "LedgerConfig",
    "LedgerResult",
    "Symptom",
    "fabric",
    "health",
    "jobs",
    "ledger",
    "load_overrides",
    "load_weights",
    "record_override",
    "refit_weights",
    "save_weights",
    "sudden_increase",
]

__getattr__ = lazy_exports(__name__, {
    "fabric": "fabric",
    "health": "health",
    "jobs": "jobs",
    "ledger": "ledger",
    "ChangeConfig": "changepoint",
    "ChangePoint": "changepoint",
    "sudden_increase": "changepoint",
    "FabricConfig": "fabric",
    "FabricResult": "fabric",
    "Heatmap": "fabric",
    "CATEGORIES": "findings",
    "Finding": "findings",
    "Symptom": "findings",
    "HealthConfig": "health",
    "HealthResult": "health",
    "load_overrides": "health.overrides",
    "record_override": "health.overrides",
    "load_weights": "health.weights",
    "refit_weights": "health.weights",
    "save_weights": "health.weights",
    "JobEventsConfig": "jobs",
    "JobEventsResult": "jobs",
    "LedgerConfig": "ledger",
    "LedgerResult": "ledger",
})
