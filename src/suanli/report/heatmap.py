"""``suanli diagnose --heatmap FILE``: the one-way latency matrix as a self-contained HTML page
(Plotly with its JavaScript inlined, the vendored cartesian bundle: no CDN, air-gapped clusters have no internet) or a PNG: a
screenshot of that same page in sandboxed headless Chromium (:mod:`.chromium`), so the PNG has
the HTML's axis labels, title, colour bar and outlined pairs.

Cells are latency / baseline (log colour scale), rows are sources, columns destinations, nodes
sorted by rack; anomalous pairs are outlined. The RCA report draws the same :func:`figure`.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from suanli.errors import InputError
from suanli.report.chromium import render_with_chromium
from suanli.report.plotly_bundle import plotly_js

if TYPE_CHECKING:
    from suanli.analysis.fabric import Heatmap

__all__ = ["FIGURE_PX", "figure", "has_probes", "write_heatmap"]

_MAX_HOVER_NODES = 256
"""Above this many nodes the HTML carries no per-cell hover text (it would weigh O(n²))."""
FIGURE_PX = 900
"""The figure's width and height in CSS pixels: the PNG is exactly this size."""


def _ratio(h: Heatmap) -> npt.NDArray[np.float64]:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(h.latency_s / h.baseline_s, dtype=np.float64)


def _cells(x: npt.NDArray[np.float64], digits: int) -> list[list[float | None]]:
    return [[None if not np.isfinite(v) else round(float(v), digits) for v in row] for row in x]


def figure(h: Heatmap) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The heatmap as Plotly traces and layout (plain JSON): log2(latency / baseline), sources as
    rows, anomalous pairs outlined. ``--heatmap`` and the RCA report both draw this figure."""
    ratio = _ratio(h)
    labels = [f"{n} ({r})" for n, r in zip(h.nodes, h.racks, strict=True)]
    us = h.latency_s * 1e6
    n = len(h.nodes) if len(h.nodes) <= _MAX_HOVER_NODES else 0     # hover text is O(n²) bytes
    text = [[f"{h.nodes[i]} -> {h.nodes[j]}: {us[i, j]:.2f} µs ({ratio[i, j]:.2f}x baseline)"
             for j in range(n)] for i in range(n)] or None
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.log2(np.where(ratio > 0, ratio, np.nan))
    heat: dict[str, Any] = {"type": "heatmap", "z": _cells(z, 4), "x": labels, "y": labels,
                            "hoverinfo": "text" if text else "x+y+z", "colorscale": "RdYlGn",
                            "reversescale": True, "zmin": 0, "zmax": 2,
                            "colorbar": {"title": {"text": "log2(latency / baseline)"}}}
    if text:
        heat["text"] = text
    data = [heat]
    if h.marks:
        data.append({"type": "scatter", "mode": "markers", "name": "anomalous pair",
                     "x": [labels[h.nodes.index(d)] for _, d, _ in h.marks],
                     "y": [labels[h.nodes.index(s)] for s, _, _ in h.marks],
                     "marker": {"symbol": "square-open", "size": 10, "color": "black"},
                     "text": [k for _, _, k in h.marks]})
    layout = {"title": {"text": "One-way latency / baseline (src rows, dst columns); " + "; ".join(h.notes[:5])},
              "xaxis": {"title": {"text": "destination node (rack)"}},
              "yaxis": {"autorange": "reversed", "title": {"text": "source node (rack)"}},
              "width": FIGURE_PX, "height": FIGURE_PX}
    return data, layout


def has_probes(h: Heatmap) -> bool:
    """Whether any pair was probed (else there is no picture to draw)."""
    return bool(np.isfinite(h.latency_s).any())


def _html(h: Heatmap, still: bool = False) -> str:
    """The page; ``still`` (for the screenshot) drops Plotly's toolbar, which a picture cannot use."""
    import plotly.graph_objects as go
    import plotly.io as pio

    data, layout = figure(h)
    page = str(pio.to_html(go.Figure(data=data, layout=layout), include_plotlyjs=False, full_html=True,
                           config={"displayModeBar": not still}))
    head = f"<head><style>body {{ margin: 0; overflow: hidden; }}</style><script>{plotly_js()}</script>"
    return page.replace("<head>", head, 1)


def _png(h: Heatmap, path: Path) -> None:
    """Screenshot the HTML page, the figure filling a window of its own size."""
    with tempfile.TemporaryDirectory(prefix="suanli-heatmap-") as work:
        page = Path(work) / "heatmap.html"
        page.write_text(_html(h, still=True), encoding="utf-8")
        render_with_chromium(page, path, "draw the heatmap",
                             (f"--window-size={FIGURE_PX},{FIGURE_PX}", "--hide-scrollbars", "--screenshot={out}"))


def write_heatmap(heatmap: Heatmap, path: str | Path) -> Path:
    """Write ``path`` as PNG (``.png``) or self-contained HTML (``.html``/``.htm``)."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in (".png", ".html", ".htm"):
        raise InputError("heatmap file must end in .png or .html", file=str(p))
    try:
        if suffix == ".png":
            _png(heatmap, p)
        else:
            p.write_text(_html(heatmap), encoding="utf-8")
    except OSError as err:
        raise InputError(f"cannot write heatmap: {err.strerror}", file=str(p)) from err
    return p
