"""The incremental pipeline fed step by step over public scenarios: each step's pass is exactly a
batch run over that step's window (the evaluator's carried state and the batch evaluation agree),
every incident of the whole-window batch run is opened, and none that is still broken resolves."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from suanli.config import Config, LiveConfig
from suanli.incidents.model import Incident
from suanli.pipeline import Pipeline, diagnose, open_folder, stored_inventory
from tests.conftest import shared_path

STEP_S = 180.0


def _seen(incidents: list[Incident]) -> list[tuple[str, str, int]]:
    return sorted((i.category, i.root_id, i.alert_count) for i in incidents)


def _steps(lo: float, hi: float) -> list[float]:
    return [*np.arange(lo + STEP_S, hi, STEP_S).tolist(), hi]


def _assert_still_broken_stay_open(live: Pipeline, final: list[Incident]) -> None:
    tracked = {(i.category, i.root_id): i for i in live.incidents()}
    for inc in final:
        assert inc.end is None
        mine = tracked[(inc.category, inc.root_id)]
        assert mine.state == "open", (inc.category, inc.root_id)
        assert "resolved" not in [what for _, what in live.tracker.history(inc.root_id)]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["pcie_riser", "storage_slow"])
def test_each_step_is_a_batch_run_over_its_window(name: str) -> None:
    store = open_folder(Path(shared_path("scenarios", name)))
    try:
        inv = stored_inventory(store)
        extent = store.time_range()
        assert extent is not None
        live = Pipeline(store, inv)
        for now in _steps(*extent):
            step = live.step(now)
            assert step.diagnosis.window == (extent[0], now)          # the window grows from the data's start
            assert _seen(step.diagnosis.incidents) == _seen(diagnose(store, inv, step.diagnosis.window).incidents)
        final = diagnose(store, inv).incidents
        assert {(i.category, i.root_id) for i in final} <= {(i.category, i.root_id) for i in live.incidents()}
        _assert_still_broken_stay_open(live, final)
    finally:
        store.close()


@pytest.mark.slow
def test_a_sliding_window_keeps_the_riser_open() -> None:
    # a 10-minute window over the 15.6-minute pcie_riser scenario (the fault starts at minute 5.8)
    store = open_folder(Path(shared_path("scenarios", "pcie_riser")))
    try:
        inv = stored_inventory(store)
        extent = store.time_range()
        assert extent is not None
        live = Pipeline(store, inv, Config(live=LiveConfig(window_s=600.0)))
        for now in _steps(*extent):
            step = live.step(now)
            assert step.diagnosis.window.length_s == min(600.0, now - extent[0])
        riser = [i for i in diagnose(store, inv).incidents if i.category == "pcie_riser"]
        assert [(i.category, i.root_id) for i in riser] == [("pcie_riser", "node-002/gpu5")]
        _assert_still_broken_stay_open(live, riser)
    finally:
        store.close()


@pytest.mark.slow
def test_a_live_step_prices_the_incident_and_writes_its_history(tmp_path: Path) -> None:
    # the live loop is where history accrues (serve's store is read-write; diagnose --db only reads):
    # one step at the data's end on pcie_riser prices the riser incident and records it once, and a
    # second step at the same time records nothing new
    from suanli.pipeline.stages import history_connection
    from suanli.store.history import load_history

    store = open_folder(Path(shared_path("scenarios", "pcie_riser")))
    try:
        extent = store.time_range()
        assert extent is not None
        live = Pipeline(store, stored_inventory(store))
        step = live.step(extent[1])
        (inc,) = step.diagnosis.incidents
        assert (inc.category, inc.root_id) == ("pcie_riser", "node-002/gpu5")
        assert inc.id in step.diagnosis.decided and step.diagnosis.currency
        db = history_connection(store)
        assert db is not None
        con = db[0]
        past = load_history(con, extent[0] - 1)
        assert [(r.incident_id, r.category, r.entity_id) for r in past.incidents] == \
            [(inc.id, "pcie_riser", "node-002/gpu5")]
        live.step(extent[1])
        assert len(load_history(con, extent[0] - 1).incidents) == 1
    finally:
        store.close()
