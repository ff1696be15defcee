"""suanli.rules: the YAML rule language (rules, inhibit rules, actions), its evaluator, safe actions and
export. Inhibition itself is the incident layer's (:mod:`suanli.incidents.inhibit`)."""

from suanli.rules.actions import DECISIONS, ActionRunner, AuditLog
from suanli.rules.alerts import Alert, PlannedAction, alerts_timeline
from suanli.rules.condition_data import RulesConfig, RuleStore
from suanli.rules.conditions import Condition, parse_condition, parse_duration
from suanli.rules.entities import EntityIndex
from suanli.rules.evaluator import Evaluator, evaluate_window
from suanli.rules.executors import (
    ActionFailed,
    KubernetesExecutor,
    LogExecutor,
    ShellExecutor,
    SlurmExecutor,
    WebhookExecutor,
    build_executors,
)
from suanli.rules.export import to_alertmanager, to_prometheus
from suanli.rules.language import (
    ActionsConfig,
    ActionSpec,
    ExecutorSpec,
    Rule,
    RuleSet,
    load_rules,
    parse_rules,
)
from suanli.rules.matchers import InhibitRule, Matcher, parse_matcher
from suanli.rules.names import METRICS, MetricDef

__all__ = [
    "DECISIONS",
    "METRICS",
    "ActionFailed",
    "ActionRunner",
    "ActionSpec",
    "ActionsConfig",
    "Alert",
    "AuditLog",
    "Condition",
    "EntityIndex",
    "Evaluator",
    "ExecutorSpec",
    "InhibitRule",
    "KubernetesExecutor",
    "LogExecutor",
    "Matcher",
    "MetricDef",
    "PlannedAction",
    "Rule",
    "RuleSet",
    "RuleStore",
    "RulesConfig",
    "ShellExecutor",
    "SlurmExecutor",
    "WebhookExecutor",
    "alerts_timeline",
    "build_executors",
    "evaluate_window",
    "load_rules",
    "parse_condition",
    "parse_duration",
    "parse_matcher",
    "parse_rules",
    "to_alertmanager",
    "to_prometheus",
]
