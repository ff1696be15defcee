"""write_heatmap: a PNG (Chromium's screenshot of the HTML figure) whose pixels we decode by hand,\nand an HTML page with no CDN."""

from __future__ import annotations

import re
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from suanli.analysis.fabric import Heatmap
from suanli.errors import InputError
from suanli.report.heatmap import FIGURE_PX, write_heatmap
from suanli.report.plotly_bundle import plotly_js
from tests.conftest import need_tool


def _heatmap() -> Heatmap:
    nodes = ("node-001", "node-002", "node-003")
    base = np.full((3, 3), 2e-6)
    lat = base.copy()
    np.fill_diagonal(lat, np.nan)
    np.fill_diagonal(base, np.nan)
    lat[1, 2] = 8e-6                 # 4x baseline: full red
    return Heatmap(nodes, ("rack-01", "rack-01", "rack-02"), lat, base,
                   (("node-002", "node-003", "directional"),), ("switch_port leaf-02/p1 (out): 1 slow pairs",))


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def _decode_png(data: bytes) -> np.ndarray:
    """8-bit RGB/RGBA PNG -> [height, width, 3], written from the PNG spec (all five filters)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, bpp = 8, b"", 0, 0, 3
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        tag, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert crc == zlib.crc32(tag + body)
        if tag == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
            assert body[8] == 8 and body[9] in (2, 6) and body[12] == 0     # 8-bit RGB(A), not interlaced
            bpp = 3 if body[9] == 2 else 4
        elif tag == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride = zlib.decompress(idat), width * bpp
    prev, out = bytearray(stride), bytearray()
    for y in range(height):
        kind, row = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = row[i - bpp] if i >= bpp else 0
            c = prev[i - bpp] if i >= bpp else 0
            row[i] = (row[i] + (0, a, prev[i], (a + prev[i]) // 2, _paeth(a, prev[i], c))[kind]) & 0xFF
        out += row
        prev = row
    return np.frombuffer(bytes(out), dtype=np.uint8).reshape(height, width, bpp)[:, :, :3]


def _count(img: np.ndarray, rgb: tuple[int, int, int]) -> int:
    return int(np.all(img == np.array(rgb, dtype=np.uint8), axis=-1).sum())


def test_png_is_the_html_figure_with_labels_and_colour_bar(tmp_path: Path) -> None:
    need_tool("chromium", "chromium-browser")           # the PNG is Chromium's screenshot
    out = write_heatmap(_heatmap(), tmp_path / "h.png")
    img = _decode_png(out.read_bytes())
    assert img.shape == (FIGURE_PX, FIGURE_PX, 3)       # the figure's window, not a bare 3x3 matrix
    # RdYlGn reversed, zmin 0 zmax 2: the 4x pair is the scale's red end, 1x pairs its green end
    red, green = _count(img, (165, 0, 38)), _count(img, (0, 104, 55))
    cell = (FIGURE_PX // 6) ** 2                          # a cell is well over a sixth of the width squared
    assert red > cell and green > 4 * cell
    # the colour bar: a column of many distinct colours right of the cells
    bar_colours = {tuple(int(x) for x in img[y, FIGURE_PX - 150]) for y in range(FIGURE_PX)}
    strip = max(len({tuple(int(x) for x in img[y, c]) for y in range(FIGURE_PX)})
                for c in range(FIGURE_PX * 3 // 4, FIGURE_PX, 4))
    assert max(strip, len(bar_colours)) > 50
    # labels and title: dark text pixels outside the cells (plotly's #2a3f5f font colour family)
    dark = (img.astype(int).sum(axis=-1) < 300) & ~np.all(img == (165, 0, 38), axis=-1)
    assert dark[:, :FIGURE_PX // 8].sum() > 200          # row labels on the left
    assert dark[:FIGURE_PX // 10].sum() > 200            # the title on top


def test_html_is_self_contained(tmp_path: Path) -> None:
    out = write_heatmap(_heatmap(), tmp_path / "h.html")
    text = out.read_text(encoding="utf-8")
    assert "<html" in text and "node-003 (rack-02)" in text
    assert not re.search(r"<script[^>]+src=[\"']https?://", text)
    assert plotly_js() in text          # plotly.js inlined, not linked


def test_bad_suffix_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"h\.svg"):
        write_heatmap(_heatmap(), tmp_path / "h.svg")
