"""Bulk load of an OpenMetrics / Prometheus text file into :class:`DuckStore`, split by DuckDB.

DuckDB's parallel CSV reader splits each line at ``}`` (three columns: label text, the
`` value [ts]`` rest, anything after a second ``}``); SQL turns the rest into numbers. Two passes
over the file:

A. group by a 64-bit hash of the series text: the distinct series (a few thousand) with their
   line counts, and the comment lines (no number parsing in this pass);
B. ``INSERT`` (hash, ts, value) of every sample line in file order, in a transaction; the hash
   is the series id (registered in Python once per series, resolved exactly as the streaming
   parser does). No join and no filter on parsed numbers: a streaming insert keeps line order, so
   the last line of a repeated (series, ts) has the highest ``rowid`` and wins; a line that is
   not a plain sample gets a NULL value or ts, found by one scan of the new rows.

When anything is not a plain sample line (a series text that does not parse, an exemplar, a
``_created`` series of a counter family, content after ``# EOF``, a last line without its
newline in a file not ending in ``# EOF``, or pass B inserting fewer lines than pass A counted:
a bad value, a timestamp outside the config's range) or DuckDB cannot read the file (invalid
UTF-8, a corrupt ``.gz``), pass B is rolled back and the whole file goes through the streaming
parser instead, which reports each bad line with its exact number. Both paths give the same
samples and rejects.
Series texts are told apart by ``hash()`` (64-bit): a collision among a file's distinct series
has a probability around n²/2⁶⁵ (1e-11 for 20,000 series); one with an id the store already
gives to another series is detected and that file is streamed instead.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import duckdb

from suanli.ingest.openmetrics import (
    OpenMetricsConfig,
    OpenMetricsParser,
    file_format,
    file_mtime,
    read_openmetrics,
)
from suanli.ingest.records import IngestReport, SeriesKey
from suanli.inventory import Resolver
from suanli.metric_catalog import DCGM_BLANK
from suanli.store.api import add_batches

if TYPE_CHECKING:
    from suanli.store.duck import DuckStore

__all__ = ["load_openmetrics"]


def _csv(path: Path) -> str:
    quoted = str(path).replace("'", "''")
    return (f"read_csv('{quoted}', columns={{'a': 'VARCHAR', 'b': 'VARCHAR', 'c': 'VARCHAR'}}, "
            "header=false, delim='}', quote='', escape='', auto_detect=false, strict_mode=false, "
            "null_padding=true, nullstr='\x02', new_line='\\n', compression='auto')")


def _sample_rows(path: Path, ts_scale: float, stamp: float, cfg: OpenMetricsConfig) -> str:
    """(h, ts, value) for every line pass A calls a sample; a line that is not a plain sample gets
    a NULL value or ts (checked after the insert: cheaper than a filter, which DuckDB would inline
    and so parse every number twice)."""
    b = DCGM_BLANK
    prefix = cfg.dcgm_prefix.replace("'", "''")
    rows = f"""
      SELECT CASE WHEN b IS NOT NULL THEN a ELSE a[1:strpos(a, ' ') - 1] END AS st,
             CASE WHEN b IS NOT NULL THEN b ELSE a[strpos(a, ' '):] END AS rest, c
      FROM {_csv(path)}
      WHERE NOT (a IS NOT NULL AND starts_with(a, '#')) AND (b IS NOT NULL OR strpos(a, ' ') > 0)"""
    split = f"""
      SELECT st, rest[2:] AS r2, strpos(rest[2:], ' ') AS p,
             st <> '' AND c IS NULL AND starts_with(rest, ' ') AND NOT contains(rest, '_')
             AND NOT contains(rest, chr(9)) AS plain
      FROM ({rows})"""
    nums = f"""
      SELECT st, CASE WHEN plain THEN TRY_CAST(CASE WHEN p = 0 THEN r2 ELSE r2[1:p - 1] END AS DOUBLE) END AS v,
             CASE WHEN p = 0 THEN {stamp!r} ELSE TRY_CAST(r2[p + 1:] AS DOUBLE) * {ts_scale!r} END AS ts
      FROM ({split})"""
    return f"""
      SELECT hash(st) AS h, ts,
             CASE WHEN starts_with(st, '{prefix}') AND (v >= {b.float_min!r}
                  OR (v >= {b.int32_min!r} AND v <= {b.int32_max!r})) THEN 'NaN'::DOUBLE ELSE v END AS value
      FROM ({nums})"""


def _pass_a(con: duckdb.DuckDBPyConnection, path: Path) -> list[tuple[Any, ...]]:
    """(kind, hash, comment text, series text, lines) per distinct series and comment; no number
    parsing here (pass B counts the lines it could not take)."""
    light = f"""
      SELECT CASE WHEN a IS NOT NULL AND starts_with(a, '#') THEN 'comment'
                  WHEN b IS NULL AND (a IS NULL OR trim(a) = '') THEN 'blank'
                  WHEN b IS NOT NULL OR strpos(a, ' ') > 0 THEN 'ok' ELSE 'bad' END AS kind,
             CASE WHEN b IS NOT NULL THEN a WHEN strpos(a, ' ') > 0 THEN a[1:strpos(a, ' ') - 1] ELSE '' END AS st,
             a, b, c
      FROM {_csv(path)}"""
    return con.execute(f"""
      SELECT kind, CASE WHEN kind = 'ok' THEN hash(st) END AS h,
             CASE WHEN kind = 'comment' THEN a || coalesce('}}' || b, '') || coalesce('}}' || c, '') END AS comment,
             any_value(CASE WHEN kind = 'ok' THEN st END), count(*)
      FROM ({light}) GROUP BY ALL""").fetchall()


def load_openmetrics(store: DuckStore, path: Path, resolver: Resolver | None, report: IngestReport,
                     *, arrival_ts: float | None = None, config: OpenMetricsConfig | None = None) -> None:
    """Load one metrics file into ``store`` (bulk when the file is clean, else streaming)."""
    cfg = config or OpenMetricsConfig()
    fmt = file_format(path, cfg)
    stamp = arrival_ts if arrival_ts is not None else file_mtime(path)
    with store.lock:
        store.flush()
        try:
            groups = _pass_a(store.con, path)
        except (duckdb.Error, UnicodeDecodeError):
            groups = None
        if not cfg.min_ts_s <= stamp <= cfg.max_ts_s:      # only explicit timestamps are range-checked
            groups = None
        plan = None if groups is None else _plan(groups, path, fmt, resolver, stamp, cfg)
        if plan is None:
            _stream(store, path, resolver, report, fmt, stamp, cfg)
            return
        keys, eof_seen = plan
        if any(store.keys_by_id.get(h, key) != key for h, (key, _) in keys.items()):
            _stream(store, path, resolver, report, fmt, stamp, cfg)      # a 64-bit hash collision
            return
        if not _insert(store, keys, _sample_rows(path, 1.0 if fmt == "openmetrics" else 1e-3, stamp, cfg), cfg):
            _stream(store, path, resolver, report, fmt, stamp, cfg)      # some line was not a plain sample
            return
        for h, (key, _) in keys.items():
            store.register_id(h, key)
        store.flush()
    report.add("samples", sum(n for _, n in keys.values()))
    report.add("series", len(keys))
    unresolved = sum(1 for k, _ in keys.values() if k.entity_id is None)
    if unresolved:
        report.add_unresolved("series", unresolved)
    if fmt == "openmetrics" and not eof_seen and keys:
        report.reject(f"{path.name}: OpenMetrics input does not end in # EOF")


Plan = tuple[dict[int, tuple[SeriesKey, int]], bool]   # series by hash, whether # EOF was seen


def _plan(groups: list[tuple[Any, ...]], path: Path, fmt: str, resolver: Resolver | None,
          stamp: float, cfg: OpenMetricsConfig) -> Plan | None:
    """Series keys by hash, or None when the file needs the streaming parser."""
    scratch = IngestReport()
    parser = OpenMetricsParser(source=path.name, resolver=resolver, report=scratch,
                               fmt="openmetrics" if fmt == "openmetrics" else "prometheus",
                               arrival_ts=stamp, config=cfg)
    tail = _tail(path)
    if tail is None or _cut(tail):
        return None
    eof = 0
    for kind, _, comment, _, n in groups:
        if kind == "bad":
            return None
        if kind == "comment":
            if comment.rstrip() == "# EOF":
                eof += n
            else:
                list(parser.feed([(0, comment)]))
    if eof > 1 or (eof == 1 and not _ends_with_eof(tail)) or scratch.rejected:
        return None
    keys: dict[int, tuple[SeriesKey, int]] = {}
    for kind, h, _, st, n in groups:
        if kind != "ok":
            continue
        text = st if st.find("{") < 0 else st + "}"
        key = parser.series_for_text(text)
        if key is None:             # a bad series text, or a _created series: whether a line is
            return None             # one depends on where its # TYPE stands, which only streaming sees
        keys[int(h)] = (key, int(n))
    return keys, eof == 1


def _tail(path: Path, n_bytes: int = 4096) -> bytes | None:
    """The last bytes of a file (decompressed for ``.gz``); None when it cannot be read."""
    try:
        if path.suffix != ".gz":
            with path.open("rb") as fh:
                fh.seek(0, 2)
                fh.seek(max(0, fh.tell() - n_bytes))
                return fh.read()
        last = b""
        with gzip.open(path, "rb") as gz:
            while chunk := gz.read(1 << 20):
                last = (last + chunk)[-n_bytes:]
        return last
    except (OSError, EOFError, zlib.error):
        return None


def _ends_with_eof(tail: bytes) -> bool:
    """The last non-blank line is ``# EOF``."""
    lines = [ln.strip() for ln in tail.splitlines() if ln.strip()]
    return bool(lines) and lines[-1] == b"# EOF"


