"""The plotly.js that suanli's pages carry: the vendored cartesian partial bundle (assets/README.md).

One file serves the RCA report, the heatmap page and the ``serve`` console, so the report stays
self-contained at a third of the full bundle's size and every page draws with the same plotly.js.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path

__all__ = ["PLOTLY_JS_VERSION", "plotly_js", "plotly_js_path"]

PLOTLY_JS_VERSION = "4.1.1"
_NAME = "plotly-cartesian.min.js"


def plotly_js_path() -> Path:
    """The bundle on disk (package data under ``suanli/report/assets``)."""
    return Path(str(resources.files("suanli.report").joinpath("assets", _NAME)))


@cache
def plotly_js() -> str:
    """The bundle's text, for inlining into a ``<script>``."""
    return plotly_js_path().read_text(encoding="utf-8")
