"""gzip decompression that keeps what came before damage: a cut or corrupt stream ends the data.

Python's :class:`gzip.GzipFile` raises ``EOFError`` on a cut file and loses the piece it was
decompressing; a profiler killed mid-write leaves exactly such files. :class:`Gunzip` feeds the
compressed bytes to :mod:`zlib` itself, one piece at a time, across concatenated members, and
records the damage in :attr:`Gunzip.problem` instead of raising.
"""

from __future__ import annotations

import io
import zlib
from typing import IO

__all__ = ["GZIP_MAGIC", "Gunzip"]

GZIP_MAGIC = b"\x1f\x8b"
_PIECE = 1 << 16


class Gunzip(io.RawIOBase):
    """A readable stream of the decompressed bytes of the gzip data in ``fh``."""

    def __init__(self, fh: IO[bytes]) -> None:
        super().__init__()
        self._fh = fh
        self._z = zlib.decompressobj(wbits=31)
        self._pending = b""
        self._done = False
        self.problem: str | None = None
        """Why the data ended early: a cut or a damaged stream (None when it did not)."""

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self._fh.close()
        super().close()

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._pending and not self._done:
            self._pending = self._next()
        n = min(len(b), len(self._pending))
        b[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def _next(self) -> bytes:
        raw = self._fh.read(_PIECE)
        if not raw:
            if not self._z.eof:
                self.problem = "the compressed stream ends early"
            self._done = True
            return b""
        out = []
        try:
            while raw:
                if self._z.eof:
                    if not raw.startswith(GZIP_MAGIC):   # trailing bytes after the last member
                        break
                    self._z = zlib.decompressobj(wbits=31)
                out.append(self._z.decompress(raw))
                raw = self._z.unused_data
        except zlib.error as err:
            self.problem = f"the compressed stream is damaged ({err})"
            self._done = True
        return b"".join(out)
