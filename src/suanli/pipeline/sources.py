"""Where a diagnosis reads from: a scenario folder loaded into an in-memory store, a DuckDB file
written by ``suanli ingest``, or a Prometheus-compatible TSDB with trace and log files beside it;
and the inventory stored with the data. Bad paths are InputErrors naming them."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import duckdb

from suanli.config import Config
from suanli.errors import InputError
from suanli.ingest.load import load_paths
from suanli.inventory import Inventory, parse_inventory
from suanli.pipeline.batch import diagnose
from suanli.pipeline.inputs import Files, load_inputs
from suanli.pipeline.model import Diagnosis
from suanli.store.api import Store, missing_inputs
from suanli.store.duck import DuckStore
from suanli.store.promql import PromConfig, PromStore

__all__ = ["EDGE_PAD_S", "EXTENT_LOOKBACK_S", "Progress", "diagnose_folder", "open_db", "open_folder",
           "open_prometheus", "stored_inventory"]

EXTENT_LOOKBACK_S = 400 * 86400.0
"""How far back the data's extent is searched when no window is given (a TSDB's retention is
shorter; backfilled blocks may be older than the newest sample by any amount)."""
EDGE_PAD_S = 600.0
"""Samples read beyond the analysed window on each side (the rule evaluator's lookback at its start)."""

Progress = Callable[[str, int, int], None]
"""``progress(label, done, total)``, e.g. a terminal progress bar."""


def open_folder(folder: Path, config: Config | None = None, progress: Progress | None = None) -> DuckStore:
    """An in-memory store holding a scenario folder (spec/telemetry.md), its inventory included."""
    if not folder.is_dir():
        raise InputError(f"{folder}: not a folder")
    if not any((folder / name).is_file() for name in ("inventory.yaml", "inventory.yml")):
        raise InputError(f"{folder}/inventory.yaml: missing (every scenario folder needs one)")
    cfg = config or Config()
    store = DuckStore(None, cfg.store)
    load_paths([folder], store, progress=progress, config=cfg.ingest)
    store.flush()
    return store


def open_db(db: Path, must_exist: bool, config: Config | None = None) -> DuckStore:
    """Open ``db``; a missing, unreadable, locked, non-DuckDB or non-suanli file is an InputError
    naming it. An existing database a verb must find (``must_exist``: diagnose, check, rca) is opened
    read-only; only ingest creates and writes."""
    if must_exist and not db.exists():
        raise InputError(f"{db}: no such database (run `suanli ingest PATH... --db {db}` first)")
    if db.is_dir():
        raise InputError("is a folder, expected a DuckDB file", file=str(db))
    if not db.parent.is_dir():
        raise InputError(f"folder {db.parent} does not exist", file=str(db))
    try:
        return DuckStore(db, (config or Config()).store, read_only=must_exist)
    except duckdb.Error as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise InputError(f"cannot open as a suanli database: {first}", file=str(db)) from None


def _files_store(inventory: Path, paths: Sequence[Path], cfg: Config, progress: Progress | None) -> DuckStore:
    """What a TSDB does not hold: the inventory and the trace and log files, in an in-memory store."""
    text = _read(inventory)
    for path in paths:
        if not path.exists():
            raise InputError(f"{path}: no such file or folder")
    files = DuckStore(None, cfg.store)
    files.put_inventory(text, str(inventory))
    if paths:
        load_paths(list(paths), files, progress=progress, config=cfg.ingest)
    files.flush()
    return files


def open_prometheus(prom: PromConfig, inventory: Path, paths: Sequence[Path] = (),
                    bounds: tuple[float | None, float | None] = (None, None), config: Config | None = None,
                    progress: Progress | None = None) -> PromStore:
    """A store reading metrics from a Prometheus-compatible TSDB (Prometheus, VictoriaMetrics,
    Mimir, Thanos) and spans and events from ``paths`` (trace and log files or folders). Its window
    is ``bounds`` widened by :data:`EDGE_PAD_S`; a missing bound is the data's edge, searched over
    the last :data:`EXTENT_LOOKBACK_S` (and the files' own extent)."""
    cfg = config or Config()
    inv = parse_inventory(_read(inventory), str(inventory))      # a bad inventory: file:line before any query
    files = _files_store(inventory, paths, cfg, progress)
    try:
        lo, hi = bounds
        if lo is None or hi is None:
            now = time.time()
            probe = PromStore(prom, inv, window=(hi - EXTENT_LOOKBACK_S if hi is not None else now - EXTENT_LOOKBACK_S,
                                                 hi if hi is not None else now), secondary=files)
            extent = probe.time_range()
            probe.client.close()
            lo = lo if lo is not None else (extent[0] if extent else now - prom.default_lookback_s)
            hi = hi if hi is not None else (extent[1] if extent else now)
        return PromStore(prom, inv, window=(lo - EDGE_PAD_S, max(hi, lo) + EDGE_PAD_S), secondary=files)
    except BaseException:
        files.close()
        raise


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: {getattr(exc, 'strerror', None) or exc}") from None


def stored_inventory(store: Store) -> Inventory:
    """The inventory the data was resolved against (ingested with it)."""
    text = store.inventory_text()
    if not text:
        raise InputError("the database holds no inventory: ingest an inventory.yaml with the data")
    return parse_inventory(text, "inventory.yaml (stored)")


def diagnose_folder(folder: Path, config: Config | None = None, files: Files | None = None) -> Diagnosis:
    """Load a scenario folder, diagnose its whole extent with the shipped rule pack (or ``files``),
    close the store: what ``bench/diagnosis.py`` and the scenario tests run."""
    inputs, cfg = load_inputs(files or Files(), config or Config())
    store = open_folder(folder, cfg)
    try:
        return diagnose(store, stored_inventory(store), None, cfg, inputs, missing_inputs(store))
    finally:
        store.close()
