"""Read side of :class:`suanli.store.duck.DuckStore` (``api.Store``).

Samples are read deduplicated (per (series, ts) the last write, highest ``rowid``, wins) and sorted by
series then time; ranges are inclusive (``start <= ts <= end``). Series without samples in the
range are left out of ``series``/``rate``; ``increase`` leaves out series with fewer than 2
finite samples. Counter functions (``rate``, ``increase``) skip non-finite samples (NaN, ±Inf,
DCGM blanks already NaN) and apply Prometheus' reset rule: when a sample is below the one
before, the counter restarted from zero and the increase is the new value itself.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Sequence
from typing import Any

import duckdb
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from suanli.ingest.records import Event, SeriesKey
from suanli.store.api import F64, Series, SpanFrame, coded
from suanli.store.counters import counter_increase, counter_rate
from suanli.store.duck import schema as sc

__all__ = ["STRAY_S", "DuckReads"]

_SPAN_BATCH = 1 << 20
"""Span rows converted at a time by ``spans``."""
_MAX_CODED = 255
"""Names asked for up to which ``spans`` reads each row's name as a one-byte code."""
_RADIX_SERIES = 1 << 16
"""Series up to which ``samples_of`` groups rows by a 16-bit key (NumPy's radix sort)."""

STRAY_S = 86_400.0
"""A span or event this far from every sample (when there are samples) does not stretch the window."""


