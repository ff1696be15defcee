"""Where a diagnosis reads from: a scenario folder loaded into an in-memory store, or a DuckDB file
written by ``suanli ingest``; and the inventory stored with the data. Bad paths are InputErrors
naming them."""

from __future__ import annotations

from collections.abc import Callable
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

__all__ = ["Progress", "diagnose_folder", "open_db", "open_folder", "stored_inventory"]

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
