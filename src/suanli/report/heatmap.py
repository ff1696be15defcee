"""``suanli diagnose --heatmap FILE``: the one-way latency matrix as a self-contained HTML page
(Plotly with its JavaScript inlined: no CDN, air-gapped clusters have no internet) or a PNG
(written with zlib, no browser or image library needed).

Cells are latency / baseline (log colour scale), rows are sources, columns destinations, nodes
sorted by rack; anomalous pairs are outlined (HTML) or drawn in a marker colour (PNG). The RCA
report draws the same :func:`figure`.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from suanli.errors import InputError

if TYPE_CHECKING:
    from suanli.analysis.fabric import Heatmap

__all__ = ["figure", "has_probes", "heatmap_png", "write_heatmap"]

U8 = npt.NDArray[np.uint8]
_MAX_HOVER_NODES = 256
"""Above this many nodes the HTML carries no per-cell hover text (it would weigh O(n²))."""
_MARK_RGB = {"node": (255, 0, 255), "directional": (0, 200, 255), "link": (255, 255, 255)}


def _ratio(h: Heatmap) -> npt.NDArray[np.float64]:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(h.latency_s / h.baseline_s, dtype=np.float64)


def _colour(ratio: npt.NDArray[np.float64]) -> U8:
    """1x -> green, 2x -> yellow, >= 4x -> red (log2 scale); NaN (not probed) -> grey."""
    x = np.clip(np.log2(np.where(np.isfinite(ratio) & (ratio > 0), ratio, 1.0)) / 2.0, 0.0, 1.0)
    r = np.clip(2 * x, 0, 1) * 255
    g = np.clip(2 - 2 * x, 0, 1) * 200
    rgb = np.stack([r, g, np.full_like(r, 40.0)], axis=-1).astype(np.uint8)
    rgb[~np.isfinite(ratio)] = (90, 90, 90)
    return rgb


def heatmap_png(h: Heatmap, cell_px: int = 0) -> bytes:
    """PNG bytes of the ratio matrix (cell size chosen so the image is about 1,000 px)."""
    n = len(h.nodes)
    px = cell_px or max(1, min(24, 1024 // max(n, 1)))
    rgb = _colour(_ratio(h))
    index = {node: i for i, node in enumerate(h.nodes)}
    for s, d, kind in h.marks:
        if s in index and d in index:
            rgb[index[s], index[d]] = _MARK_RGB.get(kind, (255, 255, 255))
    img = np.repeat(np.repeat(rgb, px, axis=0), px, axis=1) if n else np.zeros((1, 1, 3), np.uint8)
    height, width = img.shape[:2]
    raw = b"".join(b"\x00" + img[y].tobytes() for y in range(height))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b"")


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
              "yaxis": {"autorange": "reversed"}, "width": 900, "height": 900}
    return data, layout


def has_probes(h: Heatmap) -> bool:
    """Whether any pair was probed (else there is no picture to draw)."""
    return bool(np.isfinite(h.latency_s).any())


def _html(h: Heatmap) -> str:
    import plotly.graph_objects as go
    import plotly.io as pio

    data, layout = figure(h)
    return str(pio.to_html(go.Figure(data=data, layout=layout), include_plotlyjs=True, full_html=True))


def write_heatmap(heatmap: Heatmap, path: str | Path) -> Path:
    """Write ``path`` as PNG (``.png``) or self-contained HTML (``.html``/``.htm``)."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in (".png", ".html", ".htm"):
        raise InputError("heatmap file must end in .png or .html", file=str(p))
    try:
        if suffix == ".png":
            p.write_bytes(heatmap_png(heatmap))
        else:
            p.write_text(_html(heatmap), encoding="utf-8")
    except OSError as err:
        raise InputError(f"cannot write heatmap: {err.strerror}", file=str(p)) from err
    return p
