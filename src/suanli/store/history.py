"""Incident and remediation history on a DuckDB connection: what failed where, and what was done.

Two tables, created idempotently on the connection they are given (the store's own, or any DuckDB
file), so the history survives closing and reopening the file. Every statement's result is fetched
to its end: the connection stays usable for the store's own reads.

* ``history_incidents``: one row per incident id (entity, category, code, start, end, jobs);
  recording the same id again updates it (an incident that ended gets its end).
* ``history_remediations``: one row per (entity, kind, time); recording it again is a no-op.

The decision engine (``suanli.analysis.decisions``) reads a :class:`History` and learns from it:
how often a category cleared by itself, whether the same GPU keeps failing, whether resets helped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import duckdb

__all__ = ["NO_HISTORY", "History", "IncidentRecord", "RemediationRecord", "ensure_history", "load_history",
           "record_incident", "record_remediation"]

DDL = """
CREATE TABLE IF NOT EXISTS history_incidents (
    incident_id VARCHAR PRIMARY KEY, entity_kind VARCHAR, entity_id VARCHAR, node VARCHAR,
    category VARCHAR, code VARCHAR, start_s DOUBLE, end_s DOUBLE, jobs VARCHAR);
CREATE TABLE IF NOT EXISTS history_remediations (
    entity_kind VARCHAR, entity_id VARCHAR, node VARCHAR, kind VARCHAR, time_s DOUBLE,
    incident_id VARCHAR, category VARCHAR, code VARCHAR, executed BOOLEAN,
    PRIMARY KEY (entity_id, kind, time_s));
CREATE INDEX IF NOT EXISTS history_incidents_entity ON history_incidents (entity_id);
CREATE INDEX IF NOT EXISTS history_remediations_entity ON history_remediations (entity_id);
"""


@dataclass(frozen=True)
class IncidentRecord:
    """One past (or open) incident. ``code`` names what the hardware reported (``xid:79``), if any;
    ``end_s`` None means still open; ``node`` is the node of a GPU or NIC root (None otherwise)."""

    incident_id: str
    entity_kind: str
    entity_id: str
    category: str
    start_s: float
    end_s: float | None = None
    code: str | None = None
    node: str | None = None
    jobs: tuple[str, ...] = ()


@dataclass(frozen=True)
class RemediationRecord:
    """One remediation: ``kind`` is what was done (``reset_gpu``, ``reboot_node``, ``drain_node``,
    ``retire_gpu``, ``reschedule_job``, ...) to ``entity_id`` at ``time_s``; ``executed`` False
    for a dry run (kept, but it taught nothing about the fault)."""

    entity_kind: str
    entity_id: str
    kind: str
    time_s: float
    node: str | None = None
    incident_id: str | None = None
    category: str | None = None
    code: str | None = None
    executed: bool = True


@dataclass(frozen=True)
class History:
    """What the store holds over a lookback window, oldest first."""

    incidents: tuple[IncidentRecord, ...] = ()
    remediations: tuple[RemediationRecord, ...] = ()


NO_HISTORY = History()
"""An empty history (a cluster suanli has not seen before)."""


def ensure_history(con: duckdb.DuckDBPyConnection) -> None:
    """Create the history tables if they are missing (safe to call on every open)."""
    con.execute(DDL).fetchall()


def _finite(x: float, what: str) -> float:
    if not math.isfinite(x):
        raise ValueError(f"{what} must be a finite epoch time, got {x!r}")
    return float(x)


def record_incident(con: duckdb.DuckDBPyConnection, rec: IncidentRecord) -> None:
    """Insert or update one incident (keyed by its id)."""
    ensure_history(con)
    end = None if rec.end_s is None else _finite(rec.end_s, "end_s")
    con.execute(
        "INSERT OR REPLACE INTO history_incidents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [rec.incident_id, rec.entity_kind, rec.entity_id, rec.node, rec.category, rec.code,
         _finite(rec.start_s, "start_s"), end, "\n".join(rec.jobs)]).fetchall()


def record_remediation(con: duckdb.DuckDBPyConnection, rec: RemediationRecord) -> bool:
    """Insert one remediation; False when the same (entity, kind, time) is already there."""
    ensure_history(con)
    key = [rec.entity_id, rec.kind, _finite(rec.time_s, "time_s")]
    if con.execute("SELECT 1 FROM history_remediations WHERE entity_id = ? AND kind = ? AND time_s = ?",
                   key).fetchall():
        return False
    con.execute("INSERT INTO history_remediations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [rec.entity_kind, rec.entity_id, rec.node, rec.kind, key[2], rec.incident_id, rec.category,
                 rec.code, rec.executed]).fetchall()
    return True


def _where(since_s: float, until_s: float | None, col: str, categories: Sequence[str] | None
           ) -> tuple[str, list[Any]]:
    clauses: list[str] = [f"{col} >= ?"]
    args: list[Any] = [since_s]
    if until_s is not None:
        clauses.append(f"{col} <= ?")
        args.append(until_s)
    if categories is not None:
        clauses.append("list_contains(?, category)")
        args.append(list(categories))
    return " AND ".join(clauses), args


def load_history(con: duckdb.DuckDBPyConnection, since_s: float, until_s: float | None = None,
                 categories: Sequence[str] | None = None) -> History:
    """Incidents that started and remediations done in [since_s, until_s], oldest first;
    ``categories`` narrows the incidents (remediations are all kept: a reset is history for any fault)."""
    ensure_history(con)
    where, args = _where(since_s, until_s, "start_s", categories)
    rows = con.execute(
        "SELECT incident_id, entity_kind, entity_id, category, start_s, end_s, code, node, jobs "
        f"FROM history_incidents WHERE {where} ORDER BY start_s, incident_id", args).fetchall()
    incidents = tuple(IncidentRecord(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7],
                                     tuple(j for j in (r[8] or "").split("\n") if j)) for r in rows)
    where, args = _where(since_s, until_s, "time_s", None)
    rows = con.execute(
        "SELECT entity_kind, entity_id, kind, time_s, node, incident_id, category, code, executed "
        f"FROM history_remediations WHERE {where} ORDER BY time_s, entity_id, kind", args).fetchall()
    remediations = tuple(RemediationRecord(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], bool(r[8]))
                         for r in rows)
    return History(incidents, remediations)
