"""The store's protocols: :class:`Store`, the one query interface every analysis reads through,
and (re-exported from :mod:`suanli.ingest.sink`, which ingest writes through) :class:`Sink`.
Backends (DuckDB by default, later Prometheus-compatible TSDBs) implement them; analyses never
know which is behind it.

Times are float epoch seconds; ``start``/``end`` of None mean "no bound". Arrays are NumPy.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Protocol, cast

import numpy as np
import numpy.typing as npt

from suanli.ingest.records import Event, IngestReport, SeriesKey
from suanli.ingest.sink import EventBatch, KeptInventory, SampleBatch, Sink, SpanBatch, Transaction

__all__ = ["F64", "EventBatch", "KeptInventory", "SampleBatch", "Series", "Sink", "SpanBatch", "SpanFrame",
           "Store", "Transaction", "coded", "missing_inputs"]

F64 = npt.NDArray[np.float64]
NameCodes = tuple[npt.NDArray[np.uint8], tuple[str, ...]]


@dataclass(frozen=True)
class Series:
    """One series over a time range: sorted by time, one value per timestamp (last write won)."""

    key: SeriesKey
    ts: F64
    values: F64


@dataclass(frozen=True)
class SpanFrame:
    """Spans as columns (same length, row i is one span). ``rank``/``step`` are -1 where unknown."""

    job_id: npt.NDArray[np.object_]
    rank: npt.NDArray[np.int64]
    step: npt.NDArray[np.int64]
    name: npt.NDArray[np.object_]
    start_s: F64
    end_s: F64
    gpu_id: npt.NDArray[np.object_]
    node_id: npt.NDArray[np.object_]
    trace_id: npt.NDArray[np.object_]
    span_id: npt.NDArray[np.object_]
    parent_id: npt.NDArray[np.object_]
    _codes = None                      # not annotated: not a field (the fields are the columns)

    @property
    def name_codes(self) -> NameCodes | None:
        """Where the store had them (``coded``): ``name`` as small codes, ``names[codes[i]]`` is
        ``name[i]``, what ``name_in`` reads (comparing 40 M Python strings to each wanted name
        took seconds)."""
        return cast("NameCodes | None", self._codes)

    def __len__(self) -> int:
        return len(self.start_s)

    def name_in(self, wanted: Iterable[str]) -> npt.NDArray[np.bool_]:
        """Rows whose name is one of ``wanted``."""
        want = set(wanted)
        if self.name_codes is not None:
            codes, names = self.name_codes
            return np.array([n in want for n in names], dtype=bool)[codes]
        mask = np.zeros(len(self), dtype=bool)
        for w in want:
            mask |= self.name == w
        return mask

    def take(self, keep: npt.NDArray[np.bool_] | npt.NDArray[np.intp]) -> SpanFrame:
        """The rows ``keep`` selects (a mask or indices), codes and all."""
        out = SpanFrame(*(getattr(self, f.name)[keep] for f in fields(SpanFrame)))
        return out if self.name_codes is None else coded(out, self.name_codes[0][keep], self.name_codes[1])


def coded(frame: SpanFrame, codes: npt.NDArray[np.uint8], names: tuple[str, ...]) -> SpanFrame:
    """``frame`` knowing its names as ``codes`` into ``names`` (``SpanFrame.name_codes``)."""
    object.__setattr__(frame, "_codes", (codes, names))
    return frame


class Store(Protocol):
    """Queries over what ingest wrote."""

    def inventory_text(self) -> str | None:
        """The inventory YAML the data was resolved against (``--db`` diagnose reloads it)."""

    def metrics(self) -> list[str]:
        """Metric names present."""

    def series_keys(self, metric: str | None = None) -> list[SeriesKey]: ...

    def series(self, metric: str, entity_ids: Sequence[str] | None = None,
               start: float | None = None, end: float | None = None) -> list[Series]:
        """Raw samples per series (NaN kept; DCGM blank sentinels already turned into NaN)."""

    def rate(self, metric: str, entity_ids: Sequence[str] | None = None,
             start: float | None = None, end: float | None = None) -> list[Series]:
        """Per-second rate between consecutive samples of a counter, with Prometheus' reset rule
        (a drop means the counter restarted from zero: the increase is the new value).
        ``ts`` are the later sample times; one fewer point than the raw series."""

    def increase(self, metric: str, entity_ids: Sequence[str] | None = None,
                 start: float | None = None, end: float | None = None) -> dict[SeriesKey, float]:
        """Total increase of each counter series over the range, resets handled."""

    def spans(self, job_id: str | None = None, names: Sequence[str] | None = None,
              start: float | None = None, end: float | None = None,
              steps: tuple[int, int] | None = None, ids: bool = True, places: bool = True) -> SpanFrame:
        """Spans overlapping [start, end], in write order. ``ids=False`` leaves ``trace_id``,
        ``span_id`` and ``parent_id`` unread (None in every row): one Python string per span
        each, which no analysis reads, the most of a big job's read. ``places=False`` leaves
        ``gpu_id`` and ``node_id`` unread likewise (the ledger's phase spans: 16 bytes a span)."""

    def rank_gpus(self, job_id: str | None = None, names: Sequence[str] | None = None,
                  start: float | None = None, end: float | None = None) -> dict[int, str | None]:
        """Each rank's (>= 0) ``gpu_id`` on its latest span of those ``spans`` would return: the
        latest start, of spans starting together the last written; None where it has none."""

    def span_attrs(self, job_id: str | None = None, name: str | None = None,
                   keys: Sequence[str] = ()) -> dict[str, npt.NDArray[np.object_]]:
        """Selected attributes of spans as columns aligned with ``spans(job_id, [name])``."""

    def span_numbers(self, job_id: str | None = None, name: str | None = None,
                     keys: Sequence[str] = (), start: float | None = None, end: float | None = None
                     ) -> dict[str, F64]:
        """Numeric attributes as float columns aligned with ``spans(job_id, [name], start, end)``:
        NaN where the attribute is missing or not a number (a bool, a string, a list)."""

    def events(self, entity_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None,
               start: float | None = None, end: float | None = None) -> list[Event]: ...

    def time_range(self) -> tuple[float, float] | None:
        """Earliest and latest timestamp over samples, spans and events; None when empty."""

    def reports(self) -> list[tuple[str, IngestReport]]: ...

    def unresolved_series(self) -> list[SeriesKey]: ...

    def stats(self) -> dict[str, int]:
        """Rows held per table: ``series``, ``samples`` (a TSDB-backed store may leave it out),
        ``spans``, ``events``."""


def missing_inputs(store: Store) -> list[str]:
    """Which of ``metrics``, ``traces``, ``logs`` the store holds nothing of (for ``missing``)."""
    counts = store.stats()
    have = {"metrics": counts.get("samples", counts.get("series", 0)), "traces": counts.get("spans", 0), "logs": counts.get("events", 0)}
    return [kind for kind in ("metrics", "traces", "logs") if not have[kind]]


