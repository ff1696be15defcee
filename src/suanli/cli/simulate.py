"""``suanli simulate``: write a scenario folder (spec/telemetry.md) with truth.json."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from suanli.cli.base import app, out, progress_bar, run_verb
from suanli.errors import InputError
from suanli.report.tables import scenarios_table
from suanli.sim import MAX_NODES, MIN_NODES

__all__ = ["simulate", "simulate_cmd"]


@app.command()
def simulate(
    scenario: Annotated[str | None, typer.Option(help="Scenario name (see --list).")] = None,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Folder to write the scenario into.")] = None,
    seed: Annotated[int, typer.Option(help="Random seed: the same seed writes the same bytes.")] = 0,
    nodes: Annotated[int | None, typer.Option(help=f"Cluster size in nodes ({MIN_NODES}..{MAX_NODES}).")] = None,
    minutes: Annotated[float | None, typer.Option(help="Length of the window in minutes.")] = None,
    list_: Annotated[bool, typer.Option("--list", help="Name the scenarios and exit.")] = False,
) -> None:
    """Write a scenario folder (spec/telemetry.md) with truth.json."""
    run_verb(lambda: simulate_cmd(out, scenario, out_dir, seed, nodes, minutes, list_))


def simulate_cmd(console: Console, scenario: str | None, out_dir: Path | None, seed: int,
                 nodes: int | None, minutes: float | None, list_: bool) -> int:
    from suanli.sim import list_scenarios
    from suanli.sim import simulate as write_scenario

    if list_:
        console.print(scenarios_table(list_scenarios()))
        return 0
    if not scenario or out_dir is None:
        raise InputError("simulate needs --scenario NAME and --out DIR (or --list)")
    if nodes is not None and not MIN_NODES <= nodes <= MAX_NODES:
        raise InputError(f"--nodes {nodes}: expected {MIN_NODES}..{MAX_NODES}")
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError("--out: is a file, expected a folder", file=str(out_dir))
    with progress_bar() as progress:
        path = write_scenario(scenario, out_dir, seed=seed, nodes=nodes, minutes=minutes, progress=progress)
    console.print(f"wrote scenario {scenario!r} (seed {seed}) to {path}")
    return 0
