"""Shared fixtures: where ../shared is, and the public scenario folders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


def shared_path(*parts: str) -> Path:
    """A path under ../shared; skips (never in CI) when ../shared is absent."""
    p = SHARED.joinpath(*parts)
    if not SHARED.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"../shared is missing in CI: {SHARED}")
        pytest.skip(f"../shared is absent ({SHARED}): real-data tests need it")
    return p


@pytest.fixture
def shared() -> Path:
    return shared_path()


@pytest.fixture
def scenarios_dir() -> Path:
    return shared_path("scenarios")
