"""The one configuration object: every threshold of suanli with its documented default.

``Config()`` is what ``suanli diagnose`` uses. Each field is the config dataclass of one part,
documented field by field where it is defined (docs/ledger.md, docs/health.md, docs/fabric.md,
docs/rules.md, docs/incidents.md); the verbs' own limits and the live pipeline's are defined
here::

    Config(health=HealthConfig(detect=DetectConfig(temp_limit_c=90.0)),
           correlation=CorrelationConfig(window_s=600))

What is data rather than a threshold (the rule file, operator overrides, refitted weights,
Alertmanager payloads) is loaded by :mod:`suanli.pipeline.inputs`, never by an analysis.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from suanli.analysis.decisions import DecisionConfig
from suanli.analysis.fabric import FabricConfig
from suanli.analysis.health import HealthConfig
from suanli.analysis.jobs import JobEventsConfig
from suanli.analysis.ledger import LedgerConfig
from suanli.analysis.nvswitch import NvSwitchConfig
from suanli.incidents.correlate import CorrelationConfig
from suanli.incidents.impact import ImpactConfig
from suanli.incidents.tracker import TrackerConfig
from suanli.ingest.load import IngestConfig
from suanli.rules import RulesConfig
from suanli.store.check import CheckConfig
from suanli.store.duck import DuckStoreConfig

__all__ = [
    "CheckConfig",
    "CommandsConfig",
    "Config",
    "CorrelationConfig",
    "DuckStoreConfig",
    "FabricConfig",
    "HealthConfig",
    "ImpactConfig",
    "IngestConfig",
    "JobEventsConfig",
    "LedgerConfig",
    "LiveConfig",
    "RulesConfig",
    "TrackerConfig",
]


@dataclass(frozen=True)
class CommandsConfig:
    """Limits of the CLI verbs."""

    max_window_s: float = 86_400.0
    """Longest window ``diagnose``/``rca`` analyse in one run (24 h). The rule evaluator works on a
    dense time grid, so data spanning months (a store fed for weeks, a log with a wrong clock)
    would make one run crawl; a longer span needs ``--start``/``--end``."""


@dataclass(frozen=True)
class LiveConfig:
    """The incremental pipeline (``Pipeline.step``), which ``suanli serve`` calls as data arrives."""

    window_s: float = 1800.0
    """Length of the sliding window each step analyses (it ends at the step's time)."""


@dataclass(frozen=True)
class Config:
    """Every threshold, by part."""

    ledger: LedgerConfig = field(default_factory=LedgerConfig)
    health: HealthConfig = field(default_factory=HealthConfig)
    fabric: FabricConfig = field(default_factory=FabricConfig)
    job_events: JobEventsConfig = field(default_factory=JobEventsConfig)
    nvswitch: NvSwitchConfig = field(default_factory=NvSwitchConfig)
    rules: RulesConfig = field(default_factory=RulesConfig)
    """The rule evaluator's settings (evaluation interval, lookback, rate windows)."""
    correlation: CorrelationConfig = field(default_factory=CorrelationConfig)
    impact: ImpactConfig = field(default_factory=ImpactConfig)
    decisions: DecisionConfig = field(default_factory=DecisionConfig)
    """Pricing each incident's actions: horizon, defaults, priors (docs/decisions.md)."""
    tracker: TrackerConfig = field(default_factory=TrackerConfig)
    """When a tracked incident resolves and reopens (the live pipeline)."""
    live: LiveConfig = field(default_factory=LiveConfig)
    commands: CommandsConfig = field(default_factory=CommandsConfig)
    store: DuckStoreConfig = field(default_factory=DuckStoreConfig)
    """The embedded DuckDB store's buffering and engine settings."""
    ingest: IngestConfig = field(default_factory=IngestConfig)
    """The readers of ``load_paths``: OpenMetrics / Prometheus text, OTLP, logs."""
    check: CheckConfig = field(default_factory=CheckConfig)
    """Thresholds of ``suanli check``."""
