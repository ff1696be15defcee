"""Optional packages: skipped where they are not installed, but a failure in CI (``CI`` set),
where `make install` puts them in (a missing tool in CI is a failure, never a skip)."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def need(module: str) -> ModuleType:
    if os.environ.get("CI"):
        return importlib.import_module(module)
    return pytest.importorskip(module)
