"""suanli.ingest: parsers from exporter formats to records, and loading them into a sink.

:func:`load_paths` reads folders and files into a :class:`Sink` (``suanli.ingest.load``: the
inventory first, then each file in one transaction). Metrics: :func:`read_openmetrics` /
:func:`parse_openmetrics` (OpenMetrics and Prometheus text), :func:`series_key` (exporter labels
-> canonical entity). Traces: ``suanli.ingest.otlp.read_otlp``; logs: ``suanli.ingest.logs.read_log``.
"""

from suanli.ingest.load import IngestConfig, load_logs, load_metrics, load_paths, load_traces
from suanli.ingest.openmetrics import OpenMetricsConfig, OpenMetricsParser, parse_labels, parse_openmetrics
from suanli.ingest.openmetrics_file import read_openmetrics
from suanli.ingest.plan import LoadPlan, fingerprint, plan_paths
from suanli.ingest.records import Event, IngestReport, SeriesKey, Span
from suanli.ingest.resolve import series_key
from suanli.ingest.sink import EventBatch, KeptInventory, SampleBatch, Sink, SpanBatch, Transaction

__all__ = [
    "Event",
    "EventBatch",
    "IngestConfig",
    "IngestReport",
    "KeptInventory",
    "LoadPlan",
    "OpenMetricsConfig",
    "OpenMetricsParser",
    "SampleBatch",
    "SeriesKey",
    "Sink",
    "Span",
    "SpanBatch",
    "Transaction",
    "fingerprint",
    "load_logs",
    "load_metrics",
    "load_paths",
    "load_traces",
    "parse_labels",
    "parse_openmetrics",
    "plan_paths",
    "read_openmetrics",
    "series_key",
]