def _where(*filters: tuple[object, str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """The SQL condition and parameters of the filters that are set (value not None); NumPy
    numbers are passed as Python ones."""
    where, params = ["TRUE"], {}
    for value, sql, args in filters:
        if value is not None:
            where.append(sql)
            params.update({k: _plain(v) for k, v in args.items()})
    return " AND ".join(where), params


def _key_paths(keys: Sequence[str]) -> dict[str, str]:
    """JSON paths of attribute keys (``$."train.tokens"``) as query parameters ``k0``, ``k1`` ..."""
    return {f"k{i}": '$."' + k.replace('"', '\\"') + '"' for i, k in enumerate(keys)}


def _plain(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    return float(value) if isinstance(value, np.floating) else value


def _bounds(start: float | None, end: float | None) -> tuple[float, float]:
    return (-math.inf if start is None else float(start), math.inf if end is None else float(end))


class DuckReads:
    """Query methods, each holding ``lock`` while it uses the connection or the series index (serve
    reads and writes from several threads, and a DuckDB connection refuses a second call while one
    runs); the writer class provides ``con``, ``lock``, ``keys_by_id``, ``ids_of``,
    ``metric_ids`` and ``flush`` (every read commits the records buffered outside a transaction first)."""

    con: duckdb.DuckDBPyConnection
    lock: threading.RLock
    keys_by_id: dict[int, SeriesKey]
    commits: int
    _time_range: tuple[int, tuple[float, float] | None]

    def flush(self) -> None:  # pragma: no cover - provided by DuckStore
        raise NotImplementedError

    # -- series ---------------------------------------------------------------------------------
    def metrics(self) -> list[str]:
        with self.lock:                 # the lock around every read: receivers add series meanwhile
            self.flush()
            return sorted({k.metric for k in self.keys_by_id.values()})

    def series_keys(self, metric: str | None = None) -> list[SeriesKey]:
        """Distinct keys in first-seen order."""
        with self.lock:
            self.flush()
            return [k for k in dict.fromkeys(self.keys_by_id.values()) if metric is None or k.metric == metric]

    def unresolved_series(self) -> list[SeriesKey]:
        with self.lock:
            self.flush()
            return [k for k in dict.fromkeys(self.keys_by_id.values()) if k.entity_id is None]

    def ids_of(self, key: SeriesKey) -> int | None:  # pragma: no cover - provided by DuckStore
        raise NotImplementedError

    def metric_ids(self, metric: str) -> Sequence[int]:  # pragma: no cover - provided by DuckStore
        raise NotImplementedError

    def _select_ids(self, metric: str, entity_ids: Sequence[str] | None) -> dict[int, int]:
        """Every id (aliases too) of the matching series -> the key's primary id, in the order the
        ids came."""
        wanted = None if entity_ids is None else set(entity_ids)
        out = {}
        with self.lock:
            self.flush()
            for sid in self.metric_ids(metric):
                k = self.keys_by_id[sid]
                if wanted is None or k.entity_id in wanted:
                    out[sid] = self.ids_of(k) or sid
        return out

    def samples_of(self, ids: dict[int, int], start: float | None = None,
                   end: float | None = None) -> tuple[npt.NDArray[np.uint64], F64, F64]:
        """(primary series id, ts, value) of the given ids (id -> primary id), deduplicated (last
        write wins), sorted by series then time."""
        lo, hi = _bounds(start, end)
        canon = np.fromiter(ids.values(), np.uint64, len(ids))
        primary = np.unique(canon)                     # each row's series as its index among these
        sel = pa.table({"id": pa.array(list(ids), pa.uint64()),
                        "idx": pa.array(np.searchsorted(primary, canon).astype(np.uint32), pa.uint32())})
        with self.lock:
            self.flush()
            self.con.register("_sel", sel)
            try:
                res = self.con.execute(
                    "SELECT m.idx, s.ts, s.value, s.rowid FROM samples s JOIN _sel m ON s.series_id = m.id "
                    "WHERE s.ts >= $lo AND s.ts <= $hi", {"lo": lo, "hi": hi}).fetchnumpy()
            finally:
                self.con.unregister("_sel")
        idx = np.asarray(res["idx"], dtype=np.uint32)
        ts = np.asarray(res["ts"], dtype=np.float64)
        order = _series_time_order(idx, ts, np.asarray(res["rowid"], dtype=np.int64), len(primary))
        idx, ts = idx[order], ts[order]
        last = np.ones(len(idx), dtype=bool)            # the last write of each (series, ts) wins
        last[:-1] = (idx[1:] != idx[:-1]) | (ts[1:] != ts[:-1])
        return primary[idx[last]], ts[last], np.asarray(res["value"], dtype=np.float64)[order][last]

    def _per_series(self, metric: str, entity_ids: Sequence[str] | None, start: float | None,
                    end: float | None) -> list[tuple[SeriesKey, F64, F64]]:
        ids = self._select_ids(metric, entity_ids)
        if not ids:
            return []
        sid, ts, values = self.samples_of(ids, start, end)
        if not len(sid):
            return []
        cuts = np.flatnonzero(np.diff(sid)) + 1
        starts = np.concatenate(([0], cuts))
        ends = np.concatenate((cuts, [len(sid)]))
        out = [(int(sid[a]), ts[a:b], values[a:b]) for a, b in zip(starts, ends, strict=True)]
        order = {i: n for n, i in enumerate(ids.values())}               # first-seen series first
        out.sort(key=lambda part: order[part[0]])
        return [(self.keys_by_id[i], t, v) for i, t, v in out]

    def series(self, metric: str, entity_ids: Sequence[str] | None = None,
               start: float | None = None, end: float | None = None) -> list[Series]:
        return [Series(k, t, v) for k, t, v in self._per_series(metric, entity_ids, start, end)]

    def rate(self, metric: str, entity_ids: Sequence[str] | None = None,
             start: float | None = None, end: float | None = None) -> list[Series]:
        out = []
        for key, ts, values in self._per_series(metric, entity_ids, start, end):
            rts, rate = counter_rate(ts, values)
            if len(rts):
                out.append(Series(key, rts, rate))
        return out

    def increase(self, metric: str, entity_ids: Sequence[str] | None = None,
                 start: float | None = None, end: float | None = None) -> dict[SeriesKey, float]:
        out = {}
        for key, _, values in self._per_series(metric, entity_ids, start, end):
            inc = counter_increase(values)
            if inc is not None:
                out[key] = inc
        return out

    # -- spans ----------------------------------------------------------------------------------
    def _span_where(self, job_id: str | None, names: Sequence[str] | None, start: float | None,
                    end: float | None, steps: tuple[int, int] | None) -> tuple[str, dict[str, Any]]:
        return _where((job_id, "job_id = $job", {"job": job_id}),
                      (names, "list_contains($names::VARCHAR[], name)", {"names": list(names or ())}),
                      (start, "end_s >= $lo", {"lo": start}), (end, "start_s <= $hi", {"hi": end}),
                      (steps, "step BETWEEN $s0 AND $s1", {"s0": steps[0], "s1": steps[1]} if steps else {}))

    def spans(self, job_id: str | None = None, names: Sequence[str] | None = None,
              start: float | None = None, end: float | None = None,
              steps: tuple[int, int] | None = None, ids: bool = True, places: bool = True) -> SpanFrame:
        """Spans overlapping [start, end], steps in [steps[0], steps[1]] (inclusive), in write
        order (``seq``). ``ids=False``: the three ids are not read (None): half a big job's read.
        ``places=False``: nor are ``gpu_id`` and ``node_id``."""
        wanted = None if names is None else tuple(dict.fromkeys(names))
        where, params = self._span_where(job_id, wanted, start, end, steps)
        id_cols = ", trace_id, span_id, parent_id" if ids else ""
        place_cols = ", gpu_id, node_id" if places else ""
        job_col = "" if job_id is not None else "job_id, "        # one job asked: its id is known
        # names asked for: each row's name as its index among them, not as text (40 M strings
        # through Arrow and a dictionary encode were a third of reading a big job's phases)
        by_code = wanted is not None and 0 < len(wanted) <= _MAX_CODED
        name_col = "(list_position($names::VARCHAR[], name) - 1)::UTINYINT AS name" if by_code else "name"
        text = [*(() if by_code else ("name",)), *(("gpu_id", "node_id") if places else ()),
                *(("job_id",) if job_id is None else ()), *(("trace_id", "span_id", "parent_id") if ids else ())]
        parts: dict[str, list[npt.NDArray[Any]]] = {c: [] for c in ("seq", "rank", "step", "start_s", "end_s",
                                                                          *(("name",) if by_code else ()), *text)}
        with self.lock:
            self.flush()
            # Arrow, not fetchnumpy: a text column arrives as Arrow strings and becomes one Python
            # str per distinct value (a job's spans repeat a few names and GPUs millions of times);
            # batch by batch, so the Arrow copy of a big job is never held whole beside its arrays;
            # put in write order here, not by DuckDB (``_seq_order``)
            reader = self.con.sql(
                f"SELECT seq, {job_col}coalesce(rank, -1) AS rank, coalesce(step, -1) AS step, {name_col}, start_s, "
                f"end_s{place_cols}{id_cols} FROM spans WHERE {where}",
                params=params).to_arrow_reader(_SPAN_BATCH)
            for batch in reader:
                for c, out in parts.items():
                    arr = batch.column(c)
                    out.append(_text_column(arr) if c in text else arr.to_numpy())
        n = sum(map(len, parts["start_s"]))
        none = None if ids and places else _same(n, None)     # columns not read: one array for all
        order = _seq_order(parts.pop("seq"))

        def joined(got: list[npt.NDArray[Any]], dtype: Any) -> npt.NDArray[Any]:
            out = np.asarray(got[0] if len(got) == 1 else np.concatenate(got) if got else np.empty(0), dtype=dtype)
            return out if order is None else out[order]

        codes = None
        if by_code:
            codes = joined(parts.pop("name"), np.uint8)
            parts["name"] = [np.array(wanted, dtype=object)[codes]]

        def col(name: str, dtype: Any) -> npt.NDArray[Any]:
            got = parts.pop(name, None)
            if got is None and name == "job_id":
                return _same(n, job_id)
            if got is None:
                assert none is not None                  # only the ids and places go unread
                return none
            return got[0] if name == "name" and by_code else joined(got, dtype)

        frame = SpanFrame(job_id=col("job_id", object), rank=col("rank", np.int64), step=col("step", np.int64),
                          name=col("name", object), start_s=col("start_s", np.float64),
                          end_s=col("end_s", np.float64), gpu_id=col("gpu_id", object),
                          node_id=col("node_id", object), trace_id=col("trace_id", object),
                          span_id=col("span_id", object), parent_id=col("parent_id", object))
        return frame if codes is None else coded(frame, codes, wanted or ())

    def rank_gpus(self, job_id: str | None = None, names: Sequence[str] | None = None,
                  start: float | None = None, end: float | None = None) -> dict[int, str | None]:
        """Each rank's (>= 0) ``gpu_id`` on its latest span of these: the latest start, of spans
        starting together the last written (None where that span has none). In SQL: one number
        per rank, where reading every span's GPU was 8 bytes and a Python reference a span; one
        grouped pass (40 M phase spans: 1.0 s, where the latest start joined back took 2.0 s)."""
        where, params = self._span_where(job_id, names, start, end, None)
        with self.lock:
            self.flush()
            rows = self.con.execute(                    # (start, write order) compared as a pair: one pass
                f"SELECT rank, arg_max_null(gpu_id, struct_pack(s := start_s, q := seq)) FROM spans "
                f"WHERE {where} AND rank >= 0 GROUP BY rank ORDER BY rank", params).fetchall()
        return {int(r): g for r, g in rows}

    def span_numbers(self, job_id: str | None = None, name: str | None = None,
                     keys: Sequence[str] = (), start: float | None = None, end: float | None = None
                     ) -> dict[str, F64]:
        """Numbers pulled out of the JSON in SQL (JSON's integer and real types; a bool, a string
        or a list is NaN), no Python value per span; the spans of ``spans(job_id, [name], start,
        end)``, row for row."""
        where, params = self._span_where(job_id, None if name is None else [name], start, end, None)
        # every key from one parse of the span's JSON (a list of paths), not two parses per key
        cols = ", ".join(f"CASE WHEN json_type(j[{i + 1}]) IN ('BIGINT', 'UBIGINT', 'DOUBLE') "
                         f"THEN j[{i + 1}]::DOUBLE END AS k{i}" for i in range(len(keys))) or "1"
        paths = f"json_extract(attrs, [{', '.join(f'$k{i}' for i in range(len(keys)))}])" if keys else "NULL"
        params.update(_key_paths(keys))
        with self.lock:
            self.flush()
            res = self.con.execute(f"SELECT seq, {cols} FROM (SELECT seq, {paths} AS j FROM spans WHERE {where})",
                                   params).fetchnumpy()
        order = _seq_order([np.asarray(res["seq"])])
        out = {k: np.ma.filled(np.ma.asarray(res[f"k{i}"], dtype=np.float64), np.nan).astype(np.float64)
               for i, k in enumerate(keys)}
        return out if order is None else {k: v[order] for k, v in out.items()}

    def span_attrs(self, job_id: str | None = None, name: str | None = None,
                   keys: Sequence[str] = ()) -> dict[str, npt.NDArray[np.object_]]:
        """Only the asked keys are pulled out of the JSON (in SQL), decoded once per distinct value."""
        where, params = self._span_where(job_id, None if name is None else [name], None, None, None)
        cols = ", ".join(f"json_extract(attrs, $k{i})" for i in range(len(keys))) or "1"
        params.update(_key_paths(keys))
        with self.lock:
            self.flush()
            rows = self.con.execute(f"SELECT {cols} FROM spans WHERE {where} ORDER BY seq", params).fetchall()
        cache: dict[str, Any] = {}

        def decode(text: str | None) -> Any:
            if text is None:
                return None
            if text not in cache:
                cache[text] = json.loads(text)
            return cache[text]

        return {k: np.array([decode(r[i]) for r in rows] or [], dtype=object) for i, k in enumerate(keys)}

    # -- events ---------------------------------------------------------------------------------
    def events(self, entity_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None,
               start: float | None = None, end: float | None = None) -> list[Event]:
        """Events with ``ts`` in [start, end] (a collapsed run counts where its span overlaps), by time."""
        where, params = _where(
            (entity_ids, "list_contains($ents::VARCHAR[], entity_id)", {"ents": list(entity_ids or ())}),
            (kinds, "list_contains($kinds::VARCHAR[], kind)", {"kinds": list(kinds or ())}),
            (start, "coalesce(last_ts, ts) >= $lo", {"lo": start}), (end, "ts <= $hi", {"hi": end}))
        cols = ", ".join((*sc.EVENT_COLUMNS, "attrs"))
        with self.lock:
            self.flush()
            rows = self.con.execute(f"SELECT {cols} FROM events WHERE {where} ORDER BY ts, seq", params).fetchall()
        return [Event(ts=r[0], host=r[1], entity_kind=r[2], entity_id=r[3], kind=r[4], message=r[5],
                      code=r[6], severity=r[7], source=r[8] or "", count=int(r[9] or 1), last_ts=r[10],
                      attrs=sc.loads_attrs(r[11])) for r in rows]

    def time_range(self) -> tuple[float, float] | None:
        """Earliest and latest timestamp of samples, spans and events: what the analysed window
        spans when no ``--start``/``--end`` is given. Non-finite times never count. Where there are samples, a span
        or event more than ``STRAY_S`` away from every sample is a stray clock (one log line dated
        2099, a span from 1970) and does not stretch the window either; it stays in the store, and
        ``--start``/``--end`` reach it. Log records that could not be placed in time (NaN) never count."""
        ok = "isfinite({c}) AND {c} BETWEEN $lo AND $hi"
        with self.lock:
            self.flush()
            if self._time_range[0] == self.commits:        # two scans of every table: once per state
                return self._time_range[1]
            s_lo, s_hi = self.con.execute("SELECT min(ts), max(ts) FROM samples WHERE isfinite(ts)").fetchall()[0]
            near = ({"lo": -math.inf, "hi": math.inf} if s_lo is None
                    else {"lo": float(s_lo) - STRAY_S, "hi": float(s_hi) + STRAY_S})
            rows = self.con.execute(
                f"SELECT min(lo), max(hi) FROM ("
                f"SELECT min(ts) lo, max(ts) hi FROM samples WHERE isfinite(ts) UNION ALL "
                f"SELECT min(start_s), max(end_s) FROM spans WHERE {ok.format(c='start_s')} "
                f"AND {ok.format(c='end_s')} UNION ALL "
                f"SELECT min(ts), max(coalesce(last_ts, ts)) FROM events WHERE {ok.format(c='ts')} "
                f"AND {ok.format(c='coalesce(last_ts, ts)')})", near).fetchall()
            extent = None if not rows or rows[0][0] is None else (float(rows[0][0]), float(rows[0][1]))
            self._time_range = (self.commits, extent)
        return extent

    def counts(self) -> dict[str, tuple[int, int]]:
        """(resolved, unresolved) series per metric, without reading samples."""
        out: dict[str, list[int]] = {}
        with self.lock:
            self.flush()
            for k in dict.fromkeys(self.keys_by_id.values()):
                pair = out.setdefault(k.metric, [0, 0])
                pair[0 if k.entity_id else 1] += 1
        return {m: (a, b) for m, (a, b) in out.items()}


def _series_time_order(idx: npt.NDArray[np.uint32], ts: F64, rowid: npt.NDArray[np.int64],
                       n_series: int) -> npt.NDArray[np.intp]:
    """The permutation that sorts sample rows by (series index, time, write order). DuckDB's
    ORDER BY of the three was half of reading a metric (10,240 GPUs' hour: 0.17 of 0.33 s, 56
    reads a diagnosis); a scrape dump is written in time order, so rows put in write order and
    then grouped by series (a radix sort under 65,536 series) are mostly sorted already, which
    one pass checks; only the series that are not (a sample written out of time order: a few
    hundred of 10,240 in the simulated hour) are sorted by the three keys."""
    order = np.arange(len(idx)) if len(rowid) < 2 or bool(np.all(rowid[1:] > rowid[:-1])) else \
        np.argsort(rowid, kind="stable")               # a few runs (the scan's row groups): merged
    by = idx[order]
    order = order[np.argsort(by.astype(np.uint16) if n_series <= _RADIX_SERIES else by, kind="stable")]
    i, t = idx[order], ts[order]
    late = (i[1:] == i[:-1]) & (t[1:] < t[:-1])
    if bool(late.any()):
        unsorted = np.zeros(n_series, dtype=bool)
        unsorted[i[1:][late]] = True
        rows = unsorted[i]                             # those series' rows: contiguous, in series order
        sub = order[rows]
        order[rows] = sub[np.lexsort((rowid[sub], ts[sub], idx[sub]))]
    return order


def _seq_order(parts: list[npt.NDArray[Any]]) -> npt.NDArray[np.intp] | None:
    """The permutation that puts rows read in pieces into write order (``seq``); None when they
    came in it. DuckDB's own ORDER BY sorted every column of a big read (40 M phase spans: 3.7 of
    its 4.1 s); its scan returns row groups nearly in order, a few hundred runs that NumPy's
    stable sort (a timsort) merges in 0.1 s."""
    if not parts:
        return None
    seq = np.concatenate(parts) if len(parts) != 1 else np.asarray(parts[0])
    if len(seq) < 2 or bool(np.all(seq[1:] > seq[:-1])):
        return None
    return np.argsort(seq, kind="stable")


def _same(n: int, value: str | None) -> npt.NDArray[np.object_]:
    """``n`` times one value, as a read-only view of a single reference (no memory per row: a big
    job's job id and unread ids were 320 MB each as references). ``np.full(n, "a", dtype=object)``
    would make a new ``str`` per element (the fill value passes through a unicode array)."""
    one = np.empty(1, dtype=object)
    one[0] = value
    return np.broadcast_to(one, (n,))


def _text_column(col: pa.ChunkedArray | pa.Array) -> npt.NDArray[np.object_]:
    """An Arrow text column as an object array, null as None, one ``str`` per distinct value."""
    enc = pc.dictionary_encode(col)
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks()
    values = np.array([*enc.dictionary.to_pylist(), None], dtype=object)
    return np.asarray(values[enc.indices.fill_null(len(values) - 1).to_numpy()], dtype=object)
