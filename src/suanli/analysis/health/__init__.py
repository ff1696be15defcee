"""GPU health: hardware findings, health scores and DBE forecasts (docs/health.md).
:func:`analyze` is the unit; the modules beside it are its pure parts."""

from suanli.analysis.health.adapter import GpuHealth, HealthConfig, HealthResult, analyze

__all__ = ["GpuHealth", "HealthConfig", "HealthResult", "analyze"]
