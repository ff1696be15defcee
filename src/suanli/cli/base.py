"""What every verb shares: the Typer apps, the consoles, the progress bar, and ``run_verb`` (bad
input -> one line, exit 2; an internal error -> one line, exit 1, traceback only under ``--debug``)."""

from __future__ import annotations

__all__ = ["DEFAULT_DB", "app", "err", "main", "out", "progress_bar", "rules_app", "run_verb"]

import functools
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from typer.core import TyperArgument, TyperOption

from suanli.cli.hugepages import avoid_hugepage_faults
from suanli.cli.malloc import hold_freed_memory
from suanli.errors import InputError

# rich_markup_mode=None: click's plain help ("--db PATH", "PATHS..."), not typer's rich panels that
# print Python types ("<bool>", "<list[Path]>", "{paths}...") and read help text as markup.
app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="suanli: the compute actuary for GPU training clusters.")
rules_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Self-healing rules: check and export.")
app.add_typer(rules_app, name="rules")

PIPE_WIDTH = 200
"""Columns of the tables when stdout is not a terminal (a pipe, a file) and COLUMNS is unset: wide
enough that the ledger is not cut to ``lla…`` in a log file."""


def _out_width() -> int | None:
    if "COLUMNS" in os.environ or sys.stdout.isatty():
        return None
    return PIPE_WIDTH


# markup=False, emoji=False: text from telemetry is printed as typed: "[red]" in a label is not a
# colour, ":AB:" in a PCI bus id and ":fire:" in a label are not emoji. (No output uses markup.)
out = Console(soft_wrap=True, width=_out_width(), markup=False, emoji=False)
err = Console(stderr=True, soft_wrap=True, markup=False, emoji=False)
_state: dict[str, bool] = {"debug": False}

DEFAULT_DB = Path("suanli.duckdb")


def _version(value: bool) -> None:
    if value:
        from suanli import __version__

        print(f"suanli {__version__}")
        raise typer.Exit(0)


@app.callback(context_settings={"help_option_names": ["-h", "--help"]})
def _main(debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks of internal errors.")] = False,
          version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print the version and exit.")] = False) -> None:
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

    # One bar for the whole load: ``done`` of ``total`` files, the file being read as its label
    # (a bar per file would show the overall count on each and never reach 100 %).
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=True) as bar:
        task = bar.add_task("reading", total=1)

        def update(label: str, done: int, total: int) -> None:
            bar.update(task, description=label, completed=done, total=max(total, 1))

        yield update


def run_verb(fn: Callable[[], int | None]) -> None:
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


def _usage_line(exc: Exception) -> str | None:
    """A usage error (unknown option, missing or bad value) as one line; None for anything else."""
    if getattr(exc, "exit_code", None) != 2 or not hasattr(exc, "format_message"):
        return None
    ctx = getattr(exc, "ctx", None)
    path = getattr(ctx, "command_path", None) or "suanli"
    return f"error: {path}: {exc.format_message()} (see `{path} --help`)"


def _no_type(ctx: Any) -> None:
    return None


def _metavar(param: Any) -> str:
    desc = param.type_descriptor
    if desc.is_choice:
        return "[" + "|".join(str(c) for c in desc.choices or ()) + "]"
    if desc.is_path:
        return "PATH"
    names = {int: "INTEGER", float: "NUMBER", bool: "BOOLEAN"}
    return next((v for t, v in names.items() if desc.annotation is t), "TEXT")


def plain_help(cmd: Any) -> Any:
    """Help that reads like any Unix tool's (``--db FILE``-style ``PATH``/``TEXT``, ``PATHS...``),
    not Python types (typer prints ``<bool>``, ``<list[Path]>`` and ``{paths}...``)."""
    for param in cmd.params:
        if isinstance(param, TyperArgument):
            name = (param.metavar or param.name or "arg").upper()
            shown = name + ("..." if param.nargs != 1 else "")
            shown = shown if param.required else f"[{shown}]"
            param.metavar = name
            param.display_type_rich = _no_type  # type: ignore[method-assign]
            param._usage_display_name = functools.partial(str, shown)  # type: ignore[method-assign]
        elif isinstance(param, TyperOption) and not param.is_flag and param.metavar is None:
            param.metavar = _metavar(param)
    for sub in getattr(cmd, "commands", {}).values():
        plain_help(sub)
    return cmd


def main() -> None:
    """The console script. Usage errors are one line on stderr and exit 2, like bad input."""
    avoid_hugepage_faults()
    hold_freed_memory()
    try:
        code = plain_help(typer.main.get_command(app))(standalone_mode=False)
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
