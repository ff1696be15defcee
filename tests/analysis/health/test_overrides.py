"""Operator overrides: append-only audit file, newest wins, bad lines are clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from suanli.analysis.health.overrides import latest_overrides, load_overrides, record_override
from suanli.errors import InputError


def test_record_and_load_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "audit" / "overrides.jsonl"
    record_override(path, "node-001/gpu3", "retired", "RMA opened", "alice", now=1000.0)
    record_override(path, "node-001/gpu3", "healthy", "reseated, dcgmi diag r3 passed", "bob", now=2000.0)
    lines = path.read_text().splitlines()
    assert len(lines) == 2                      # append-only: both records kept
    assert json.loads(lines[0])["when"] == "1970-01-01T00:16:40Z"
    got = load_overrides(path)
    assert [o.state for o in got] == ["retired", "healthy"]
    assert latest_overrides(got)["node-001/gpu3"].who == "bob"


def test_bad_state_and_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "o.jsonl"
    with pytest.raises(InputError, match="state"):
        record_override(path, "node-001/gpu0", "fine", "x", "me")
    record_override(path, "node-001/gpu0", "healthy", "ok", "me", now=1.0)
    with path.open("a") as f:
        f.write('{"gpu_id": "node-001/gpu1"}\n')
    with pytest.raises(InputError, match=r"o.jsonl:2"):
        load_overrides(path)


def test_missing_file_is_empty(tmp_path: Path) -> None:
    assert load_overrides(tmp_path / "none.jsonl") == []
