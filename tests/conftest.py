"""Shared fixtures and the CI no-skip policy.

* ``shared_path``: where ../shared is (the public scenarios and real data).
* ``in_ci()``: ``CI`` set to anything but "", "0" or "false" (any case).
* ``missing(why)``: what a test does when an external tool, server or optional package is not
  there: skip on a developer's machine, **fail in CI**. Every such skip goes through it
  (``need_tool`` for binaries, ``need_module`` for optional third-party packages); first-party
  modules are imported plainly, so an import error is an error everywhere.
* The ``integration`` marker is enforced: a test so marked must run a real server or tool, that is
  request one of ``SERVER_FIXTURES`` or locate/start one during the test (``need_tool``,
  ``ran_external``); otherwise it fails, even when its asserts pass.
"""

from __future__ import annotations

import importlib
import os
import shutil
from collections.abc import Generator
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SUANLI_SHARED", ROOT.parent / "shared"))

#: Fixtures that start (or hand out) a real server: requesting one satisfies ``integration``.
SERVER_FIXTURES: frozenset[str] = frozenset({
    "servers", "prometheus_for", "vm_for", "backend_for", "empty_prometheus", "empty_vm",
    "stingy_prometheus", "locked_vm", "loki",
    "browser",              # headless Chromium (Debian's), driven by Playwright
})

_RAN: list[str] = []
"""External servers and tools the running test located or started (cleared per test)."""


def examples(n: int) -> int:
    """Hypothesis ``max_examples``: ``n``, or a fifth of it (at least 10) under ``make mutate``
    (``SUANLI_MUTATE`` set), where the properties run once per mutant."""
    return max(n // 5, 10) if os.environ.get("SUANLI_MUTATE") else n


def in_ci() -> bool:
    """Whether this is CI: ``CI`` set to anything other than "", "0" or "false"."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false")


def missing(why: str, *, required_in_ci: bool = True) -> NoReturn:
    """Skip the test (developer's machine) or fail it (CI, unless ``required_in_ci`` is False:
    only for a tool no package installs, whose own switch says when it is required)."""
    if in_ci() and required_in_ci:
        pytest.fail(f"{why} (CI must not skip: install it, `make debs`)", pytrace=False)
    pytest.skip(why)


def ran_external(what: str) -> None:
    """Record that the running test uses a real server or tool (see the ``integration`` rule)."""
    _RAN.append(what)


def need_tool(*names: str) -> str:
    """Path of the first of ``names`` on PATH, recorded as used; ``missing`` when none is."""
    for name in names:
        path = shutil.which(name)
        if path is not None:
            ran_external(name)
            return path
    missing(f"{' / '.join(names)} is not installed (make debs installs it)")


def need_module(name: str) -> ModuleType:
    """An optional third-party package (torch, lightning, ...): ``missing`` when it does not import."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        missing(f"optional package {name} is not installed ({e})")


def shared_path(*parts: str) -> Path:
    """A path under ../shared; ``missing`` when ../shared is absent."""
    if not SHARED.is_dir():
        missing(f"../shared is absent ({SHARED}): real-data tests need it")
    return SHARED.joinpath(*parts)


@pytest.fixture
def shared() -> Path:
    return shared_path()


@pytest.fixture
def scenarios_dir() -> Path:
    return shared_path("scenarios")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _RAN.clear()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    result = yield
    if item.get_closest_marker("integration") is not None and not _RAN \
            and not set(getattr(item, "fixturenames", ())) & SERVER_FIXTURES:
        pytest.fail(f"{item.nodeid} is marked integration but ran no server or tool: request one of "
                    f"{sorted(SERVER_FIXTURES)} or locate it with tests.conftest.need_tool", pytrace=False)
    return result
