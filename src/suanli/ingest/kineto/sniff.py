"""Telling a Kineto trace from other JSON, cheaply, and the rank a file's name gives.

:func:`is_kineto_trace` answers from the name alone for ``*.pt.trace.json[.gz]`` (PyTorch's
``tensorboard_trace_handler`` names); for any other ``*.json[.gz]`` it reads at most
:data:`SNIFF_BYTES` of (decompressed) text from the start and looks for a top-level object that
opens a ``"traceEvents": [`` array. The rest of the file is not read, so a folder of multi-GB
traces is planned in milliseconds, and the trace itself is read once, later, by ``read_trace``.
"""

from __future__ import annotations

import re
from pathlib import Path

from suanli.ingest.kineto.gunzip import GZIP_MAGIC, Gunzip

__all__ = ["KINETO_SUFFIXES", "SNIFF_BYTES", "is_kineto_trace", "looks_like_trace_events", "rank_from_name"]

KINETO_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")
"""File names that are Kineto traces by PyTorch's own convention."""
JSON_SUFFIXES = (".json", ".json.gz")
SNIFF_BYTES = 1 << 20
"""How much of a file's start :func:`is_kineto_trace` reads (Kineto writes ``traceEvents`` after a
few small keys; a distributedInfo of thousands of ranks still fits)."""
_TRACE_EVENTS = re.compile(rb'"traceEvents"\s*:\s*\[')
_RANK_IN_NAME = re.compile(r"(?<![a-z0-9])(?<!local_)(?<!local-)rank[-_]?(\d+)(?![0-9])", re.IGNORECASE)


def looks_like_trace_events(head: bytes) -> bool:
    """True when ``head`` (a document's first bytes) opens a JSON object with a ``traceEvents`` array."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return text[:1] == b"{" and _TRACE_EVENTS.search(text) is not None


def _head(path: Path, n: int) -> bytes:
    """The first ``n`` bytes of the file's text (decompressed; what precedes damage, if any)."""
    with path.open("rb") as fh:
        if fh.read(2) != GZIP_MAGIC:
            fh.seek(0)
            return fh.read(n)
        fh.seek(0)
        gz = Gunzip(fh)
        out = bytearray()
        while len(out) < n:
            piece = gz.read(n - len(out))
            if not piece:
                break
            out += piece
        return bytes(out)


def is_kineto_trace(path: str | Path) -> bool:
    """Whether ``path`` is a PyTorch profiler (Kineto) trace; never raises for an unreadable file.

    True for a ``*.pt.trace.json`` / ``*.pt.trace.json.gz`` name, or for a ``*.json`` /
    ``*.json.gz`` file whose first :data:`SNIFF_BYTES` open an object with a ``traceEvents``
    array (HTA's test traces are named ``rank-0.json.gz`` and the like).
    """
    p = Path(path)
    name = p.name.lower()
    if name.endswith(KINETO_SUFFIXES):
        return True
    if not name.endswith(JSON_SUFFIXES):
        return False
    try:
        return looks_like_trace_events(_head(p, SNIFF_BYTES))
    except OSError:
        return False


def rank_from_name(name: str) -> int | None:
    """The rank a file name states (``rank-34``, ``rank_0``, ``rank3``), else None.

    ``local_rank_N`` is not a rank, and neither is ``ranks_8``; the caller records that the rank
    came from the name, so a reader can tell it from one the trace states.
    """
    m = _RANK_IN_NAME.search(name)
    return int(m.group(1)) if m else None
