"""The verbs of spec/cli.md, thin over the packages. Exit status: 0 done, 2 bad input or usage,
1 an internal error (traceback only under ``--debug``)."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from suanli.errors import InputError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="suanli: the compute actuary for GPU training clusters.")
rules_app = typer.Typer(no_args_is_help=True, help="Self-healing rules: check and export.")
app.add_typer(rules_app, name="rules")

PIPE_WIDTH = 200
"""Columns of the tables when stdout is not a terminal (a pipe, a file) and COLUMNS is unset: wide
enough that the ledger is not cut to ``lla…`` in a log file."""


def _out_width() -> int | None:
    if "COLUMNS" in os.environ or sys.stdout.isatty():
        return None
    return PIPE_WIDTH


out = Console(soft_wrap=True, width=_out_width())
err = Console(stderr=True, soft_wrap=True)
_state: dict[str, bool] = {"debug": False}

DEFAULT_DB = Path("suanli.duckdb")


@app.callback()
def _main(debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks of internal errors.")] = False
          ) -> None:
    _state["debug"] = debug
    if debug:
        import logging

        logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(name)s: %(message)s")


@contextmanager
def progress_bar(enabled: bool | None = None) -> Iterator[Callable[[str, int, int], None] | None]:
    """A ``progress(label, done, total)`` callback drawing a Rich bar on a terminal; None in a pipe."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    tasks: dict[str, Any] = {}
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=True) as bar:
        def update(label: str, done: int, total: int) -> None:
            if label not in tasks:
                tasks[label] = bar.add_task(label, total=max(total, 1))
            bar.update(tasks[label], completed=done, total=max(total, 1))

        yield update


def _run(fn: Callable[[], int | None]) -> None:
    """Run a verb body: InputError -> one line, exit 2; anything else -> exit 1."""
    try:
        code = fn() or 0
    except InputError as exc:
        err.print(f"error: {exc}", markup=False, highlight=False)
        raise typer.Exit(2) from None
    except (typer.Exit, typer.Abort):
        raise
    except KeyboardInterrupt:
        err.print("interrupted")
        raise typer.Exit(130) from None
    except BrokenPipeError:  # `suanli diagnose --json | head`: the reader left; stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise typer.Exit(1) from None
    except Exception as exc:
        if _state["debug"]:
            traceback.print_exc()
        err.print(f"internal error: {type(exc).__name__}: {exc} (run with --debug for a traceback)",
                  markup=False, highlight=False)
        raise typer.Exit(1) from None
    if code:
        raise typer.Exit(code)


# --------------------------------------------------------------------------------------- verbs

@app.command()
def simulate(
    scenario: Annotated[str | None, typer.Option(help="Scenario name (see --list).")] = None,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Folder to write the scenario into.")] = None,
    seed: Annotated[int, typer.Option(help="Random seed: the same seed writes the same bytes.")] = 0,
    nodes: Annotated[int | None, typer.Option(help="Cluster size in nodes (2..1280).")] = None,
    minutes: Annotated[float | None, typer.Option(help="Length of the window in minutes.")] = None,
    list_: Annotated[bool, typer.Option("--list", help="Name the scenarios and exit.")] = False,
) -> None:
    """Write a scenario folder (spec/telemetry.md) with truth.json."""
    from suanli.commands import simulate_cmd

    _run(lambda: simulate_cmd(out, scenario, out_dir, seed, nodes, minutes, list_))


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Scenario folders or files (inventory, metrics, traces, logs).")],
    db: Annotated[Path, typer.Option(help="DuckDB file to load into.")] = DEFAULT_DB,
) -> None:
    """Load inventory, metrics, traces and logs into the store, reporting counts and rejects."""
    from suanli.commands import ingest_cmd

    _run(lambda: ingest_cmd(out, paths, db))


@app.command()
def check(
    db: Annotated[Path, typer.Option(help="DuckDB file to check.")] = DEFAULT_DB,
    rules: Annotated[Path | None, typer.Option(help="Rule file (default: the shipped pack).")] = None,
) -> None:
    """Metadata consistency, unmapped series, id formats, rule coverage, maturity scores."""
    from suanli.commands import check_cmd

    _run(lambda: check_cmd(out, db, rules))


