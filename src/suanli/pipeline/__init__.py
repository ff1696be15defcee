"""suanli.pipeline: the stage chain analyses -> rule alerts -> inhibition -> correlation -> impact ->
actions, over a window (:func:`diagnose`, batch) or as an incremental step over a sliding window
(:class:`Pipeline`, what ``serve`` calls); its inputs, its sources and the RCA's data."""

from typing import TYPE_CHECKING

from suanli.lazy import lazy_exports

if TYPE_CHECKING:
    from suanli.pipeline.batch import diagnose
    from suanli.pipeline.inputs import Files, Inputs, load_inputs, read_alert_payloads
    from suanli.pipeline.live import Pipeline, Step
    from suanli.pipeline.model import AnalysisResults, Correlated, Diagnosis, RuleAlerts
    from suanli.pipeline.sources import (
        diagnose_folder,
        open_db,
        open_folder,
        open_prometheus,
        stored_inventory,
    )

__all__ = [
    "AnalysisResults",
    "Correlated",
    "Diagnosis",
    "Files",
    "Inputs",
    "Pipeline",
    "RuleAlerts",
    "Step",
    "diagnose",
    "diagnose_folder",
    "load_inputs",
    "open_db",
    "open_folder",
    "open_prometheus",
    "read_alert_payloads",
    "stored_inventory",
]

__getattr__ = lazy_exports(__name__, {
    "diagnose": "batch",
    "Files": "inputs",
    "Inputs": "inputs",
    "load_inputs": "inputs",
    "read_alert_payloads": "inputs",
    "Pipeline": "live",
    "Step": "live",
    "AnalysisResults": "model",
    "Correlated": "model",
    "Diagnosis": "model",
    "RuleAlerts": "model",
    "diagnose_folder": "sources",
    "open_db": "sources",
    "open_folder": "sources",
    "open_prometheus": "sources",
    "stored_inventory": "sources",
})
