"""The one configuration object: every analysis's thresholds with their documented defaults.

``Config()`` is what ``suanli diagnose`` uses. Each field is the config dataclass of one part,
documented field by field where it is defined (docs/ledger.md, docs/health.md, docs/fabric.md,
docs/rules.md, docs/incidents.md)::

    Config(health=HealthConfig(weights=HealthWeights(0.5, 0.25, 0.25)),
           correlation=CorrelationConfig(window_s=600))
"""

from suanli.analysis.fabric import FabricConfig
from suanli.analysis.health import HealthConfig
from suanli.analysis.jobs import JobEventsConfig
from suanli.analysis.ledger import LedgerConfig
from suanli.incidents.correlate import CorrelationConfig
from suanli.incidents.diagnose import DiagnoseConfig as Config
from suanli.incidents.impact import ImpactConfig
from suanli.rules import RulesConfig

__all__ = [
    "Config",
    "CorrelationConfig",
    "FabricConfig",
    "HealthConfig",
    "ImpactConfig",
    "JobEventsConfig",
    "LedgerConfig",
    "RulesConfig",
]
