"""Decide by cost: rank each incident's allowed actions by expected cost over a horizon, wait on
faults that may clear by the ski-rental stopping rule, escalate on history (docs/decisions.md).

Pure functions over typed inputs (:class:`IncidentFacts`); the pipeline's actions stage builds
the inputs (``facts``), calls :func:`decide`, and writes :func:`actions_json` / :func:`decision_json`.
"""

from suanli.analysis.decisions.config import DEFAULT_PRIORS, CategoryPrior, DecisionConfig
from suanli.analysis.decisions.decide import decide
from suanli.analysis.decisions.escalate import Plan, merge_resets, supersede
from suanli.analysis.decisions.model import (
    AllowedAction,
    Capacity,
    Decided,
    Decision,
    Escalation,
    IncidentFacts,
    JobFacts,
    Option,
    Probabilities,
    RankedAction,
    Suspect,
)
from suanli.analysis.decisions.render import (
    IncidentSaving,
    Savings,
    actions_json,
    decision_json,
    mark_superseded,
    plan_of,
    savings,
)

__all__ = [
    "DEFAULT_PRIORS", "AllowedAction", "Capacity", "CategoryPrior", "Decided", "Decision", "DecisionConfig", "Escalation",
    "IncidentFacts", "IncidentSaving", "JobFacts", "Option", "Plan", "Probabilities", "RankedAction", "Savings",
    "Suspect", "actions_json", "decide", "decision_json", "mark_superseded", "merge_resets", "plan_of", "savings", "supersede",
]
