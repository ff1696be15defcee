"""`suanli profile` and `suanli --version` through the real console script (spec/cli.md)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from tests.cli.helpers import run
from tests.conftest import shared_path

ROOT = Path(__file__).resolve().parents[2]


def test_version_prints_the_package_version() -> None:
    want = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    proc = run("--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"suanli {want}"


def test_profile_json_gives_hta_fractions() -> None:
    """Holistic Trace Analysis 0.5.0 on this trace (rank 3 of 8), run once by hand and in
    tests/analysis/test_profile_hta.py: idle 16.20 %, compute 61.23 %, non-compute 22.57 %, and
    47.03 % of communication hidden under compute."""
    trace = shared_path("realdata", "third-party", "kineto", "hta__trace_diff_control_control.json.gz")
    proc = run("profile", "--json", trace)
    assert proc.returncode == 0, proc.stderr
    (rank,) = json.loads(proc.stdout)["ranks"]
    f = rank["fractions"]
    assert rank["rank"] == 3 and rank["world_size"] == 8
    assert abs(f["idle"] - 0.1620) < 0.0005
    assert abs(f["compute"] - 0.6123) < 0.0005
    assert abs(f["non_compute"] - 0.2257) < 0.0005
    assert abs(rank["comm_overlap"] - 0.4703) < 0.0005
    assert abs(f["compute"] + f["exposed_communication"] + f["other"] + f["idle"] - 1.0) < 1e-9


def test_profile_of_a_file_that_is_not_a_trace_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "x.pt.trace.json"
    bad.write_text("not json\n")
    proc = run("profile", bad)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and str(bad) in proc.stderr
