"""Opening input files the one way every reader does: a file is gzip when its name ends in ``.gz``
or its content starts with the gzip magic (a ``.gz`` that is not gzip is unreadable, a log
compressed under a plain name is still read).

A file that cannot be opened (missing, a folder, no permission) is the user's to fix: an
:class:`~suanli.errors.InputError` naming it. Errors while reading (a cut ``.gz``) are the
reader's to report as rejects.
"""

from __future__ import annotations

import gzip
import io
import zlib
from pathlib import Path

from suanli.errors import InputError

__all__ = ["GZIP_MAGIC", "is_gzip", "open_bytes", "tail_bytes"]

GZIP_MAGIC = b"\x1f\x8b"


def is_gzip(path: Path) -> bool:
    """Whether the file is gzip: by its name, else by its first bytes (False when it cannot be read)."""
    if path.name.lower().endswith(".gz"):
        return True
    try:
        with path.open("rb") as fh:
            return fh.read(2) == GZIP_MAGIC
    except OSError:
        return False


def open_bytes(path: Path) -> io.BufferedReader | gzip.GzipFile:
    """The file's bytes, decompressed when it is gzip; ``read1`` of a gzip file hands out what
    decompressed before a corrupt or cut part."""
    try:
        raw = path.open("rb")
        if raw.read(2) != GZIP_MAGIC and not path.name.lower().endswith(".gz"):
            raw.seek(0)
            return raw
        raw.close()
        return gzip.open(path, "rb")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", file=str(path)) from exc


def tail_bytes(path: Path, n_bytes: int = 4096) -> bytes | None:
    """The last ``n_bytes`` of the file's content (decompressed for gzip); None when it cannot be read."""
    try:
        if not is_gzip(path):
            with path.open("rb") as fh:
                fh.seek(0, 2)
                fh.seek(max(0, fh.tell() - n_bytes))
                return fh.read()
        last = b""
        with gzip.open(path, "rb") as gz:
            while chunk := gz.read(1 << 20):
                last = (last + chunk)[-n_bytes:]
        return last
    except (OSError, EOFError, zlib.error):
        return None
