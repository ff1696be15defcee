"""Optional packages (torch, lightning, transformers): skipped where they are not installed, a
failure in CI, where `make install` puts them in (tests.conftest.missing)."""

from __future__ import annotations

from types import ModuleType

from tests.conftest import need_module


def need(module: str) -> ModuleType:
    return need_module(module)
