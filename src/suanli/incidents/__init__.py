"""suanli.incidents: alerts and findings in one model, topology-aware correlation, root cause,
incidents over time, and the diagnosis of spec/diagnosis.md."""

from suanli.incidents.correlate import CorrelationConfig, correlate
from suanli.incidents.impact import ImpactConfig, lost_gpu_hours, measure_impact
from suanli.incidents.model import Incident, Signal
from suanli.incidents.signals import alertmanager_signals, finding_signals, signals_from_alerts
from suanli.incidents.tracker import IncidentTracker, TrackerConfig

__all__ = [
    "CorrelationConfig",
    "ImpactConfig",
    "Incident",
    "IncidentTracker",
    "Signal",
    "TrackerConfig",
    "alertmanager_signals",
    "correlate",
    "finding_signals",
    "lost_gpu_hours",
    "measure_impact",
    "signals_from_alerts",
]
