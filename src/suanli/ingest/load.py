"""Read a scenario folder or single files into a sink (spec/telemetry.md "The scenario folder").

The inventory is loaded first (from the paths, else the one the sink keeps) and kept with
``put_inventory``; each record is resolved once, by the parsers, against it. Every file goes
into the sink in one transaction with its "loaded" mark and its report (:mod:`suanli.ingest.sink`):
a crash at any point loses at most the file being read, and a re-run loads exactly what is missing.
Metrics and OTLP JSON lines go through the DuckDB bulk readers when the file allows it, else
(and always for logs) through the streaming parsers; both give the same records.

``progress(what, done, total)`` is called before each file (``done`` files of ``total``) and once
at the end with ``done == total``.

A file given by name that is of no known kind is an InputError when nothing else can be loaded,
else one reject. A file that cannot be read (a corrupt ``.gz``) is one reject and keeps none of
its rows; the others load. A file the sink already holds unchanged under the same inventory
(``fingerprint``) is skipped: ``file: already loaded, skipped`` in the report's reasons (not
counted as a reject) and ``files_skipped`` in ``loaded``.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from suanli.errors import InputError
from suanli.ingest import bulk_om, bulk_otlp, bulk_otlp_proto
from suanli.ingest.kineto import is_kineto_trace, read_kineto
from suanli.ingest.log_time import for_ingest
from suanli.ingest.logs import LogConfig, read_log
from suanli.ingest.openmetrics import Batch, OpenMetricsConfig
from suanli.ingest.openmetrics_file import read_openmetrics
from suanli.ingest.otlp import OtlpConfig, read_otlp
from suanli.ingest.plan import UNKNOWN_KIND, FileKind, LoadPlan, fingerprint, plan_paths
from suanli.ingest.records import IngestReport, SeriesKey
from suanli.ingest.resolve import series_key
from suanli.ingest.sink import EventBatch, SampleBatch, Sink, SpanBatch, Transaction, batched
from suanli.inventory import Inventory, Resolver, parse_inventory

__all__ = ["RECORDS_PER_BATCH", "IngestConfig", "Progress", "load_logs", "load_metrics", "load_paths", "load_traces",
           "skipped_files"]

Progress = Callable[[str, int, int], None]

RECORDS_PER_BATCH = 100_000
"""Spans or events of the streaming parsers handed to the sink at a time."""
READ_ERRORS = (OSError, EOFError, zlib.error, UnicodeDecodeError)


@dataclass(frozen=True)
class IngestConfig:
    """The settings of every reader ``load_paths`` uses (each with its documented defaults)."""

    openmetrics: OpenMetricsConfig = field(default_factory=OpenMetricsConfig)
    """Metrics files: batch sizes, timestamp range, the DCGM prefix."""
    otlp: OtlpConfig = field(default_factory=OtlpConfig)
    """Trace files: the parent cache, how far a span climbs to its step."""
    logs: LogConfig = field(default_factory=LogConfig)
    """Log files: collapsing repeats, record sizes, AER merging, the year of yearless stamps."""


def load_paths(paths: Sequence[Path], sink: Sink, progress: Progress | None = None, *,
               config: IngestConfig | None = None) -> IngestReport:
    """Load files into ``sink`` and return the summed report (each file's is also kept by the sink)."""
    cfg = config or IngestConfig()
    plan = plan_paths(paths)
    inventory, text = _inventory(plan, sink)
    resolver = inventory.resolver if inventory is not None else None
    total = IngestReport()
    if plan.inventory is not None and resolver is not None:
        _re_resolve(sink, resolver, total)
    if plan.logs:                       # boot times for raw dmesg, the zone of local-time stamps
        cfg = replace(cfg, logs=for_ingest(cfg.logs, plan.metrics, resolver,
                                                  inventory.timezone if inventory else None))
    files = plan.files()
    for i, (kind, path) in enumerate(files):
        if progress is not None:
            progress(f"{kind} {path.name}", i, len(files))
        total.merge(_load_file(kind, path, sink, resolver, text, cfg))
    for path in plan.unknown:
        total.reject(f"{path}: {UNKNOWN_KIND}")
    for reason in plan.skipped:                   # a warning each, kept: an empty file is not silence
        report = IngestReport(loaded={"files_skipped": 1}, reasons=[reason])
        with sink.transaction(reason.split(": ", 1)[0]) as txn:
            txn.commit(report)
        total.merge(report)
    if progress is not None:
        progress("done", len(files), len(files))
    return total


def skipped_files(store: HasReports) -> list[str]:
    """What the loads into ``store`` skipped as unreadable (``path: empty, skipped``, a folder, a
    link loop), for a verb to warn about."""
    return [r for _, rep in store.reports() for r in rep.reasons
            if r.endswith(", skipped") and not r.endswith("already loaded, skipped")]


def _re_resolve(sink: Sink, resolver: Resolver, total: IngestReport) -> None:
    """Series kept unresolved by earlier loads take their entity from the inventory just put, so
    fixing the inventory fixes what is stored (``suanli check`` stops naming them)."""
    n = sink.re_resolve(lambda key: series_key(key.metric, dict(key.labels), resolver))
    if n:
        total.add("series_re_resolved", n)


class HasReports(Protocol):
    def reports(self) -> list[tuple[str, IngestReport]]: ...


def _inventory(plan: LoadPlan, sink: Sink) -> tuple[Inventory | None, str | None]:
    """The inventory to resolve against and its text (kept in the sink when the plan brings one)."""
    if plan.inventory is not None:
        text = _inventory_text(plan.inventory)
        inv = parse_inventory(text, source=str(plan.inventory))
        sink.put_inventory(text, str(plan.inventory))
        return inv, text
    kept = sink.kept_inventory()
    if kept is None:
        return None, None
    return parse_inventory(kept.text, source=kept.source), kept.text


def _inventory_text(path: Path) -> str:
    """The inventory's text; InputError naming the file (and line) when it is not UTF-8 or unreadable."""
    try:
        data = path.read_bytes()
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", file=str(path)) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise InputError(f"not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start})",
                         file=str(path), line=line) from None


