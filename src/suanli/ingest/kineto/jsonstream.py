"""Read one large JSON document incrementally: its small keys whole, one array key element by element.

A PyTorch profiler trace is one JSON object of a few small keys and a ``traceEvents`` array that
can hold millions of events (gigabytes of text). :class:`ArrayStream` yields that array's elements
one by one, decoding each with the C-accelerated :meth:`json.JSONDecoder.raw_decode` from a buffer
of about :data:`CHUNK` characters, so memory stays bounded by the largest single value, not by the
file. Keys before and after the array land in :attr:`ArrayStream.meta`.

Damage is reported, never raised out of :meth:`ArrayStream.elements` once the array has begun:

* an element that is not JSON is skipped to the next line (Kineto writes one event per line) and
  recorded in :attr:`ArrayStream.bad` as ``(line, what)``;
* text or a compressed stream that ends early stops the reading, the elements read so far are
  kept, and :attr:`ArrayStream.truncated` says where.

Damage before the array (the file is not a JSON object at all) raises :class:`StreamError` with
the line.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from typing import IO, Any

__all__ = ["CHUNK", "MAX_VALUE_CHARS", "ArrayStream", "StreamError"]

CHUNK = 1 << 18
"""Characters read per refill of the buffer."""
MAX_VALUE_CHARS = 64 << 20
"""The longest single value (one event, or one metadata key) the reader will buffer."""
_WS = re.compile(r"[ \t\n\r]*")
_COMMA = re.compile(r"[ \t\n\r]*,[ \t\n\r]*")


class StreamError(Exception):
    """The document is not the JSON it should be, at ``line`` (1-based)."""

    def __init__(self, what: str, line: int) -> None:
        super().__init__(what)
        self.what = what
        self.line = line


class _Bad(Exception):
    def __init__(self, what: str, truncated: bool) -> None:
        super().__init__(what)
        self.what = what
        self.truncated = truncated


class ArrayStream:
    """The elements of ``array_key`` of a top-level JSON object (or of a top-level array)."""

    def __init__(self, raw: IO[bytes] | io.RawIOBase, array_key: str) -> None:
        self._raw = raw
        buffered = io.BufferedReader(raw) if isinstance(raw, io.RawIOBase) else raw
        self._text = io.TextIOWrapper(buffered, encoding="utf-8-sig", errors="replace", newline="")
        self._dec = json.JSONDecoder()
        self._key = array_key
        self._buf = ""
        self._pos = 0
        self._eof = False
        self._lines = 0          # newlines before self._line_pos
        self._line_pos = 0
        self.meta: dict[str, Any] = {}
        self.found_array = False
        self.truncated: str | None = None
        """Why reading stopped before the document's end (``None`` when it did not)."""
        self.bad: list[tuple[int, str]] = []
        """Elements skipped as not JSON: (line, what)."""
        self.stream_problem: str | None = None
        """Why the bytes ended early (``raw.problem``, where the stream has one: see gunzip.py)."""

    def line(self, pos: int | None = None) -> int:
        """The 1-based line of buffer position ``pos`` (default: the current one); positions only move on."""
        pos = self._pos if pos is None else pos
        if pos >= self._line_pos:
            self._lines += self._buf.count("\n", self._line_pos, pos)
            self._line_pos = pos
        return self._lines + 1

    def elements(self) -> Iterator[Any]:
        """Each element of the array; StreamError when the document is not an object holding it."""
        c = self._peek()
        if c == "[":
            self.found_array = True
            yield from self._array()
            return
        if c != "{":
            raise StreamError("not a JSON object" if c else "empty file", self.line())
        self._pos += 1
        while self.truncated is None:
            c = self._peek()
            if c == "}":
                self._pos += 1
                return
            if c == "":
                self._truncate("the document ends before its closing '}'")
                return
            key = self._top_value()
            if not isinstance(key, str) or self._peek() != ":":
                raise StreamError("expected a key and ':' in the top-level object", self.line())
            self._pos += 1
            if self._peek() == "[" and key == self._key:
                self.found_array = True
                yield from self._array()
                if self.truncated is not None:
                    return
            else:
                self.meta[key] = self._top_value()
            c = self._peek()
            if c in (",", "}"):
                self._pos += 1
                if c == "}":
                    return
            elif c == "":
                self._truncate("the document ends before its closing '}'")
            else:
                raise StreamError(f"expected ',' or '}}' after key {key!r}, found {c!r}", self.line())

    def _top_value(self) -> Any:
        start = self._pos
        try:
            return self._value()
        except _Bad as bad:
            if bad.truncated and self.found_array:
                self._truncate(bad.what)
                return None
            raise StreamError(bad.what, self.line(start)) from None

    def _array(self) -> Iterator[Any]:
        self._pos += 1
        c = self._peek()
        while self.truncated is None:
            if c == "]":
                self._pos += 1
                return
            if c == "":
                self._truncate(f"the {self._key} array ends early (no closing ']')")
                return
            start = self._pos
            try:
                value = self._value()
            except _Bad as bad:
                if bad.truncated:
                    self._truncate(f"{bad.what} (inside {self._key})")
                    return
                self.bad.append((self.line(start), bad.what))
                c = self._resync()
                continue
            yield value
            m = _COMMA.match(self._buf, self._pos)
            if m and m.end() < len(self._buf):                  # the common case: "},\n  {"
                self._pos = m.end()
                c = self._buf[self._pos]
                continue
            c = self._peek()
            if c == ",":
                self._pos += 1
                c = self._peek()
            elif c not in ("]", ""):
                self.bad.append((self.line(), f"expected ',' or ']' between elements, found {c!r}"))
                c = self._resync()

    def _resync(self) -> str:
        """Skip to the next line that starts an element (``{``) or closes the array; its first char."""
        while True:
            i = self._buf.find("\n", self._pos)
            if i < 0:
                self._pos = len(self._buf)
                if not self._fill(1):
                    return ""
                continue
            self._pos = i + 1
            c = self._peek()
            if c in ("{", "]", ""):
                return c

    def _value(self) -> Any:
        need = CHUNK // 4
        while True:
            if len(self._buf) - self._pos < need:
                self._fill(need)
            try:
                value, end = self._dec.raw_decode(self._buf, self._pos)
            except json.JSONDecodeError as err:
                if self._eof or need >= MAX_VALUE_CHARS:
                    raise self._bad(err) from None
                need *= 4
                continue
            if end >= len(self._buf) and not self._eof:   # a number may go on past the buffer
                need = max(need, end - self._pos + 1) * 2
                continue
            self._pos = end
            return value

    def _bad(self, err: json.JSONDecodeError) -> _Bad:
        at_end = err.pos >= len(self._buf) - 1 or err.msg.startswith("Unterminated string")
        if self._eof and at_end:
            return _Bad(self.stream_problem or "the text ends inside a value", truncated=True)
        if not self._eof:
            return _Bad(f"a value longer than {MAX_VALUE_CHARS >> 20} MiB or not JSON ({err.msg})",
                        truncated=False)
        return _Bad(f"not JSON ({err.msg})", truncated=False)

    def _truncate(self, what: str) -> None:
        self.truncated = f"line {self.line()}: {self.stream_problem or what}"

    def _peek(self) -> str:
        """The next non-blank character ('' at the end), without consuming it."""
        while True:
            m = _WS.match(self._buf, self._pos)
            self._pos = m.end() if m else self._pos
            if self._pos < len(self._buf):
                return self._buf[self._pos]
            if not self._fill(1):
                return ""

    def _fill(self, need: int) -> bool:
        """Read until ``need`` characters follow the position or the input ends; False if none came."""
        if self._eof:
            return False
        if self._pos > CHUNK:
            self.line(self._pos)
            self._buf = self._buf[self._pos:]
            self._line_pos -= self._pos
            self._pos = 0
        grew = False
        while len(self._buf) - self._pos < need and not self._eof:
            piece = self._read(max(CHUNK, need))
            if piece:
                self._buf += piece
                grew = True
            else:
                self._eof = True
        return grew

    def _read(self, n: int) -> str:
        try:
            piece = self._text.read(n)
        except OSError as err:
            self.stream_problem = f"cannot read further ({err})"
            return ""
        if not piece:
            self.stream_problem = getattr(self._raw, "problem", None)
        return piece
