"""``suanli rules check`` (parse and validate a rule file) and ``suanli rules export`` (as a
Prometheus rule file or an Alertmanager config)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from suanli.cli.base import err, out, rules_app, run_verb
from suanli.errors import InputError
from suanli.rules.language import RuleSet

__all__ = ["actions_summary", "rules_check", "rules_check_cmd", "rules_export", "rules_export_cmd"]


@rules_app.command("export")
def rules_export(
    fmt: Annotated[str, typer.Option("--format", help="prometheus | alertmanager")],
    rules: Annotated[Path | None, typer.Option(help="Rule file (default: the shipped pack).")] = None,
) -> None:
    """Print the rules as a Prometheus rule file or an Alertmanager config (inhibitions)."""
    run_verb(lambda: rules_export_cmd(out, err, fmt, rules))


@rules_app.command("check")
def rules_check(
    rules: Annotated[Path | None, typer.Argument(help="Rule file (default: the shipped pack).")] = None,
) -> None:
    """Parse and validate a rule file."""
    run_verb(lambda: rules_check_cmd(out, rules))


def rules_export_cmd(console: Console, errors: Console, fmt: str, rules: Path | None) -> int:
    from suanli.rules import load_rules
    from suanli.rules.export import to_alertmanager, to_prometheus

    ruleset = load_rules(rules)
    if fmt == "prometheus":
        text, skipped = to_prometheus(ruleset)
    elif fmt == "alertmanager":
        text, skipped = to_alertmanager(ruleset)
    else:
        raise InputError(f"--format {fmt}: expected prometheus or alertmanager")
    print(text, end="" if text.endswith("\n") else "\n")
    for line in skipped:
        errors.print(f"note: {line}", markup=False, highlight=False)
    return 0


def rules_check_cmd(console: Console, rules: Path | None) -> int:
    from suanli.rules import load_rules

    ruleset = load_rules(rules)
    console.print(f"{len(ruleset.rules)} rules, {len(ruleset.inhibit_rules)} inhibit rules: ok")
    for line in actions_summary(ruleset):
        console.print(line, markup=False, highlight=False)
    return 0


def actions_summary(ruleset: RuleSet) -> list[str]:
    """What the file's actions would do, said plainly: the mode it asks for, which actions a live
    run would carry out (and with what), which would fail for want of an executor, and that
    ``diagnose`` forces a dry run whatever the file says."""
    cfg = ruleset.actions
    used = sorted({a.name for r in ruleset.rules for a in r.actions})
    lines = [f"actions: mode {cfg.mode} ("
             + {"dry_run": "the default: plan and audit, touch nothing",
                "shadow": "read the cluster and record what would be sent, send nothing",
                "live": "dry_run: false: carried out"}[cfg.mode] + ")"]
    if cfg.mode != "dry_run":
        runs = [f"{a} ({ruleset.executors[a].kind})" for a in used if a in ruleset.executors]
        missing = [a for a in used if a not in ruleset.executors]
        verb = "would run" if cfg.mode == "live" else "would be recorded"
        lines.append(f"  {verb} under `suanli serve`: {', '.join(runs) or 'none'}")
        if missing:
            lines.append(f"  no executor, so a live run would fail them: {', '.join(missing)}")
    lines.append("  `suanli diagnose` forces a dry run whatever this file says (it plans, never acts)")
    return lines