def _load_file(kind: FileKind, path: Path, sink: Sink, resolver: Resolver | None,
               inventory_text: str | None, cfg: IngestConfig) -> IngestReport:
    """One file into the sink (skipped when already loaded); its report, kept by the sink too. A
    file that cannot be read is one reject and leaves none of its rows."""
    report = IngestReport()
    try:
        fp = fingerprint(path, inventory_text)
        if sink.file_loaded(fp):
            report.add("files_skipped")
            report.reasons.append(f"{path.name}: already loaded, skipped")
        else:
            _load_kind(kind, path, sink, resolver, report, fp, cfg)
            return report                                  # kept with the file's rows
    except READ_ERRORS as err:
        report = IngestReport()
        report.reject(f"{path.name}: unreadable ({str(err) or type(err).__name__})")
    with sink.transaction(str(path)) as txn:
        txn.commit(report)
    return report


def load_metrics(path: Path, sink: Sink, resolver: Resolver | None, report: IngestReport, *,
                 fingerprint: str | None = None, arrival_ts: float | None = None,
                 config: OpenMetricsConfig | None = None) -> None:
    """One metrics file in one transaction: the DuckDB bulk reader, else the streaming parser."""
    with sink.transaction(str(path), fingerprint) as txn:
        if bulk_om.load_openmetrics(path, txn, resolver, report, arrival_ts=arrival_ts, config=config):
            txn.commit(report)
            return
    with sink.transaction(str(path), fingerprint) as txn:
        _stream_metrics(read_openmetrics(path, resolver, report, arrival_ts=arrival_ts, config=config), txn, report)
        txn.commit(report)


def _stream_metrics(batches: Iterator[Batch], txn: Transaction, report: IngestReport) -> None:
    """Append parsed ``(series, ts, values)`` batches, counting each new series (and the
    unresolved ones) in the report once."""
    seen: set[SeriesKey] = set()
    parts: list[Batch] = []
    rows = 0
    for key, ts, values in batches:
        if key not in seen:
            seen.add(key)
            report.add("series")
            if key.entity_id is None:
                report.add_unresolved("series")
        parts.append((key, ts, values))
        rows += len(ts)
        if rows >= RECORDS_PER_BATCH:
            txn.append_samples(SampleBatch.from_series(parts))
            parts, rows = [], 0
    if parts:
        txn.append_samples(SampleBatch.from_series(parts))


def load_traces(path: Path, sink: Sink, resolver: Resolver | None, report: IngestReport, *,
                fingerprint: str | None = None, config: OtlpConfig | None = None) -> bool:
    """One trace file in one transaction: a PyTorch profiler (Kineto) trace through its reader; the
    DuckDB bulk reader for clean OTLP JSON lines, the vectorised protobuf reader for protobuf files,
    else the Python parser. True when a bulk reader took it."""
    if is_kineto_trace(path):
        _load_kineto(path, sink, report, fingerprint)
        return False
    with sink.transaction(str(path), fingerprint) as txn:
        if bulk_otlp.load_otlp_jsonl(path, txn, resolver, report, config):
            txn.commit(report)
            return True
    if bulk_otlp_proto.proto_eligible(path):
        with sink.transaction(str(path), fingerprint) as txn:
            if bulk_otlp_proto.load_otlp_proto(path, txn, resolver, report, config):
                txn.commit(report)
                return True
    with sink.transaction(str(path), fingerprint) as txn:
        for spans in batched(read_otlp(path, resolver, report, config), RECORDS_PER_BATCH):
            txn.append_spans(SpanBatch.from_spans(spans))
        txn.commit(report)
    return False


def _load_kineto(path: Path, sink: Sink, report: IngestReport, fingerprint: str | None) -> None:
    """A Kineto trace's device activity as spans (ingest/kineto); a file that turns out not to be a
    trace is one reject, and is marked loaded with nothing, as any file whose records were all bad."""
    with sink.transaction(str(path), fingerprint) as txn:
        try:
            spans = read_kineto(path, report=report)
        except InputError as err:
            report.reject(str(err))
            spans = []
        for chunk in batched(spans, RECORDS_PER_BATCH):
            txn.append_spans(SpanBatch.from_spans(chunk))
        txn.commit(report)


def load_logs(path: Path, sink: Sink, resolver: Resolver | None, report: IngestReport, *,
              fingerprint: str | None = None, config: LogConfig | None = None) -> None:
    """One log file in one transaction."""
    with sink.transaction(str(path), fingerprint) as txn:
        for events in batched(read_log(path, resolver, report, config), RECORDS_PER_BATCH):
            txn.append_events(EventBatch.from_events(events))
        txn.commit(report)


def _load_kind(kind: FileKind, path: Path, sink: Sink, resolver: Resolver | None, report: IngestReport,
               fp: str, cfg: IngestConfig) -> None:
    if kind == "metrics":
        load_metrics(path, sink, resolver, report, fingerprint=fp, config=cfg.openmetrics)
    elif kind == "traces":
        load_traces(path, sink, resolver, report, fingerprint=fp, config=cfg.otlp)
    else:
        load_logs(path, sink, resolver, report, fingerprint=fp, config=cfg.logs)
