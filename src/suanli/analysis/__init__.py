"""suanli.analysis: pure analyses over the store's frames, each with one config of documented
defaults and an ``analyze(store, inventory, config)`` adapter returning findings and its own
outputs (ledger: MFU, goodput, cost; health: scores and forecasts; fabric: latency, counters,
stragglers, storage; job_events: out-of-memory and hangs)."""

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
