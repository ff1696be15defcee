"""Help reads like any Unix tool's: metavars PATH / TEXT / INTEGER, arguments in capitals, no Python
types (typer's ``<bool>``, ``<list[Path]>``, ``{paths}...``; issue 14)."""

from __future__ import annotations

import re
import sys

import pytest
import typer

from suanli.cli import app, main

VERBS = sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


@pytest.mark.parametrize("verb", VERBS)
def test_help_names_no_python_types(verb: str, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setattr(sys, "argv", ["suanli", verb, "-h"])
    with pytest.raises(SystemExit) as exc:
        main()
    text = capsys.readouterr().out
    assert exc.value.code == 0 and f"Usage: suanli {verb}" in text
    assert not re.search(r"<[a-z]|\{[a-z]|list\[", text), text


def test_ingest_help_reads_like_click(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setattr(sys, "argv", ["suanli", "ingest", "--help"])
    with pytest.raises(SystemExit):
        main()
    text = capsys.readouterr().out
    assert "Usage: suanli ingest [OPTIONS] PATHS..." in text
    assert re.search(r"--db PATH\s+DuckDB file", text)
