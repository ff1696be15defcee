"""The CI no-skip policy of tests/conftest.py, run on small test files in a scratch folder: a missing
tool skips on a developer's machine and fails in CI; ``CI`` values "", "0" and "false" are not CI;
an ``integration`` test that runs no server fails even when its asserts pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import in_ci

pytest_plugins = ("pytester",)

CONFTEST = (Path(__file__).parent / "conftest.py").read_text(encoding="utf-8")
MISSING_TOOL = """
from conftest import need_tool

def test_uses_a_tool():
    need_tool("surely-not-installed-suanli-tool")
"""
INTEGRATION = """
import pytest
from conftest import need_tool

@pytest.mark.integration
def test_marked_but_runs_nothing():
    assert 1 + 1 == 2

@pytest.mark.integration
def test_marked_and_runs_a_tool():
    assert need_tool("sh")
"""
INI = "[pytest]\nmarkers =\n    integration: talks to a real server\n"


@pytest.mark.parametrize(("ci", "is_ci"), [("true", True), ("1", True), ("yes", True), ("", False),
                                           ("0", False), ("false", False), (" FALSE ", False), (None, False)])
def test_what_counts_as_ci(monkeypatch: pytest.MonkeyPatch, ci: str | None, is_ci: bool) -> None:
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    assert in_ci() is is_ci


@pytest.mark.parametrize(("ci", "outcome"), [("true", "failed"), ("false", "skipped")])
def test_a_missing_tool_fails_only_in_ci(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                         ci: str, outcome: str) -> None:
    monkeypatch.setenv("CI", ci)
    pytester.makeconftest(CONFTEST)
    pytester.makeini(INI)
    pytester.makepyfile(test_tool=MISSING_TOOL)
    got = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    got.assert_outcomes(**{outcome: 1})


def test_an_integration_test_must_run_a_server(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makeini(INI)
    pytester.makepyfile(test_integration=INTEGRATION)
    got = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    got.assert_outcomes(passed=1, failed=1)
    got.stdout.fnmatch_lines(["*test_marked_but_runs_nothing*marked integration but ran no server or tool*"])


def test_no_first_party_import_is_skippable() -> None:
    # importorskip of suanli modules would turn a broken import into a skip: none is left
    offenders = [str(p) for p in Path(__file__).parent.rglob("*.py")
                 if p.name != Path(__file__).name and 'importorskip("suanli' in p.read_text(encoding="utf-8")]
    assert offenders == []
