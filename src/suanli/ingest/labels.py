"""Label-set text of the metrics formats (``{a="x",b="y\\n"}``), shared by the streaming parser
and the DuckDB bulk reader."""

from __future__ import annotations

import re

__all__ = ["LabelError", "parse_labels"]

_LABEL_RE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}


class LabelError(ValueError):
    """A label set that does not parse (the message says why)."""


_PLAIN_SET = re.compile(r'\{(?:[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*",)*(?:[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*")?\}')
"""A label set with no spaces and no escapes (what exporters write): parsed by one ``findall``."""
_PLAIN_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"')
_PAIR = re.compile(r'[ \t]*([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"((?:[^"\\]|\\.)*)"[ \t]*(,?)')
_UNESCAPE = re.compile(r"\\(.)")


def parse_labels(text: str, start: int = 0) -> tuple[dict[str, str], int]:
    """Parse ``{a="x",b="y\\n"}`` starting at ``text[start] == "{"``; returns labels and the index
    after ``}``. Escapes ``\\\\``, ``\\"``, ``\\n``; spaces around names and commas and a trailing
    comma are tolerated. Raises :class:`LabelError`."""
    plain = _PLAIN_SET.match(text, start)
    if plain is not None:
        pairs = _PLAIN_PAIR.findall(text, start, plain.end())
        found = dict(pairs)
        if len(found) == len(pairs):
            return found, plain.end()
    labels: dict[str, str] = {}
    i = start + 1
    while True:
        m = _PAIR.match(text, i)
        if m is None:
            break
        name, value = m.group(1), m.group(2)
        if "\\" in value:
            value = _unescape(value)
        if name in labels:
            raise LabelError(f"duplicate label {name!r}")
        labels[name] = value
        i = m.end()
        if not m.group(3):
            break
    while i < len(text) and text[i] in " \t":
        i += 1
    if i < len(text) and text[i] == "}":
        return labels, i + 1
    raise LabelError(_why(text, i))


def _unescape(value: str) -> str:
    def one(m: re.Match[str]) -> str:
        if m.group(1) not in _ESCAPES:
            raise LabelError("bad escape in label value")
        return _ESCAPES[m.group(1)]
    return _UNESCAPE.sub(one, value)


def _why(text: str, i: int) -> str:
    """What is wrong at ``text[i]``, where the label pattern stopped matching."""
    eq = text.find("=", i)
    if eq < 0:
        return "label set not closed" if not text[i:].strip() else "label without '='"
    name = text[i:eq].strip().lstrip(",").strip()
    if not _LABEL_RE.match(name):
        return f"bad label name {name[:40]!r}"
    if not text[eq + 1:].lstrip(" \t").startswith('"'):
        return f"label {name!r}: value not quoted"
    if _PAIR.match(text, i) is None:
        return f"label {name!r}: unterminated value"
    return "expected ',' or '}' after a label"
