"""The incidents ``serve`` tracks, kept in the store so that they survive a restart.

One row per incident id in the table ``serve_incidents`` of the store's DuckDB file: the fields the
tracker needs to pick the incident up again (category, root, times, state, when it was last
seen, its history) and the incident's JSON as spec/diagnosis.md shapes it (``doc``). A step's
changes are written in one DuckDB transaction *before* they are announced (printed, pushed to
Alertmanager), so an incident announced as opened is never lost by a crash, and a restart that
finds it again updates it instead of opening a duplicate.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from suanli.incidents.model import ActionDecision, Impact, Incident
from suanli.store.duck import DuckStore
from suanli.timefmt import to_rfc3339

__all__ = ["DDL", "IncidentLog", "KeptIncident"]

DDL = """
CREATE TABLE IF NOT EXISTS serve_incidents (
    id VARCHAR PRIMARY KEY, state VARCHAR, category VARCHAR, root_kind VARCHAR, root_id VARCHAR,
    confidence DOUBLE, start_s DOUBLE, detected_s DOUBLE, end_s DOUBLE, last_seen DOUBLE,
    history VARCHAR, doc VARCHAR);
"""
_COLUMNS = "id, state, category, root_kind, root_id, confidence, start_s, detected_s, end_s, last_seen, history, doc"


@dataclass(frozen=True)
class KeptIncident:
    """One stored incident: what the tracker restores, and its JSON."""

    incident: Incident
    last_seen: float
    history: list[tuple[float, str]]
    doc: dict[str, Any]

    def json(self) -> dict[str, Any]:
        """The incident's diagnosis JSON with its ``state`` and ``history`` (RFC 3339 times)."""
        return {**self.doc, "state": self.incident.state,
                "history": [{"at": to_rfc3339(t), "change": what} for t, what in self.history]}


def _incident(row: Sequence[Any], doc: dict[str, Any]) -> Incident:
    imp = doc.get("impact") or {}
    impact = Impact(tuple(imp.get("jobs", ())), int(imp.get("gpus", 0)), tuple(imp.get("sla_ids", ())),
                    imp.get("lost_gpu_hours"), imp.get("lost_cost"))
    actions = [ActionDecision(a["action"], a["target"], a["status"]) for a in doc.get("actions", [])]
    return Incident(category=row[2], root_kind=row[3], root_id=row[4], confidence=float(row[5]), start=float(row[6]),
                    detected_at=row[7], end=row[8], evidence=list(doc.get("evidence", [])), impact=impact,
                    actions=actions, state=row[1], pinned_id=row[0])


class IncidentLog:
    """``serve_incidents`` on the store's connection (created when missing)."""

    def __init__(self, store: DuckStore) -> None:
        self.store = store
        with store.lock:
            store.con.execute(DDL)

    def load(self) -> list[KeptIncident]:
        """Every stored incident, by start."""
        with self.store.lock:
            rows = self.store.con.execute(f"SELECT {_COLUMNS} FROM serve_incidents ORDER BY start_s, root_id").fetchall()
        out = []
        for row in rows:
            doc = json.loads(row[11])
            history = [(float(t), str(w)) for t, w in json.loads(row[10])]
            out.append(KeptIncident(_incident(row, doc), float(row[9]), history, doc))
        return out

    def save(self, kept: Sequence[KeptIncident]) -> None:
        """Write these incidents (replacing their earlier rows) in one transaction."""
        if not kept:
            return
        rows = [[k.incident.id, k.incident.state, k.incident.category, k.incident.root_kind, k.incident.root_id,
                 k.incident.confidence, k.incident.start, k.incident.detected_at, k.incident.end, k.last_seen,
                 json.dumps(k.history), json.dumps(k.doc)] for k in kept]
        marks = ", ".join("?" * 12)
        with self.store.lock:
            con = self.store.con
            con.execute("BEGIN TRANSACTION")
            try:
                con.executemany(f"INSERT OR REPLACE INTO serve_incidents ({_COLUMNS}) VALUES ({marks})", rows)
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
