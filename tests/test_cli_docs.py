"""Every verb and every option of the CLI is documented in docs/cli.md (datasette's rule)."""

from __future__ import annotations

import re
from pathlib import Path

import typer.main

from suanli.cli import app

DOC = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()


def _commands() -> dict[str, object]:
    group = typer.main.get_command(app)
    out: dict[str, object] = {}
    for name, cmd in group.commands.items():  # type: ignore[attr-defined]
        sub = getattr(cmd, "commands", None)
        if sub:
            out.update({f"{name} {n}": c for n, c in sub.items()})
        else:
            out[name] = cmd
    return out


def test_every_verb_and_option_is_documented() -> None:
    missing = []
    for verb, cmd in _commands().items():
        if f"suanli {verb}" not in DOC:
            missing.append(f"verb {verb}")
        for param in cmd.params:  # type: ignore[attr-defined]
            for opt in getattr(param, "opts", []):
                if opt.startswith("--") and opt != "--help" and not re.search(re.escape(opt) + r"\b", DOC):
                    missing.append(f"{verb} {opt}")
    assert missing == []
