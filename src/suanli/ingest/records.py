"""What ingest produces and the store keeps. Every record carries canonical entity ids (or None
when it could not be resolved: such records are kept and counted, never dropped)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class SeriesKey:
    """One time series: metric name, the canonical entity it belongs to and its remaining labels.

    ``labels`` keeps every original label (sorted tuple of pairs) so nothing is lost;
    ``entity_kind``/``entity_id`` are None for a series that resolves to no inventory entity.
    ``peer_id`` names a second entity where the metric has one (``dst`` of
    ``suanli_link_latency_seconds``).
    """

    metric: str
    labels: tuple[tuple[str, str], ...]
    entity_kind: str | None
    entity_id: str | None
    peer_id: str | None = None

    def label(self, name: str) -> str | None:
        for k, v in self.labels:
            if k == name:
                return v
        return None


@dataclass(frozen=True)
class Span:
    """One OTLP span, attributes of resource and span merged (the span's own win)."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_s: float
    end_s: float
    job_id: str | None
    rank: int | None
    step: int | None
    gpu_id: str | None
    node_id: str | None
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Event:
    """One log record (a multi-line record is one event) or a collapsed run of identical ones.

    kind: ``xid`` | ``sxid`` | ``aer`` | ``nccl_warn`` | ``nccl_timeout`` | ``cuda_oom`` |
    ``cuda_error`` | ``nic_link`` | ``checkpoint`` | ``iteration`` | ``restart`` | ``other``; ``code`` the Xid / SXid number where there is one;
    ``severity`` from the catalogue (``fatal`` / ``warning`` / ``info`` ...), ``count`` how many
    identical lines it stands for, between ``ts`` (first) and ``last_ts``.
    """

    ts: float
    host: str | None
    entity_kind: str | None
    entity_id: str | None
    kind: str
    message: str
    code: int | None = None
    severity: str | None = None
    source: str = ""                 # file:line of the first line
    count: int = 1
    last_ts: float | None = None
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass
class IngestReport:
    """Counts per kind, unresolved and rejected records with their first reasons (``file:line: what``)."""

    loaded: dict[str, int] = field(default_factory=dict)
    unresolved: dict[str, int] = field(default_factory=dict)
    rejected: int = 0
    reasons: list[str] = field(default_factory=list)
    max_reasons: int = 20

    def reject(self, reason: str) -> None:
        self.rejected += 1
        if len(self.reasons) < self.max_reasons:
            self.reasons.append(reason)

    def add(self, kind: str, n: int = 1) -> None:
        self.loaded[kind] = self.loaded.get(kind, 0) + n

    def add_unresolved(self, kind: str, n: int = 1) -> None:
        self.unresolved[kind] = self.unresolved.get(kind, 0) + n

    def merge(self, other: IngestReport) -> None:
        for k, v in other.loaded.items():
            self.add(k, v)
        for k, v in other.unresolved.items():
            self.add_unresolved(k, v)
        self.rejected += other.rejected
        room = self.max_reasons - len(self.reasons)
        self.reasons.extend(other.reasons[: max(room, 0)])
