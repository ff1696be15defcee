"""``suanli gpu-override``: mark a GPU healthy again (or retired), with a reason; stored and audited."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from suanli.cli.base import DEFAULT_DB, app, out, run_verb
from suanli.errors import InputError

__all__ = ["gpu_override", "override_cmd"]


@app.command("gpu-override")
def gpu_override(
    gpu: Annotated[str, typer.Argument(help="Canonical GPU id, e.g. node-007/gpu3.")],
    state: Annotated[str, typer.Option(help="healthy | retired")],
    reason: Annotated[str, typer.Option(help="Why (kept in the audit log).")],
    who: Annotated[str | None, typer.Option(help="Operator name [default: your login name].")] = None,
    db: Annotated[Path, typer.Option(help="DuckDB file whose overrides log to use.")] = DEFAULT_DB,
) -> None:
    """Mark a GPU healthy again (or retired), with a reason; stored and audited."""
    run_verb(lambda: override_cmd(out, gpu, state, reason, who or _login(), db))


def _login() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry and no LOGNAME/USER (a bare container)
        return "unknown"


def override_cmd(console: Console, gpu: str, state: str, reason: str, who: str, db: Path) -> int:
    from suanli.analysis.health.overrides import record_override
    from suanli.pipeline import open_db, stored_inventory

    if state not in ("healthy", "retired"):
        raise InputError(f"--state {state}: expected healthy or retired")
    path = db.with_suffix(".overrides.jsonl")
    store = open_db(db, must_exist=True)
    try:
        inv = stored_inventory(store)
    finally:
        store.close()
    gpu_id = inv.resolver.gpu_any(gpu)
    if gpu_id is None:
        raise InputError(f"{gpu}: no such GPU in the inventory")
    record_override(path, gpu_id, state, reason, who)
    console.print(f"{gpu_id} marked {state} by {who} ({reason}); audit log {path}", markup=False, highlight=False)
    return 0
