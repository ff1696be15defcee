"""suanli's own simulator (a second, independent source of telemetry): each hardware category is
found at the injected GPU and nowhere else; faults that are not hardware yield no hardware finding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from suanli.analysis.health import analyze

HW = {"gpu_memory_degradation", "gpu_memory_failure", "gpu_lost", "gpu_thermal", "pcie_riser",
      "nvlink_degradation"}


@pytest.mark.parametrize("scenario", ["gpu_memory_degradation", "gpu_memory_failure", "gpu_lost", "gpu_thermal",
                                      "pcie_riser", "nvlink_degradation", "gpu_straggler", "healthy",
                                      "mixed_port_thermal"])
def test_simulated_hardware_faults(scenario: str, tmp_path: Path) -> None:
    from suanli import sim
    from suanli.ingest import load as loader
    from suanli.inventory import loader as inv_loader
    from suanli.store import duck

    folder = sim.simulate(scenario, tmp_path / scenario, seed=101, nodes=8)
    truth = json.loads((folder / "truth.json").read_text())
    store = duck.DuckStore(None)
    loader.load_paths([folder], store)
    res = analyze(store, inv_loader.load_inventory(folder / "inventory.yaml"))
    want = {(f["category"], f["root_cause"]["id"]) for f in truth["faults"] if f["category"] in HW}
    assert {(f.category, f.entity_id) for f in res.findings} == want
