"""suanli.ingest: parsers from exporter formats to records (``suanli.ingest.records``).

Metrics: :func:`read_openmetrics` / :func:`parse_openmetrics` (OpenMetrics and Prometheus text),
:func:`series_key` (exporter labels -> canonical entity). Traces: ``suanli.ingest.otlp.read_otlp``;
logs: ``suanli.ingest.logs.read_log`` (imported from their modules).
"""

from suanli.ingest.openmetrics import (
    OpenMetricsConfig,
    OpenMetricsParser,
    parse_labels,
    parse_openmetrics,
    read_openmetrics,
)
from suanli.ingest.records import Event, IngestReport, SeriesKey, Span
from suanli.ingest.resolve import series_key

__all__ = [
    "Event",
    "IngestReport",
    "OpenMetricsConfig",
    "OpenMetricsParser",
    "SeriesKey",
    "Span",
    "parse_labels",
    "parse_openmetrics",
    "read_openmetrics",
    "series_key",
]