@app.command()
def diagnose(
    folder: Annotated[Path | None, typer.Argument(help="A scenario folder (else --db).")] = None,
    db: Annotated[Path | None, typer.Option(help="A DuckDB file written by `suanli ingest`.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON of spec/diagnosis.md.")] = False,
    start: Annotated[str | None, typer.Option(help="Window start (RFC 3339).")] = None,
    end: Annotated[str | None, typer.Option(help="Window end (RFC 3339).")] = None,
    rules: Annotated[Path | None, typer.Option(help="Rule file (default: the shipped pack).")] = None,
    heatmap: Annotated[Path | None, typer.Option(help="Also write the latency heatmap (.html or .png).")] = None,
    alerts: Annotated[Path | None, typer.Option(help="Alertmanager webhook payloads (JSON / JSON lines) to correlate.")] = None,
) -> None:
    """Run every analysis and print incidents, predictions and the efficiency ledger."""
    from suanli.commands import diagnose_cmd

    _run(lambda: diagnose_cmd(out, folder, db, as_json, start, end, rules, heatmap, alerts))


@app.command()
def rca(
    job: Annotated[str, typer.Option(help="Job id.")],
    start: Annotated[str, typer.Option(help="Window start (RFC 3339).")],
    end: Annotated[str, typer.Option(help="Window end (RFC 3339).")],
    out_file: Annotated[Path, typer.Option("--out", help="HTML file to write.")],
    sla_id: Annotated[str | None, typer.Option("--sla-id", help="SLA id (default: the job's).")] = None,
    db: Annotated[Path, typer.Option(help="DuckDB file.")] = DEFAULT_DB,
    folder: Annotated[Path | None, typer.Option("--dir", help="A scenario folder instead of --db.")] = None,
    pdf: Annotated[Path | None, typer.Option(help="Also print the report to this PDF (needs Chromium).")] = None,
) -> None:
    """Write the root-cause report for one job and window."""
    from suanli.commands import rca_cmd

    _run(lambda: rca_cmd(out, job, sla_id, start, end, out_file, db, folder, pdf))


@app.command()
def demo(
    out_dir: Annotated[Path, typer.Option("--out", help="Where the demo writes its data.")] = Path("demo-out"),
    seed: Annotated[int, typer.Option(help="Random seed.")] = 7,
) -> None:
    """Simulate a 16-node cluster with two jobs and two faults, ingest it, diagnose it."""
    from suanli.commands import demo_cmd

    _run(lambda: demo_cmd(out, out_dir, seed))


@app.command("gpu-override")
def gpu_override(
    gpu: Annotated[str, typer.Argument(help="Canonical GPU id, e.g. node-007/gpu3.")],
    state: Annotated[str, typer.Option(help="healthy | retired")],
    reason: Annotated[str, typer.Option(help="Why (kept in the audit log).")],
    who: Annotated[str, typer.Option(help="Operator name.")] = "operator",
    db: Annotated[Path, typer.Option(help="DuckDB file whose overrides log to use.")] = DEFAULT_DB,
) -> None:
    """Mark a GPU healthy again (or retired), with a reason; stored and audited."""
    from suanli.commands import override_cmd

    _run(lambda: override_cmd(out, gpu, state, reason, who, db))


@rules_app.command("export")
def rules_export(
    fmt: Annotated[str, typer.Option("--format", help="prometheus | alertmanager")],
    rules: Annotated[Path | None, typer.Option(help="Rule file (default: the shipped pack).")] = None,
) -> None:
    """Print the rules as a Prometheus rule file or an Alertmanager config (inhibitions)."""
    from suanli.commands import rules_export_cmd

    _run(lambda: rules_export_cmd(out, err, fmt, rules))


@rules_app.command("check")
def rules_check(
    rules: Annotated[Path | None, typer.Argument(help="Rule file (default: the shipped pack).")] = None,
) -> None:
    """Parse and validate a rule file."""
    from suanli.commands import rules_check_cmd

    _run(lambda: rules_check_cmd(out, rules))


def _usage_line(exc: Exception) -> str | None:
    """A usage error (unknown option, missing or bad value) as one line; None for anything else."""
    if getattr(exc, "exit_code", None) != 2 or not hasattr(exc, "format_message"):
        return None
    ctx = getattr(exc, "ctx", None)
    path = getattr(ctx, "command_path", None) or "suanli"
    return f"error: {path}: {exc.format_message()} (see `{path} --help`)"


def main() -> None:
    """The console script. Usage errors are one line on stderr and exit 2, like bad input."""
    try:
        code = app(standalone_mode=False)
    except typer.Abort:
        print("aborted", file=sys.stderr)
        sys.exit(1)
    except Exception as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `suanli` / `suanli rules`: the help
            text = exc.format_message()  # type: ignore[attr-defined]  # empty: Rich printed it
            if text:
                print(text, file=sys.stderr)
            sys.exit(2)
        line = _usage_line(exc)
        if line is None:
            raise
        print(line.replace("\n", " "), file=sys.stderr)
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
