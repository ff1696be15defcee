"""Lazy package exports (PEP 562): a package's ``__init__`` names what it offers without
importing it, so ``import suanli.cli`` (every verb registered) does not pay for SciPy, the
analyses and the reports before the one verb that needs them runs."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

__all__ = ["lazy_exports"]


def lazy_exports(package: str, where: Mapping[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``package``: ``where`` maps each exported name to the
    submodule (relative to the package, e.g. ``"batch"``) that defines it; a name that is a
    submodule itself is imported as one. The value is kept in the package once looked up."""
    import sys

    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        found = importlib.import_module(f"{package}.{module}")
        value = found if module == name else getattr(found, name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
