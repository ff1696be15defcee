"""``suanli actions reset``: a person closes the tripped circuit breaker (docs/safety.md "The circuit
breaker"). The reset is a state change: it needs the open trip's id as its confirmation token (in
every ``breaker_open`` detail and in the trip record), who resets it and why; a wrong or spent id
changes nothing and is exit 2. The reset is appended to the audit log, where a running runner reads
it at its next step."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from suanli.cli.base import DEFAULT_DB, app, out, run_verb
from suanli.errors import InputError

__all__ = ["actions_app", "reset", "reset_cmd"]

actions_app = typer.Typer(no_args_is_help=True, help="Self-healing actions: reset the circuit breaker.")
app.add_typer(actions_app, name="actions")


@actions_app.command()
def reset(
    confirm: Annotated[str, typer.Option(help="The open trip's id (the token that confirms this reset).")],
    by: Annotated[str, typer.Option(help="Who resets the breaker (kept in the audit log).")],
    reason: Annotated[str, typer.Option(help="Why it is safe to act again (kept in the audit log).")],
    db: Annotated[Path, typer.Option(help="The database whose audit log (<db>.audit.jsonl) to use.")] = DEFAULT_DB,
    audit_log: Annotated[Path | None, typer.Option(help="The audit log itself (else the rule file's, else <db>'s).")] = None,
    rules: Annotated[Path | None, typer.Option(help="Rule file whose actions.audit_log to use.")] = None,
) -> None:
    """Close the tripped circuit breaker, confirmed by its trip id, with who and why."""
    run_verb(lambda: reset_cmd(out, confirm, by, reason, db, audit_log, rules))


def reset_cmd(console: Console, confirm: str, by: str, reason: str, db: Path, audit_log: Path | None,
              rules: Path | None) -> int:
    from suanli.rules import load_rules
    from suanli.rules.audit import default_audit_path
    from suanli.rules.guard import reset_breaker

    path = audit_log
    if path is None:
        configured = load_rules(rules).actions.audit_log if rules is not None else None
        path = default_audit_path(configured, db)
    if path is None or not path.is_file():
        raise InputError("no audit log here: nothing has tripped (pass --audit-log or --db)", file=str(path))
    rec = reset_breaker(path, confirm=confirm, by=by, reason=reason)
    console.print(f"breaker reset: trip {rec['trip_id']} ({rec['mode']}) closed by {rec['by']} at {rec['time']}; "
                  f"audit log {path}", markup=False, highlight=False)
    return 0
