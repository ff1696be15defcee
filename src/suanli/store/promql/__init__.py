"""Prometheus-compatible read backend: :class:`PromStore` reads metrics through the HTTP query API
of Prometheus, VictoriaMetrics, Mimir or Thanos, behind the same interface as the DuckDB store."""

from suanli.store.promql.client import PromClient, PromConfig, QueryStats, TooManySamples
from suanli.store.promql.store import PromStore

__all__ = ["PromClient", "PromConfig", "PromStore", "QueryStats", "TooManySamples"]
