"""Series ids of :class:`~suanli.store.duck.DuckStore`: which key each id names, kept in memory
(one entry per series, never per sample) and staged per transaction until it commits."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import duckdb
import pyarrow as pa

from suanli.ingest.records import SeriesKey
from suanli.ingest.sink import labels_json
from suanli.store.duck import schema as sc

__all__ = ["SeriesIds"]

_LOAD_ROWS = 50_000


class SeriesIds:
    """Every id -> its key; every key -> its first (primary) id; every metric -> its ids, in the
    order they came (a read of one metric looks at its own few thousand ids, not every series). A
    key may own several ids (the same series written with its labels in another order); an id never
    names two keys, and a new inventory changes a key's entity, never its metric."""

    def __init__(self) -> None:
        self.keys_by_id: dict[int, SeriesKey] = {}
        self.primary: dict[SeriesKey, int] = {}
        self.by_metric: dict[str, list[int]] = {}

    def load(self, con: duckdb.DuckDBPyConnection) -> None:
        """Every series of the file (317,433 at 10,240 GPUs), read ``_LOAD_ROWS`` rows at a time,
        equal strings and label pairs shared between the keys."""
        cur = con.execute("SELECT id, metric, entity_kind, entity_id, peer_id, labels FROM series ORDER BY rowid")
        shared: dict[Any, Any] = {}
        while rows := cur.fetchmany(_LOAD_ROWS):
            for sid, metric, kind, entity, peer, labels in rows:
                self._add(int(sid), sc.key_from_row(metric, kind, entity, peer, labels, shared))

    def _add(self, sid: int, key: SeriesKey) -> None:
        if sid not in self.keys_by_id:
            self.by_metric.setdefault(key.metric, []).append(sid)
        self.keys_by_id[sid] = key
        self.primary.setdefault(key, sid)

    def stage(self, series: Mapping[int, SeriesKey], staged: dict[int, SeriesKey]) -> dict[int, int]:
        """Put a batch's ids that are new into ``staged``; returns the ids to write under another
        id (an id that already names another key gets a fresh one)."""
        remap: dict[int, int] = {}
        for sid, key in series.items():
            known = self.keys_by_id.get(sid, staged.get(sid))
            if known is None:
                staged[sid] = key
            elif known != key:
                fresh = self._fresh(sid, staged)
                staged[fresh] = key
                remap[sid] = fresh
        return remap

    def _fresh(self, sid: int, staged: dict[int, SeriesKey]) -> int:
        while sid in self.keys_by_id or sid in staged:           # never in practice: 64-bit ids
            sid = (sid + 1) % 2**64
        return sid

    def commit(self, con: duckdb.DuckDBPyConnection, staged: dict[int, SeriesKey]) -> None:
        """Write the staged ids (inside the caller's transaction)."""
        if not staged:
            return
        table = pa.table({
            "id": pa.array(list(staged), pa.uint64()),
            "metric": [k.metric for k in staged.values()],
            "entity_kind": pa.array([k.entity_kind for k in staged.values()], pa.string()),
            "entity_id": pa.array([k.entity_id for k in staged.values()], pa.string()),
            "peer_id": pa.array([k.peer_id for k in staged.values()], pa.string()),
            "labels": [labels_json(k) for k in staged.values()],
        })
        con.register("_new_series", table)
        try:
            con.execute("INSERT INTO series SELECT * FROM _new_series").fetchall()
        finally:
            con.unregister("_new_series")

    def rekey(self, con: duckdb.DuckDBPyConnection, changes: Mapping[int, SeriesKey]) -> None:
        """Give existing ids new keys (their entity, after a new inventory; inside the caller's
        transaction). Then :meth:`apply_rekey` once it committed."""
        if not changes:
            return
        table = pa.table({
            "id": pa.array(list(changes), pa.uint64()),
            "entity_kind": pa.array([k.entity_kind for k in changes.values()], pa.string()),
            "entity_id": pa.array([k.entity_id for k in changes.values()], pa.string()),
            "peer_id": pa.array([k.peer_id for k in changes.values()], pa.string()),
        })
        con.register("_rekeyed", table)
        try:                            # one statement, not one per series
            con.execute("UPDATE series SET entity_kind = r.entity_kind, entity_id = r.entity_id, "
                        "peer_id = r.peer_id FROM _rekeyed r WHERE series.id = r.id").fetchall()
        finally:
            con.unregister("_rekeyed")

    def apply_rekey(self, changes: Mapping[int, SeriesKey]) -> None:
        self.keys_by_id.update(changes)
        self.primary.clear()
        for sid, key in self.keys_by_id.items():        # first id of each key, as load() orders them
            self.primary.setdefault(key, sid)

    def apply(self, staged: dict[int, SeriesKey]) -> None:
        """Take the staged ids after their transaction committed."""
        for sid, key in staged.items():
            self._add(sid, key)
