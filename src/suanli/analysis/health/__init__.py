"""GPU health: hardware findings, health scores and DBE forecasts (docs/health.md).
:func:`analyze` is the unit; the modules beside it are its parts."""

from suanli.analysis.health.adapter import HealthConfig, HealthResult, analyze
from suanli.analysis.health.forecast import GpuHealth

__all__ = ["GpuHealth", "HealthConfig", "HealthResult", "analyze"]
