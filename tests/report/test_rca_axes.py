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

from suanli.pipeline.rca import Line, normal_band, sla_threshold
from suanli.report.rca import render_rca
from suanli.report.rca_axes import axis_of, fault_marks, is_all_zero, steady_range, time_axis, y_axis
from suanli.rules.language import load_rules
from tests.report.rca_cases import scenario_rca


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


def test_normal_band_is_the_spread_before_the_fault() -> None:
    ts = np.arange(10.0)
    line = Line("x", ts, np.arange(10.0))              # 0, 1, .., 9; the fault at t=5
    assert normal_band((line,), 5.0) == pytest.approx((0.2, 3.8))   # 5th/95th pct of 0..4
    assert normal_band((line,), 4.0) is None           # 4 samples before: too few for a band
    gappy = Line("y", ts, np.where(ts % 2 == 0, np.nan, ts))        # NaNs are not samples
    assert normal_band((line, gappy), 5.0) == pytest.approx(tuple(np.percentile([0, 1, 2, 3, 4, 1, 3], [5, 95])))


def test_noise_is_not_magnified() -> None:
    # 65.0..65.4 °C: the span is widened to 10 % of the level (6.54), around the middle, plus 5 % pad
    lo, hi = steady_range([np.array([65.0, 65.4, 65.2])], (65.05, 65.35), rate=False)
    assert (lo, hi) == pytest.approx((65.2 - 3.27 - 0.327, 65.2 + 3.27 + 0.327))
    # a rate starts at 0 (no pad below 0) and keeps its real spread: 0..10 with 5 % above
    assert steady_range([np.array([0.0, 2.0, 10.0])], (0.0, 1.0), rate=True) == pytest.approx([0.0, 10.5])
    assert steady_range([np.array([5.0, 5.1])], None, rate=True) == pytest.approx([0.0, 5.1 + 0.255])
    # the band widens the range when the data stay inside a narrower strip
    assert steady_range([np.array([100.0])], (90.0, 110.0), rate=False) == pytest.approx([89.0, 111.0])
    assert steady_range([np.array([np.nan])], None, rate=False) is None


def test_time_axis_is_fixed_to_the_window() -> None:
    ax = time_axis((1773769501.0, 1773770401.0))
    assert ax["range"] == ["2026-03-17T17:45:01", "2026-03-17T18:00:01"] and ax["title"] == "time (UTC)"


def test_sla_threshold_is_the_rule_packs() -> None:
    # default_rules.yaml: sla_latency_high is `sla_latency > 30 for 5m`
    assert sla_threshold(load_rules(None)) == 30.0


@pytest.fixture(scope="module")
def riser_page() -> str:
    return render_rca(scenario_rca("pcie_riser")[0])


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
        assert [a["text"] for a in layout["annotations"]][-2:] == ["fault start", "detected"], div
        assert "DCGM" not in layout["yaxis"]["title"]["text"] and "(" in layout["yaxis"]["title"]["text"], div
    # the framework plots share the hardware's clock axis, fixed to the window, so they line up
    ranges = {div: plots[div][1]["xaxis"]["range"] for div in (*timed, "phases", "ranks")}
    assert len({tuple(r) for r in ranges.values()}) == 1, ranges
    for div in ("phases", "ranks"):
        marks = plots[div][1]["annotations"]
        assert [a["text"] for a in marks] == ["fault start", "detected"], div
        assert all(re.fullmatch(r"2026-03-17T\d\d:\d\d:\d\d", a["x"]) for a in marks)
        assert plots[div][1]["legend"]["orientation"] == "h" or div == "ranks"
    # the riser's temperature has a normal band drawn under it, from its samples before the fault
    temp = next(v for k, v in timed.items() if "temperature" in v[1]["title"]["text"])
    assert any(s["type"] == "rect" for s in temp[1]["shapes"])
    data, layout = plots["business"]
    assert any(t["name"] == "SLA threshold 30 s" and t["y"] == [30, 30] for t in data)
    # the riser scenario injects no ECC errors: the SBE counter never moves
    assert "node-002/gpu5: single-bit ECC errors: 0 in window" in riser_page
    assert riser_page.count("<script>") - riser_page.count("Plotly.newPlot") == 1    # one copy of Plotly
