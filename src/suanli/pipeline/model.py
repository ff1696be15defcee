"""What the pipeline's stages hand each other, and the :class:`Diagnosis` it returns: typed
fields, read by the reports (no ``dict[str, Any]`` results read back with ``getattr``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from suanli.analysis.decisions import Decided
from suanli.analysis.fabric import FabricResult
from suanli.analysis.findings import Finding
from suanli.analysis.health import HealthResult
from suanli.analysis.jobs import JobEventsResult
from suanli.analysis.ledger import LedgerResult
from suanli.analysis.nvswitch import NvSwitchResult
from suanli.analysis.result import EntityValues, Result, merge_values
from suanli.analysis.window import Window
from suanli.incidents.model import Incident, Signal
from suanli.rules.alerts import Alert

__all__ = ["AnalysisResults", "Correlated", "Diagnosis", "RuleAlerts"]


@dataclass(frozen=True)
class AnalysisResults:
    """Each analysis's result over one window (None: it failed, see ``errors``)."""

    ledger: LedgerResult | None = None
    health: HealthResult | None = None
    fabric: FabricResult | None = None
    job_events: JobEventsResult | None = None
    nvswitch: NvSwitchResult | None = None
    errors: tuple[str, ...] = ()
    """``name: Type: message`` of each analysis that raised (the others still report)."""
    timings_s: dict[str, float] = field(default_factory=dict)

    def present(self) -> list[Result]:
        return [r for r in (self.ledger, self.health, self.fabric, self.job_events, self.nvswitch) if r is not None]

    def findings(self) -> list[Finding]:
        return [f for r in self.present() for f in r.findings]

    def values(self) -> EntityValues:
        """Every analysis's per-entity values, for the rules' ``analysis`` conditions."""
        return merge_values(self.present())


@dataclass(frozen=True)
class RuleAlerts:
    """The rule stage's output: alerts that fired (by firing time), and the rules that only restate
    analysis values (their alerts join incidents but never seed one)."""

    alerts: tuple[Alert, ...] = ()
    indirect_rules: frozenset[str] = frozenset()
    error: str | None = None
    """``rules: Type: message`` when the evaluation raised (no alerts then)."""
    seconds: float = 0.0


@dataclass(frozen=True)
class Correlated:
    """The correlation stage's output: incidents, and the signals no incident explains."""

    incidents: list[Incident]
    unexplained: list[Signal]


@dataclass
class Diagnosis:
    """One pass of the pipeline over a window (spec/diagnosis.md renders it: report.json_doc)."""

    cluster: str
    window: Window
    missing: list[str]
    incidents: list[Incident]
    unexplained: list[Signal]
    results: AnalysisResults
    analysis_errors: list[str] = field(default_factory=list)
    timings_s: dict[str, float] = field(default_factory=dict)
    has_data: bool = True
    """Whether any sample, span or event lies in the window (False: "no data in this window",
    which is not "nothing is broken")."""
    decided: dict[str, Decided] = field(default_factory=dict)
    """Each incident's costed decision by incident id (docs/decisions.md)."""
    currency: str = "USD"
    """The inventory's currency: the economics view's."""
