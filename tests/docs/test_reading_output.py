"""docs/reading-the-output.md shows what suanli really prints (issue 14, "docs/ show the new terminal
output"): each block marked ``<!-- COLUMNS=N suanli diagnose FOLDER -->`` is that command's output,
run now at that width; a change to the terminal report must come with the page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.cli.helpers import ENV, run
from tests.conftest import shared_path

DOC = Path(__file__).resolve().parents[2] / "docs" / "reading-the-output.md"
_BLOCK = re.compile(r"<!-- COLUMNS=(\d+) suanli diagnose \.\./shared/scenarios/(\w+)"
                    r"(?: \(from \"([^\"]+)\"\))? -->\n```text\n(.*?)\n```", re.S)


def _blocks() -> list[tuple[int, str, str | None, str]]:
    return [(int(w), s, start, text) for w, s, start, text in _BLOCK.findall(DOC.read_text(encoding="utf-8"))]


def test_the_page_has_both_widths() -> None:
    assert sorted(w for w, *_ in _blocks()) == [80, 160]
    assert (DOC.parent / "img" / "rca-switch_port_errors.png").stat().st_size > 50_000


@pytest.mark.slow
@pytest.mark.parametrize(("width", "scenario", "start", "text"), _blocks())
def test_block_is_what_diagnose_prints(width: int, scenario: str, start: str | None, text: str) -> None:
    res = run("diagnose", shared_path("scenarios", scenario), env=ENV | {"COLUMNS": str(width)})
    assert res.returncode == 0, res.stderr
    out = res.stdout.rstrip("\n")
    if start is not None:
        out = out[out.index(start):]
    assert out == text
