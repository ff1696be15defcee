"""Errors a user can cause. The CLI prints ``str(err)`` on one line and exits 2."""

from __future__ import annotations

__all__ = ["InputError"]


class InputError(Exception):
    """Bad input a user can fix: a file, a line (or key path) and what was expected.

    ``str(err)`` is one line: ``where: what`` (``inventory.yaml:12: racks[0].id: missing``).
    """

    def __init__(self, what: str, *, file: str | None = None, line: int | None = None,
                 key: str | None = None) -> None:
        self.what = what
        self.file = file
        self.line = line
        self.key = key
        where = []
        if file:
            where.append(file if line is None else f"{file}:{line}")
        if key:
            where.append(key)
        super().__init__(": ".join([*where, what]) if where else what)
