"""``suanli profile TRACE... [--json]``: the time split of PyTorch profiler (Kineto) traces per rank
(compute, communication, exposed communication, idle), with Holistic Trace Analysis' semantics
(docs/profile.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from suanli.cli.base import app, err, out, run_verb

__all__ = ["profile", "profile_cmd"]


@app.command()
def profile(
    traces: Annotated[list[Path], typer.Argument(help="Kineto trace files (*.pt.trace.json[.gz]) or folders of them.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON of docs/profile.md.")] = False,
) -> None:
    """Per rank: compute, communication, exposed communication and idle, as fractions of each trace's span."""
    run_verb(lambda: profile_cmd(out, traces, as_json))


def profile_cmd(console: Console, traces: list[Path], as_json: bool) -> int:
    from suanli.analysis.profile import format_profile_table, profile_json, profile_traces

    result = profile_traces(traces)
    if as_json:
        print(json.dumps(profile_json(result), indent=2))
    else:
        console.print(format_profile_table(result), markup=False, highlight=False, emoji=False)
        for rank in result.ranks:
            for line in rank.problems:
                err.print(f"note: {line}", markup=False, highlight=False, emoji=False)
    for line in result.errors:
        err.print(f"skipped: {line}", markup=False, highlight=False, emoji=False)
    return 0
