"""Typed reads of parsed YAML with errors that name the key path (``racks[2].nodes[0].id: missing``).

A :class:`Reader` walks one document; every accessor takes the key path as a tuple of keys and
indexes and raises :class:`~suanli.errors.InputError` on a missing key or a wrong type. The line
number is looked up from the YAML node tree only when an error is raised (no cost otherwise).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NoReturn

import yaml

from suanli.errors import InputError

KeyPath = tuple[str | int, ...]

__all__ = ["KeyPath", "Reader", "format_path"]


def format_path(path: KeyPath) -> str:
    """``("racks", 2, "nodes", 0, "id")`` -> ``racks[2].nodes[0].id``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def _line_of(text: str, path: KeyPath) -> int | None:
    """1-based line of the deepest node of ``path`` that exists in ``text`` (None if not YAML)."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    if node is None:
        return None
    line: int = node.start_mark.line + 1
    for part in path:
        child = None
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.value == part:
                    child = v
                    line = k.start_mark.line + 1
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            child = node.value[part]
            line = child.start_mark.line + 1
        if child is None:
            break
        node = child
    return line


class Reader:
    """Typed accessors over one parsed document; errors name ``source``, the line and the key path."""

    def __init__(self, text: str, source: str) -> None:
        self.text = text
        self.source = source

    def fail(self, path: KeyPath, what: str) -> NoReturn:
        raise InputError(what, file=self.source, line=_line_of(self.text, path), key=format_path(path) or None)

    def mapping(self, value: Any, path: KeyPath) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            self.fail(path, f"expected a mapping, got {_kind(value)}")
        return value

    def seq(self, obj: Mapping[str, Any], key: str, path: KeyPath, *, required: bool = False) -> list[Any]:
        """The list under ``key`` (missing or null: empty, or an error when required)."""
        value = obj.get(key)
        if value is None:
            if required:
                self.fail((*path, key), "missing")
            return []
        if not isinstance(value, list):
            self.fail((*path, key), f"expected a list, got {_kind(value)}")
        return value

    def text_of(self, obj: Mapping[str, Any], key: str, path: KeyPath, *, required: bool = False) -> str | None:
        """A non-empty string (numbers are accepted and written as text: ``id: 7`` is ``"7"``)."""
        value = obj.get(key)
        if value is None:
            if required:
                self.fail((*path, key), "missing")
            return None
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            self.fail((*path, key), f"expected a string, got {_kind(value)}")
        out = str(value).strip()
        if not out:
            if required:
                self.fail((*path, key), "empty")
            return None
        return out

    def req_text(self, obj: Mapping[str, Any], key: str, path: KeyPath) -> str:
        out = self.text_of(obj, key, path, required=True)
        assert out is not None
        return out

    def integer(self, obj: Mapping[str, Any], key: str, path: KeyPath, *, required: bool = False,
                minimum: int | None = None) -> int | None:
        value = obj.get(key)
        if value is None:
            if required:
                self.fail((*path, key), "missing")
            return None
        if isinstance(value, str) and value.strip().lstrip("+-").isdecimal():
            value = int(value.strip())
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail((*path, key), f"expected an integer, got {_kind(value)}")
        if minimum is not None and value < minimum:
            self.fail((*path, key), f"expected an integer >= {minimum}, got {value}")
        return value

    def number(self, obj: Mapping[str, Any], key: str, path: KeyPath) -> float | None:
        """A finite number; YAML 1.1 reads ``1.5e12`` as a string, so numeric strings are accepted."""
        value = obj.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                self.fail((*path, key), f"expected a number, got {value!r}")
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.fail((*path, key), f"expected a number, got {_kind(value)}")
        if not math.isfinite(value):
            self.fail((*path, key), f"expected a finite number, got {value}")
        return float(value)


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"text {value[:40]!r}"
    return f"{type(value).__name__} {value!r}"
