"""Whose DuckDB file this is, and which schema it holds (issue 13 item 4, "Safe storage").

suanli marks its own stores with a one-row table ``suanli_schema (app, version)``. Opening a file:

* an empty file (no tables) becomes a store of :data:`SCHEMA_VERSION` (not when read-only);
* a store of this version opens as it is;
* an older store is migrated step by step (:data:`MIGRATIONS`, each step in one transaction with
  its new version number), or refused when opened read-only;
* a store of a newer version is refused: this suanli does not know its tables;
* a file with tables but no mark is refused, naming what it holds, *before anything is written
  into it*, unless its tables are exactly those of a suanli store from before the mark
  (version 0), which is migrated.

Every refusal is an :class:`~suanli.errors.InputError` naming the file.
"""

from __future__ import annotations

import duckdb

from suanli.errors import InputError

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "SUANLI_TABLES", "VERSION_TABLE", "open_schema", "schema_version"]

SCHEMA_VERSION = 1
VERSION_TABLE = "suanli_schema"
SUANLI_TABLES = frozenset({"series", "samples", "spans", "events", "meta", "reports", "files",
                           "history_incidents", "history_remediations"})
"""Tables a suanli store may hold besides the mark (``store.history`` adds the ``history_*`` ones)."""
_V0_CORE = frozenset({"series", "samples", "spans", "events", "meta", "reports", "files"})
_V0_COLUMNS = {"series": ("id", "metric", "entity_kind", "entity_id", "peer_id", "labels"),
               "samples": ("series_id", "ts", "value"), "files": ("fingerprint", "path", "seq")}
"""Columns checked to recognise a version-0 store (a foreign ``samples`` table does not pass)."""

MIGRATIONS: dict[int, str] = {
    0: f"CREATE TABLE {VERSION_TABLE} (app VARCHAR, version INTEGER); "
       f"INSERT INTO {VERSION_TABLE} VALUES ('suanli', 0);",
}
"""SQL that takes a store from version N to N + 1 (the version row is then set to N + 1)."""


def _tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    rows = con.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
                       "AND table_catalog = current_database()").fetchall()
    return {str(r[0]) for r in rows}


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> tuple[str, ...]:
    rows = con.execute("SELECT column_name FROM information_schema.columns WHERE table_schema = 'main' "
                       "AND table_catalog = current_database() AND table_name = ? ORDER BY ordinal_position",
                       [table]).fetchall()
    return tuple(str(r[0]) for r in rows)


def schema_version(con: duckdb.DuckDBPyConnection, where: str) -> int | None:
    """The store's schema version; None for an empty file; InputError for a file that is not a
    suanli store."""
    tables = _tables(con)
    if not tables:
        return None
    if VERSION_TABLE in tables:
        rows = con.execute(f"SELECT app, version FROM {VERSION_TABLE}").fetchall()
        if len(rows) != 1 or rows[0][0] != "suanli" or not isinstance(rows[0][1], int):
            raise InputError(f"not a suanli store: its {VERSION_TABLE} table holds {rows[:2]!r}", file=where)
        return int(rows[0][1])
    if _V0_CORE <= tables <= SUANLI_TABLES and all(_columns(con, t) == c for t, c in _V0_COLUMNS.items()):
        return 0
    shown = ", ".join(sorted(tables)[:6]) + (", ..." if len(tables) > 6 else "")
    raise InputError(f"not a suanli store (it holds tables {shown} and no {VERSION_TABLE} mark); "
                     "suanli writes nothing into it: pass another --db", file=where)


def _in_transaction(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute(sql)
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def open_schema(con: duckdb.DuckDBPyConnection, ddl: str, where: str, read_only: bool) -> int:
    """Check (and create or migrate) the schema of a store just opened; its version."""
    found = schema_version(con, where)
    if found is None:
        if read_only:
            raise InputError("holds no suanli data (an empty DuckDB file): run `suanli ingest` into it first",
                             file=where)
        _in_transaction(con, ddl + MIGRATIONS[0] + f"UPDATE {VERSION_TABLE} SET version = {SCHEMA_VERSION};")
        return SCHEMA_VERSION
    if found > SCHEMA_VERSION:
        raise InputError(f"written by a newer suanli (schema version {found}; this one reads up to "
                         f"{SCHEMA_VERSION}): upgrade suanli to read it", file=where)
    if found < SCHEMA_VERSION and read_only:
        raise InputError(f"schema version {found} is older than {SCHEMA_VERSION}: run `suanli ingest` on it "
                         "once (it migrates the store), then read it", file=where)
    for version in range(found, SCHEMA_VERSION):
        _in_transaction(con, MIGRATIONS[version] + f"UPDATE {VERSION_TABLE} SET version = {version + 1};")
    if not read_only:
        con.execute(ddl)                  # tables a newer build of this version adds (idempotent)
    return SCHEMA_VERSION
