"""The public scenarios written by an independent simulator, through the real loader and store."""

from __future__ import annotations

import json

import pytest

from suanli.analysis.health import analyze
from tests.conftest import shared_path

HW = {"gpu_memory_degradation", "gpu_memory_failure", "gpu_lost", "gpu_thermal", "pcie_riser",
      "nvlink_degradation"}


def _run(name: str):  # type: ignore[no-untyped-def]
    folder = shared_path("scenarios", name)
    from suanli.ingest import load as loader
    from suanli.inventory import loader as inv_loader
    from suanli.store import duck as store_mod

    store = store_mod.DuckStore(None)
    loader.load_paths([folder], store)
    truth = json.loads((folder / "truth.json").read_text())
    return analyze(store, inv_loader.load_inventory(folder / "inventory.yaml")), truth


@pytest.mark.slow
def test_pcie_riser_scenario() -> None:
    res, truth = _run("pcie_riser")
    fault = truth["faults"][0]
    got = [(f.category, f.entity_id) for f in res.findings]
    assert got == [(fault["category"], fault["root_cause"]["id"])]
    f = res.findings[0]
    from suanli.timefmt import parse_time
    # onset within two scrapes (30 s) of the injected start
    assert abs(f.start - parse_time(fault["start"])) <= 30.0
    assert any("temperature" in e for e in f.evidence)      # it is hot too, and that is evidence


@pytest.mark.parametrize("name", ["healthy", "switch_port_errors"])
def test_no_hardware_finding(name: str) -> None:
    res, _ = _run(name)
    assert [f for f in res.findings if f.category in HW] == []
    assert all(p["recommendation"] == "ok" for p in res.predictions_json())
