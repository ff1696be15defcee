"""``suanli actions reset``: a real runner trips the breaker into a real audit log; the console
script (a subprocess, as a person runs it) refuses a wrong id or a missing who/why, then closes the
trip, and a runner started afterwards acts again."""

from __future__ import annotations

import json
from pathlib import Path

from suanli.rules import ActionRunner, ActionsConfig, AuditLog
from tests.cli.helpers import run
from tests.rules.actions_support import NODES, Recorder, alert, fleet

TEN = NODES[:10]
OPEN = ActionsConfig(dry_run=False, max_drain_fraction=1.0, max_job_drain_fraction=1.0)


def _trip(db: Path) -> str:
    log = Path(str(db) + ".audit.jsonl")
    runner = ActionRunner(OPEN, fleet(TEN), {"drain_node": Recorder()}, AuditLog(log))
    out = runner.handle([alert(n, fired_at=float(i)) for i, n in enumerate(TEN[:6])], now=60.0)
    assert [r["decision"] for r in out] == ["executed"] * 5 + ["breaker_open"]   # 10 * 0.5 = 5 nodes
    (trip,) = [json.loads(x) for x in log.read_text().splitlines() if '"event": "trip"' in x]
    return str(trip["trip_id"])


def test_reset_needs_the_trip_id_and_who_and_why(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    trip_id = _trip(db)
    log = Path(str(db) + ".audit.jsonl")
    before = log.read_bytes()
    wrong = run("actions", "reset", "--confirm", "00000000", "--by", "alice", "--reason", "fixed", "--db", db)
    assert wrong.returncode == 2 and "no open breaker trip '00000000'" in wrong.stderr
    assert trip_id in wrong.stderr and len(wrong.stderr.strip().splitlines()) == 1
    blank = run("actions", "reset", "--confirm", trip_id, "--by", " ", "--reason", "fixed", "--db", db)
    assert blank.returncode == 2 and "who resets it and why" in blank.stderr
    assert log.read_bytes() == before                                         # refused: nothing written
    ok = run("actions", "reset", "--confirm", trip_id, "--by", "alice", "--reason", "runaway rule fixed", "--db", db)
    assert ok.returncode == 0, ok.stderr
    assert f"trip {trip_id}" in ok.stdout and "alice" in ok.stdout
    last = json.loads(log.read_text().splitlines()[-1])
    assert (last["event"], last["trip_id"], last["by"], last["reason"]) == ("reset", trip_id, "alice",
                                                                              "runaway rule fixed")
    again = run("actions", "reset", "--confirm", trip_id, "--by", "alice", "--reason", "twice", "--db", db)
    assert again.returncode == 2 and "no open breaker trip" in again.stderr  # a spent id
    rec = Recorder()
    runner = ActionRunner(OPEN, fleet(TEN), {"drain_node": rec}, AuditLog(log))
    fresh = runner.handle([alert("n09", fired_at=1e10)], now=1e10)
    assert [r["decision"] for r in fresh] == ["executed"] and len(rec.calls) == 1


def test_reset_without_an_audit_log_is_one_line(tmp_path: Path) -> None:
    res = run("actions", "reset", "--confirm", "x", "--by", "a", "--reason", "b", "--db", tmp_path / "none.duckdb")
    assert res.returncode == 2 and "no audit log" in res.stderr and "none.duckdb.audit.jsonl" in res.stderr
