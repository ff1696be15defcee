"""One plotly.js for every page, the cartesian partial bundle (issue 14, "Size"): the report stays
self-contained at a third of the 4.9 MB it weighed with the full bundle inlined."""

from __future__ import annotations

import re

import pytest
from plotly.offline import get_plotlyjs, get_plotlyjs_version

from suanli.report.plotly_bundle import PLOTLY_JS_VERSION, plotly_js, plotly_js_path
from suanli.report.rca import render_rca
from tests.report.rca_cases import scenario_rca

_TRACES = re.compile(r'moduleType:"trace",name:"(\w+)"')


def test_bundle_is_the_cartesian_build_of_the_pinned_version() -> None:
    head = plotly_js()[:200]
    assert f"plotly.js (cartesian - minified) v{PLOTLY_JS_VERSION}" in head
    # plotly.py writes the figure JSON; its own plotly.js must be of the same major version
    assert get_plotlyjs_version().split(".")[0] == PLOTLY_JS_VERSION.split(".")[0]
    assert plotly_js_path().stat().st_size < len(get_plotlyjs()) / 2


def test_bundle_has_every_trace_type_suanli_draws() -> None:
    # report/rca.py and report/heatmap.py: scatter, bar, heatmap; web/static/console.js: histogram
    assert {"scatter", "bar", "heatmap", "histogram"} <= set(_TRACES.findall(plotly_js()))


@pytest.mark.slow
def test_rca_report_carries_one_partial_copy() -> None:
    page = render_rca(scenario_rca("pcie_riser")[0])
    assert page.count("plotly.js (cartesian - minified)") == 1
    assert "plotly.js v" not in page                   # the full bundle's banner
    rest = len(page.encode()) - plotly_js_path().stat().st_size
    assert 0 < rest < 600_000, rest                    # the report's own figures and text
    assert len(page.encode()) < 2_200_000
