"""The RCA data of a public scenario's faulty job, as every report test builds it."""

from __future__ import annotations

import json

from suanli.cli.diagnose import open_diagnosis
from suanli.inventory import Inventory
from suanli.pipeline.model import Diagnosis
from suanli.pipeline.rca import RcaData, rca_data
from tests.conftest import shared_path


def scenario_rca(scenario: str) -> tuple[RcaData, Diagnosis, Inventory]:
    """Diagnose ``../shared/scenarios/<scenario>`` and read the report data of its first fault's job."""
    folder = shared_path("scenarios", scenario)
    job = json.loads((folder / "truth.json").read_text())["faults"][0]["jobs"][0]
    diag, store, inv = open_diagnosis(folder, None, None, None, None)
    try:
        return rca_data(diag, store, inv, job, None), diag, inv
    finally:
        store.close()
