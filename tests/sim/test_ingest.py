"""Every scenario the twin writes passes the project's own ingest with zero rejected records."""

from __future__ import annotations

from pathlib import Path

import pytest

from suanli.ingest.load import load_paths
from suanli.sim import list_scenarios, simulate
from suanli.store.duck import DuckStore


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n, _ in list_scenarios()])
def test_scenario_ingests_cleanly(name: str, tmp_path: Path) -> None:
    d = simulate(name, tmp_path / name, seed=11, nodes=4, minutes=4)
    report = load_paths([d], DuckStore(None))
    assert report.rejected == 0, report.reasons
    assert not report.unresolved
    assert report.loaded["samples"] > 0 and report.loaded["spans"] > 0
