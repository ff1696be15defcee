"""suanli.incidents: alerts and findings in one model, inhibition over every signal, where a fault
reaches (one test for correlation and inhibition), topology-aware correlation with root cause,
impact, and incidents over time."""

from suanli.incidents.correlate import CorrelationConfig, correlate
from suanli.incidents.impact import ImpactConfig, lost_gpu_hours, measure_impact
from suanli.incidents.inhibit import InhibitionResult, apply_inhibitions, inhibit
from suanli.incidents.model import ActionDecision, Impact, Incident, Signal
from suanli.incidents.reach import Reach
from suanli.incidents.signals import alertmanager_signals, finding_signals, signals_from_alerts
from suanli.incidents.tracker import IncidentTracker, TrackerConfig

__all__ = [
    "ActionDecision",
    "CorrelationConfig",
    "Impact",
    "ImpactConfig",
    "Incident",
    "IncidentTracker",
    "InhibitionResult",
    "Reach",
    "Signal",
    "TrackerConfig",
    "alertmanager_signals",
    "apply_inhibitions",
    "correlate",
    "finding_signals",
    "inhibit",
    "lost_gpu_hours",
    "measure_impact",
    "signals_from_alerts",
]
