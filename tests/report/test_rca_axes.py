"""The RCA report's time plots as a person reads them (issue 14): quantities and units on the
y-axes (not DCGM field names), GB/s and ms scales, BER on a log axis, an all-zero counter as
"0 in window", the fault's start and detection on every time plot, times in UTC, and the SLA plot
with its rule's threshold."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pytest

from suanli.cli.diagnose import open_diagnosis
from suanli.pipeline.rca import rca_data, sla_threshold
from suanli.report.rca import render_rca
from suanli.report.rca_axes import axis_of, fault_marks, is_all_zero, step_at, y_axis
from suanli.rules.language import load_rules
from tests.conftest import shared_path


def test_axes_name_the_quantity_and_its_unit() -> None:
    nv = axis_of("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", False)
    assert (y_axis(nv)["title"], nv.scale) == ("NVLink bandwidth (GB/s)", 1e-9)     # 5e10 B/s reads 50 GB/s
    assert y_axis(axis_of("DCGM_FI_DEV_GPU_TEMP", False))["title"] == "GPU temperature (°C)"
    assert axis_of("suanli_storage_read_latency_seconds", False).scale == 1e3      # ms
    ber = y_axis(axis_of("suanli_port_pre_fec_ber", False))
    assert ber["type"] == "log" and ber["exponentformat"] == "power"               # 10^-9, not 1n
    assert "DCGM" not in json.dumps([y_axis(axis_of(m, False)) for m in ("DCGM_FI_DEV_SM_CLOCK",
                                                                        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER")])


def test_all_zero_counter() -> None:
    assert is_all_zero([np.array([0.0, np.nan, 0.0]), np.zeros(3)])
    assert not is_all_zero([np.array([0.0, 0.2])])
    assert not is_all_zero([np.array([np.nan])])          # no samples is not "0 in window"


def test_fault_marks_are_vertical_lines_at_start_and_detection() -> None:
    m = fault_marks(1773769501.0, 1773769650.0)           # 2026-03-17T17:45:01Z, 17:47:30Z
    assert [(s["x0"], s["x1"], s["yref"]) for s in m["shapes"]] == [
        ("2026-03-17T17:45:01", "2026-03-17T17:45:01", "paper"), ("2026-03-17T17:47:30", "2026-03-17T17:47:30", "paper")]
    assert [a["text"] for a in m["annotations"]] == ["fault start", "detected"]
    assert fault_marks(None, None) == {"shapes": [], "annotations": []}


def test_step_at_maps_a_clock_time_onto_the_step_axis() -> None:
    steps, begun = np.array([10, 11, 12]), np.array([100.0, 110.0, 125.0])
    assert step_at(steps, begun, 99.0) is None            # before the first step
    assert step_at(steps, begun, 110.0) == 11.0           # step 11 began at 110 s
    assert step_at(steps, begun, 124.9) == 11.0
    assert step_at(steps, begun, 500.0) == 12.0
    m = fault_marks(11.0, None, on_clock=False)
    assert [s["x0"] for s in m["shapes"]] == [11.0]


def test_sla_threshold_is_the_rule_packs() -> None:
    # default_rules.yaml: sla_latency_high is `sla_latency > 30 for 5m`
    assert sla_threshold(load_rules(None)) == 30.0


@pytest.fixture(scope="module")
def riser_page() -> str:
    folder = shared_path("scenarios", "pcie_riser")
    job = json.loads((folder / "truth.json").read_text())["faults"][0]["jobs"][0]
    diag, store, inv = open_diagnosis(folder, None, None, None, None)
    try:
        return render_rca(rca_data(diag, store, inv, job, None))
    finally:
        store.close()


def _plots(page: str) -> dict[str, tuple[list[Any], dict[str, Any]]]:
    """Each ``Plotly.newPlot(div, data, layout, config)`` call's data and layout, decoded."""
    dec, out = json.JSONDecoder(), {}
    for m in re.finditer(r'Plotly\.newPlot\("(\w+)", ', page):
        data, end = dec.raw_decode(page, m.end())
        layout, _ = dec.raw_decode(page, end + 2)
        out[m.group(1)] = (data, layout)
    return out


def test_riser_report_time_plots(riser_page: str) -> None:
    plots = _plots(riser_page)
    timed = {k: v for k, v in plots.items() if k == "business" or k.startswith("hw")}
    assert "business" in timed and len(timed) >= 4
    for div, (_, layout) in timed.items():
        assert layout["xaxis"]["title"]["text"] == "time (UTC)", div
        assert [a["text"] for a in layout["annotations"]] == ["fault start", "detected"], div
        assert "DCGM" not in layout["yaxis"]["title"]["text"] and "(" in layout["yaxis"]["title"]["text"], div
    for div in ("phases", "ranks"):               # the step plots carry the same marks, on steps
        marks = plots[div][1]["annotations"]
        assert [a["text"] for a in marks] == ["fault start", "detected"], div
        assert all(isinstance(a["x"], float) for a in marks)
    data, layout = plots["business"]
    assert any(t["name"] == "SLA threshold 30 s" and t["y"] == [30, 30] for t in data)
    # the riser scenario injects no ECC errors: the SBE counter never moves
    assert "node-002/gpu5: single-bit ECC errors: 0 in window" in riser_page
    assert riser_page.count("<script>") - riser_page.count("Plotly.newPlot") == 1    # one copy of Plotly
