"""write_heatmap: a PNG whose pixels we decode by hand, and an HTML page with no CDN."""

from __future__ import annotations

import re
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from suanli.analysis.fabric import Heatmap
from suanli.errors import InputError
from suanli.report.heatmap import write_heatmap


def _heatmap() -> Heatmap:
    nodes = ("node-001", "node-002", "node-003")
    base = np.full((3, 3), 2e-6)
    lat = base.copy()
    np.fill_diagonal(lat, np.nan)
    np.fill_diagonal(base, np.nan)
    lat[1, 2] = 8e-6                 # 4x baseline: full red
    return Heatmap(nodes, ("rack-01", "rack-01", "rack-02"), lat, base,
                   (("node-002", "node-003", "directional"),), ("switch_port leaf-02/p1 (out): 1 slow pairs",))


def _decode_png(data: bytes) -> np.ndarray:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        tag, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert crc == zlib.crc32(tag + body)
        if tag == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
            assert body[8:10] == b"\x08\x02"          # 8-bit RGB
        elif tag == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    rows = [raw[y * (3 * width + 1) + 1:(y + 1) * (3 * width + 1)] for y in range(height)]
    return np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(height, width, 3)


def test_png_cells_coloured_and_marked(tmp_path: Path) -> None:
    out = write_heatmap(_heatmap(), tmp_path / "h.png")
    img = _decode_png(out.read_bytes())
    px = 1024 // 3                      # cell size: about 1,000 px for 3 nodes, capped at 24
    px = min(px, 24)
    assert img.shape == (3 * px, 3 * px, 3)
    cell = lambda i, j: tuple(int(x) for x in img[i * px + px // 2, j * px + px // 2])  # noqa: E731
    assert cell(0, 0) == (90, 90, 90)   # not probed: grey
    assert cell(0, 1) == (0, 200, 40)   # 1x baseline: green
    assert cell(1, 2) == (0, 200, 255)  # the anomalous one-way pair carries the directional marker


def test_html_is_self_contained(tmp_path: Path) -> None:
    out = write_heatmap(_heatmap(), tmp_path / "h.html")
    text = out.read_text(encoding="utf-8")
    assert "<html" in text and "node-003 (rack-02)" in text
    assert not re.search(r"<script[^>]+src=[\"']https?://", text)
    assert len(text) > 1_000_000        # plotly.js inlined (several MB), not linked


def test_bad_suffix_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"h\.svg"):
        write_heatmap(_heatmap(), tmp_path / "h.svg")
