"""Metrics files in OpenMetrics or Prometheus text (``.gz`` too): their lines read in chunks, a cut
last line marked, their format told from head and tail, and their samples streamed through
``suanli.ingest.openmetrics.OpenMetricsParser`` (docs/ingest.md)."""

from __future__ import annotations

import codecs
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from suanli.errors import InputError
from suanli.ingest.files import open_bytes, tail_bytes
from suanli.ingest.openmetrics import Batch, Format, OpenMetricsConfig, OpenMetricsParser, detect_format
from suanli.ingest.records import IngestReport
from suanli.inventory import Resolver

__all__ = ["EofAt", "eof_in_tail", "file_format", "file_mtime", "read_openmetrics"]


def _text_chunks(path: Path, chunk_bytes: int) -> Iterator[str]:
    """Decoded text (bytes that are not UTF-8 kept as surrogates), ``read1`` so that what a gzip
    file decompressed before a corrupt or cut part is still handed out."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="surrogateescape")
    with open_bytes(path) as fh:
        while data := fh.read1(chunk_bytes):
            yield decoder.decode(data)
    yield decoder.decode(b"", final=True)


def _file_lines(path: Path, chunk_bytes: int, parser: OpenMetricsParser | None = None) -> Iterator[tuple[int, str]]:
    """Numbered lines; with ``parser``, a last line without newline is marked on it (``mark_cut``)
    and a read error (a corrupt ``.gz``) ends the lines with one reject."""
    lineno = 0
    tail = ""
    try:
        for chunk in _text_chunks(path, chunk_bytes):
            lines = (tail + chunk).split("\n")
            tail = lines.pop()
            for line in lines:
                lineno += 1
                yield lineno, line
    except (OSError, EOFError, zlib.error, InputError) as err:
        if parser is None:
            return
        parser.report.reject(f"{parser.source}:{lineno + 1}: unreadable ({str(err) or type(err).__name__})")
        return
    if tail:
        if parser is not None:
            parser.mark_cut(lineno + 1)
        yield lineno + 1, tail


EofAt = Literal["none", "last", "inside"]


def eof_in_tail(tail: bytes | None) -> EofAt:
    """Where a ``# EOF`` line stands in the last bytes of a file: the last non-blank line
    (``last``), followed by more content (``inside``), or nowhere (``none``, also for no tail)."""
    lines = [ln.strip() for ln in (tail or b"").splitlines() if ln.strip()]
    if lines and lines[-1] == b"# EOF":
        return "last"
    return "inside" if b"# EOF" in lines else "none"


def file_format(path: Path, config: OpenMetricsConfig | None = None,
                tail: bytes | None = None) -> Literal["openmetrics", "prometheus"]:
    """``detect_format`` over the head of a file, and OpenMetrics when its tail (``tail_bytes``,
    read here unless given) holds a ``# EOF`` line."""
    cfg = config or OpenMetricsConfig()
    head: list[str] = []
    for _, line in _file_lines(path, 1 << 16):
        head.append(line)
        if len(head) >= cfg.detect_lines:
            break
    kind = detect_format(head, path.name.removesuffix(".gz"))
    if kind == "prometheus" and eof_in_tail(tail if tail is not None else tail_bytes(path)) != "none":
        kind = "openmetrics"
    return kind


def read_openmetrics(path: Path, resolver: Resolver | None, report: IngestReport, *,
                     fmt: Format = "auto", arrival_ts: float | None = None,
                     config: OpenMetricsConfig | None = None, stray_ts: list[float] | None = None) -> Iterator[Batch]:
    """Stream a metrics file (``.gz`` too). Samples without a timestamp get ``arrival_ts``, by
    default the file's modification time. ``stray_ts`` (if given) receives the earliest and
    latest out-of-range timestamp rejected."""
    cfg = config or OpenMetricsConfig()
    kind = file_format(path, cfg) if fmt == "auto" else fmt
    stamp = arrival_ts if arrival_ts is not None else file_mtime(path)
    parser = OpenMetricsParser(source=path.name, resolver=resolver, report=report, fmt=kind,
                               arrival_ts=stamp, config=cfg)
    for batch in parser.feed(_file_lines(path, cfg.read_chunk_bytes, parser)):
        yield from batch
    yield from parser.finish()
    report.add("samples", parser.samples)
    if stray_ts is not None:
        stray_ts.extend(parser.stray_ts)


def file_mtime(path: Path) -> float:
    """The file's modification time (now when it cannot be read)."""
    try:
        return path.stat().st_mtime
    except OSError:
        return time.time()
