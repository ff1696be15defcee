"""A simulated NVSwitch chip failure is diagnosed at that chip, and the NVLink errors, slow ranks
and lower bandwidth of the GPUs behind it raise no incident of their own (they are its symptoms)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from suanli.pipeline import diagnose_folder
from suanli.report import diagnosis_json
from suanli.sim import simulate_custom
from suanli.sim.sweep import sweep_runs


@pytest.mark.parametrize("seed,nodes", [(1, 8), (2, 16)])
def test_a_failing_nvswitch_is_one_incident_at_the_chip(seed: int, nodes: int, tmp_path: Path) -> None:
    (run,) = [r for r in sweep_runs((seed,), (nodes,), 15.0) if r.scenario.name == "nvswitch_fault"]
    d = simulate_custom(run.scenario, tmp_path / "s", seed=seed, nodes=nodes, minutes=15.0, nuisances=run.nuisances)
    (fault,) = json.loads((d / "truth.json").read_text())["faults"]
    got = diagnosis_json(diagnose_folder(d))
    assert got["analysis_errors"] == []
    (inc,) = got["incidents"]
    assert (inc["category"], inc["root_cause"]["kind"], inc["root_cause"]["id"]) == (
        "nvswitch_fault", "nvswitch", fault["root_cause"]["id"])
    node = fault["root_cause"]["id"].split("/")[0]
    # the Xid 74 the GPUs behind the chip logged is evidence of this incident, and only they are named
    named = {m for e in inc["evidence"] for m in re.findall(r"node-\d+/gpu\d", e)}
    assert any("Xid 74" in e for e in inc["evidence"])
    assert named and named <= {f"{node}/gpu{g}" for g in range(8)}
