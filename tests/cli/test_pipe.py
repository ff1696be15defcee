"""In a pipe: no progress bar, no escape codes, tables wide enough to read, usage errors on one line,
a reader that leaves early (`| head`) is no error report."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from suanli.cli import main
from tests.cli.helpers import (
    ENV,
    T0,
    assert_one_line_error,
    make_folder,
    otlp_line,
    run,
    suanli_argv,
    temp_line,
)

ESC = "\x1b"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pipe")
    traces = "\n".join(otlp_line(rank, step, T0 + 10 * step) for step in range(3) for rank in range(2)) + "\n"
    metrics = "\n".join([temp_line(str(50 + i), T0 + 15 * i) for i in range(3)] + ["# EOF", ""])
    return make_folder(root, "small", files={"traces.otlp.jsonl": traces, "metrics.om": metrics})


@pytest.mark.slow  # three console-script runs, ~2 s each on 2 cores
def test_ingest_and_diagnose_are_quiet_in_a_pipe(folder: Path, tmp_path: Path) -> None:
    db = tmp_path / "x.duckdb"
    runs: list[list[str | Path]] = [["ingest", folder, "--db", db], ["diagnose", "--db", db, "--json"],
                                    ["diagnose", "--db", db]]
    text = ""
    for args in runs:
        proc = run(*args)
        assert proc.returncode == 0, (args, proc.stderr)
        assert ESC not in proc.stdout and ESC not in proc.stderr, args
        assert proc.stderr == "", (args, proc.stderr)  # no progress bar, no redrawn line
        text = proc.stdout
    # Rich defaults to 80 columns off a terminal; the ledger would then show "tin…" for the job id
    ledger = text[text.index("efficiency ledger"):]
    assert "tiny-job" in ledger
    assert "…" not in ledger


USAGE_ERRORS = [
    (["diagnose", "--bogus"], ("--bogus",)),
    (["rca", "--job", "x"], ("Missing option", "--start")),
    (["simulate", "--nodes", "abc"], ("--nodes",)),
    (["nosuchverb"], ("nosuchverb",)),
    (["rules", "export"], ("--format",)),
]


@pytest.mark.parametrize(("args", "needles"), USAGE_ERRORS)
def test_usage_errors_are_one_line(args: list[str], needles: tuple[str, ...], monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "argv", ["suanli", *args])
    with pytest.raises(SystemExit) as exc:
        main()
    out, err = capsys.readouterr()
    assert isinstance(exc.value.code, int)
    assert_one_line_error(exc.value.code, err, *needles)
    assert out == ""


def test_usage_error_of_the_console_script() -> None:
    proc = run("diagnose", "--bogus")
    assert_one_line_error(proc.returncode, proc.stderr, "--bogus", "suanli diagnose --help")
    assert proc.stdout == ""


def test_reader_leaving_early_is_not_an_internal_error() -> None:
    # `suanli rules export ... | true`: the reader is gone before suanli writes
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    try:
        proc = subprocess.run([*suanli_argv(), "rules", "export", "--format", "alertmanager"], stdout=write_fd,
                              stderr=subprocess.PIPE, text=True, timeout=60, env=ENV, check=False)
    finally:
        os.close(write_fd)
    assert proc.returncode == 1
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert "BrokenPipe" not in proc.stderr
