"""Every output path alike: a missing parent directory is refused in one line (and never created),
the format comes from the suffix or the path is refused, before any data is read (issue 14)."""

from __future__ import annotations

from pathlib import Path

import pytest

from suanli.cli.paths import output_format
from suanli.errors import InputError
from tests.cli.helpers import assert_one_line_error, invoke
from tests.conftest import shared_path

FORMATS = {".html": "html", ".pdf": "pdf"}


def test_format_from_the_suffix(tmp_path: Path) -> None:
    assert output_format("--out", tmp_path / "r.HTML", FORMATS) == "html"
    assert output_format("--out", tmp_path / "r.pdf", FORMATS) == "pdf"
    assert output_format("--out", Path("r.html"), FORMATS) == "html"     # the working directory


@pytest.mark.parametrize(("name", "needle"), [("nonexistent/dir/r.html", "does not exist"),
                                              ("r.txt", "must end in one of .html, .pdf"),
                                              ("r", "must end in one of")])
def test_refused_in_one_line(tmp_path: Path, name: str, needle: str) -> None:
    with pytest.raises(InputError, match=needle):
        output_format("--out", tmp_path / name, FORMATS)
    assert not (tmp_path / "nonexistent").exists()


def test_rca_refuses_before_reading_and_creates_nothing(tmp_path: Path) -> None:
    folder = shared_path("scenarios", "pcie_riser")
    target = tmp_path / "nonexistent" / "dir" / "r.html"
    res = invoke("rca", "--dir", folder, "--job", "x", "--start", "2026-01-01T00:00:00Z",
                 "--end", "2026-01-01T01:00:00Z", "--out", target)
    assert_one_line_error(res.exit_code, res.stderr, "--out", "does not exist")
    assert not (tmp_path / "nonexistent").exists()
    res = invoke("rca", "--dir", folder, "--job", "x", "--start", "2026-01-01T00:00:00Z",
                 "--end", "2026-01-01T01:00:00Z", "--out", tmp_path / "r.docx")
    assert_one_line_error(res.exit_code, res.stderr, "--out", ".html", ".pdf")


def test_diagnose_heatmap_suffix_is_checked_first(tmp_path: Path) -> None:
    res = invoke("diagnose", shared_path("scenarios", "healthy"), "--heatmap", tmp_path / "h.svg")
    assert_one_line_error(res.exit_code, res.stderr, "--heatmap", ".png")