def _cut(tail: bytes) -> bool:
    """The last line has no newline and is neither blank nor ``# EOF`` (the streaming parser
    rejects it as truncated)."""
    last = tail.rsplit(b"\n", 1)[-1]
    return bool(last.strip()) and last.strip() != b"# EOF"


def _insert(store: DuckStore, keys: dict[int, tuple[SeriesKey, int]], rows_sql: str,
            cfg: OpenMetricsConfig) -> bool:
    """Append the sample lines in file order, in one transaction: a projection only, no join
    (DuckDB keeps the order of a streaming insert, so ``rowid`` order is line order and the last
    line wins). Rolled back (False) when a line was not a plain sample or its timestamp is out of
    range (exact only when the arrival stamp is in range: the caller streams otherwise)."""
    con = store.con
    con.execute("BEGIN TRANSACTION").fetchall()
    try:
        before = int(con.execute("SELECT count(*) FROM samples").fetchall()[0][0])
        rows = con.execute(f"INSERT INTO samples SELECT h, ts, value FROM ({rows_sql})").fetchall()
        bad = con.execute("SELECT count(*) FROM samples WHERE rowid >= $n AND (value IS NULL OR ts IS NULL "
                          "OR NOT isfinite(ts) OR ts < $lo OR ts > $hi)",
                          {"n": before, "lo": cfg.min_ts_s, "hi": cfg.max_ts_s}).fetchall()
    except BaseException:
        con.execute("ROLLBACK").fetchall()
        raise
    if int(bad[0][0]) or int(rows[0][0]) != sum(n for _, n in keys.values()):
        con.execute("ROLLBACK").fetchall()
        return False
    con.execute("COMMIT").fetchall()
    return True


def _stream(store: DuckStore, path: Path, resolver: Resolver | None, report: IngestReport,
            fmt: Literal["openmetrics", "prometheus"], stamp: float, cfg: OpenMetricsConfig) -> None:
    add_batches(store, read_openmetrics(path, resolver, report, fmt=fmt, arrival_ts=stamp, config=cfg), report)
    store.flush()

