"""``suanli ingest`` (load files into a DuckDB store) and ``suanli check`` (what the store holds)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from suanli.cli.base import DEFAULT_DB, app, err, out, progress_bar, run_verb
from suanli.errors import InputError
from suanli.report.tables import ingest_table, maturity_table

if TYPE_CHECKING:                      # imported where used: every analysis' settings, 0.24 s at start-up
    from suanli.config import Config

__all__ = ["check", "check_cmd", "ingest", "ingest_cmd"]


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Scenario folders or files (inventory, metrics, traces, logs).")],
    db: Annotated[Path, typer.Option(help="DuckDB file to load into.")] = DEFAULT_DB,
) -> None:
    """Load inventory, metrics, traces and logs into the store, reporting counts and rejects."""
    run_verb(lambda: ingest_cmd(out, paths, db))


@app.command()
def check(
    db: Annotated[Path, typer.Option(help="DuckDB file to check.")] = DEFAULT_DB,
    rules: Annotated[Path | None, typer.Option(help="Rule file (default: the shipped pack).")] = None,
) -> None:
    """Metadata consistency, unmapped series, id formats, rule coverage, maturity scores; exit 3 on problems."""
    run_verb(lambda: check_cmd(out, db, rules))


def _remove_db(db: Path) -> None:
    """Delete a database file (and its write-ahead log) that a failed ingest created and left empty."""
    for path in (db, db.with_name(db.name + ".wal")):
        path.unlink(missing_ok=True)


def ingest_cmd(console: Console, paths: list[Path], db: Path, config: Config | None = None) -> int:
    from suanli.ingest.load import load_paths
    from suanli.pipeline import open_db

    for p in paths:
        if not p.exists():
            what = "a symbolic link that leads nowhere (a loop or a missing target)" if p.is_symlink() else \
                "no such file or folder"
            raise InputError(f"{p}: {what}")
    created = not db.exists()
    store = open_db(db, must_exist=False, config=config)
    done = False
    try:
        with progress_bar() as progress:
            report = load_paths(paths, store, progress=progress, config=(config or _config()).ingest)
        store.flush()
        inventory_kept = store.inventory_text() is not None
        done = True
    finally:
        empty = created and not done and not store.loaded_files()
        store.close()
        if empty:
            _remove_db(db)     # a new file that holds nothing; one with committed files is kept
    console.print(ingest_table(report))
    for reason in report.reasons[:10]:
        tag = ("skipped" if reason.endswith(", skipped")
               else "unplaced" if "not placed in time" in reason else "rejected")
        console.print(f"  {tag}: {reason}", markup=False, highlight=False)
    console.print(f"database: {db}")
    if not inventory_kept:
        err.print(f"warning: {db} holds no inventory: every record above stays unresolved; ingest the "
                  "inventory.yaml first, then the data", markup=False, highlight=False)
    return 0


CHECK_FOUND_PROBLEMS = 3
"""Exit status of ``suanli check`` when it found problems (spec/cli.md), so CI can gate on it."""


def check_cmd(console: Console, db: Path, rules: Path | None, config: Config | None = None) -> int:
    from suanli.pipeline import open_db, stored_inventory
    from suanli.rules import load_rules
    from suanli.store.check import check as check_store

    cfg = config or _config()
    ruleset = load_rules(rules)
    store = open_db(db, must_exist=True, config=cfg)
    try:
        report = check_store(store, stored_inventory(store), rules_loaded=len(ruleset.rules),
                             inhibitions=len(ruleset.inhibit_rules), config=cfg.check)
    finally:
        store.close()
    for line in report.problems:
        console.print(f"- {line}", markup=False, highlight=False)
    console.print(maturity_table(report.maturity))
    console.print("check: ok" if report.ok else f"check: {len(report.problems)} problem(s)")
    return 0 if report.ok else CHECK_FOUND_PROBLEMS


def _config() -> Config:
    from suanli.config import Config
    return Config()
