"""docs/safety.md names the test that holds each promise: every test it names exists, and every
promise row of the Actions section names at least one."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "safety.md").read_text(encoding="utf-8")
REF = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def test_every_named_test_exists() -> None:
    refs = REF.findall(DOC)
    assert len(refs) >= 30
    missing = [f"{f}::{name}" for f, name in refs
               if not (ROOT / f).exists() or f"def {name}(" not in (ROOT / f).read_text(encoding="utf-8")]
    assert missing == []


def test_every_actions_promise_names_a_test() -> None:
    section = DOC.split("## Actions", 1)[1].split("\n## ", 1)[0]
    rows = [r for r in section.splitlines() if r.startswith("| ") and not r.startswith(("| promise", "| ---"))]
    assert len(rows) >= 20
    assert [r for r in rows if not REF.search(r)] == []
