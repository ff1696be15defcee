"""``suanli demo`` (what ``make demo`` runs): live into ``serve`` by default, batch with ``--once``;
every fault the simulator says it injected (its truth.json) is found, and nothing else."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli.helpers import run

pytestmark = [pytest.mark.slow]


def _faults(out: Path) -> set[tuple[str, str]]:
    truth = json.loads((out / "scenario" / "truth.json").read_text())
    return {(f["category"], f["root_cause"]["id"]) for f in truth["faults"]}


def test_once_is_the_batch_demo(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    proc = run("demo", "--once", "--out", out, timeout_s=600)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "diagnosis.json").read_text())
    assert {(i["category"], i["root_cause"]["id"]) for i in doc["incidents"]} == _faults(out)
    assert (out / "rca.html").stat().st_size > 100_000 and "console" not in proc.stdout


def test_the_default_demo_is_live(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    proc = run("demo", "--speed", "10", "--out", out, timeout_s=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"console http://127\.0\.0\.1:\d+/console", proc.stdout), proc.stdout
    opened = set(re.findall(r"^opened inc-[0-9a-f]{6} (\S+) at (\S+) ", proc.stdout, re.M))
    assert opened == _faults(out), proc.stdout
    for category, root in _faults(out):
        assert re.search(rf"^injected {category} at {re.escape(root)}: found inc-", proc.stdout, re.M), proc.stdout
    assert sorted(p.name for p in (out / "logs").iterdir()) == sorted(p.name for p in (out / "scenario").glob("*.log"))
