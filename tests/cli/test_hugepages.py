"""NumPy's huge-page advice is off in suanli's processes unless the user asked for it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from numpy._core import multiarray

from suanli.cli.hugepages import avoid_hugepage_faults


@pytest.fixture
def advice() -> Iterator[None]:
    before = multiarray._get_madvise_hugepage()
    multiarray._set_madvise_hugepage(True)
    yield
    multiarray._set_madvise_hugepage(before)


def test_turned_off(advice: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE", raising=False)
    assert avoid_hugepage_faults() is True
    assert multiarray._get_madvise_hugepage() is False


@pytest.mark.parametrize("value", ["1", "0"])
def test_the_users_setting_wins(advice: None, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("NUMPY_MADVISE_HUGEPAGE", value)
    assert avoid_hugepage_faults() is False
    assert multiarray._get_madvise_hugepage() is True        # what NumPy set at import stays


_PROBE = ("import sys; from numpy._core import multiarray as m; from suanli.cli import main\n"
          "sys.argv = ['suanli', '--version']\n"
          "try:\n    main()\nexcept SystemExit:\n    pass\n"
          "print('advice', m._get_madvise_hugepage(), file=sys.stderr)\n")


@pytest.mark.parametrize(("env", "expected"), [(None, "advice False"), ("1", "advice True")])
def test_the_console_script_applies_it(env: str | None, expected: str) -> None:
    child = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    if env is not None:
        child["NUMPY_MADVISE_HUGEPAGE"] = env
    run = subprocess.run([sys.executable, "-c", _PROBE], env=child, capture_output=True, text=True, timeout=120)
    assert expected in run.stderr.splitlines(), run.stderr
