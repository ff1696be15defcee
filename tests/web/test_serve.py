"""``suanli serve`` end to end, as a process: ``--once``, the JSON API, the token, SIGTERM, and a
``kill -9`` restart that keeps every incident's id and every accepted record, exactly once.

The scenario is the public ``pcie_riser`` folder; what an incident must say comes from its
``truth.json`` (written by the independent simulator), never from suanli's own output."""

from __future__ import annotations

import json
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest

from suanli.timefmt import parse_time
from tests.web._serve import Serve, scenario_db, start_serve, suanli, truth
from tests.web._server import AUTH

pytestmark = [pytest.mark.slow]   # suanli's own servers: no third-party one to start

N_SPANS = 120
SPAN_T0 = parse_time("2026-03-17T17:40:00Z")
"""Inside the scenario's window, so the pushed spans do not move the data's clock."""


@pytest.fixture(scope="module")
def base_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scenario_db(tmp_path_factory.mktemp("serve") / "pcie.duckdb")


@pytest.fixture()
def db(base_db: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "cluster.duckdb"
    shutil.copy(base_db, copy)
    return copy


def _spans_body(n: int) -> dict[str, Any]:
    spans = [{"traceId": f"{i + 1:032x}", "spanId": f"{i + 1:016x}", "name": "restart_probe",
              "startTimeUnixNano": str(int((SPAN_T0 + i) * 1e9)), "endTimeUnixNano": str(int((SPAN_T0 + i + 0.5) * 1e9)),
              "attributes": [{"key": "job.id", "value": {"stringValue": "restart-probe"}}]} for i in range(n)]
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": spans}]}]}


def _send_spans(srv: Serve, n: int) -> None:
    r = httpx.post(srv.url + "/v1/traces", json=_spans_body(n), headers=AUTH, timeout=30)
    assert r.status_code == 200, r.text
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        spans = srv.get("/api/v1/ingest/status").json()["receivers"]["spans"]
        if spans["pending"] == 0 and spans["delivered"] >= n:
            return
        time.sleep(0.1)
    raise AssertionError(f"spans not delivered: {spans}")


def _span_count(db: Path) -> int:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return int(con.execute("SELECT count(*) FROM spans").fetchall()[0][0])
    finally:
        con.close()


def test_once_opens_the_true_incident_and_a_second_run_keeps_it(db: Path) -> None:
    fault = truth()["faults"][0]
    first = suanli("serve", "--db", str(db), "--once", "--json")
    assert first.returncode == 0, first.stderr
    incs = json.loads(first.stdout)["incidents"]
    assert [(i["category"], i["root_cause"]["id"]) for i in incs] == [(fault["category"], fault["root_cause"]["id"])]
    assert f"opened {incs[0]['id']}" in first.stderr
    start, onset = parse_time(incs[0]["start"]), parse_time(fault["start"])
    assert onset - 60 <= start <= onset + 120, (incs[0]["start"], fault["start"])
    second = suanli("serve", "--db", str(db), "--once", "--json")
    again = json.loads(second.stdout)["incidents"]
    assert [i["id"] for i in again] == [incs[0]["id"]]
    assert [h["change"] for h in again[0]["history"]] == ["opened"]      # updated, not opened twice
    assert "opened" not in second.stderr


def test_state_changes_need_the_token(db: Path, tmp_path: Path) -> None:
    srv = start_serve(tmp_path, db)
    try:
        gpu = truth()["faults"][0]["root_cause"]["id"]
        body = {"gpu": gpu, "state": "healthy", "reason": "riser reseated", "who": "test"}
        for path, payload in (("/api/v1/overrides", body), ("/api/v1/reload", {}), ("/v1/traces", _spans_body(1))):
            r = httpx.post(srv.url + path, json=payload, timeout=30)
            assert r.status_code == 401, (path, r.status_code)
            assert r.headers["www-authenticate"] == "Bearer"
        assert httpx.get(srv.url + "/api/v1/incidents", timeout=30).status_code == 401
        assert srv.get("/api/v1/overrides").json()["overrides"] == []
        ok = httpx.post(srv.url + "/api/v1/overrides", json=body, headers=AUTH, timeout=30)
        assert ok.status_code == 200, ok.text
        kept = srv.get("/api/v1/overrides").json()["overrides"]
        assert [(o["gpu_id"], o["state"], o["who"]) for o in kept] == [(gpu, "healthy", "test")]
        bad = httpx.post(srv.url + "/api/v1/overrides", json={**body, "gpu": "node-999/gpu0"}, headers=AUTH, timeout=30)
        assert bad.status_code == 400
    finally:
        assert srv.stop() == 0


def test_kill_9_and_restart_keep_incidents_and_records_exactly_once(db: Path, tmp_path: Path) -> None:
    before = _span_count(db)
    srv = start_serve(tmp_path, db)
    try:
        opened = srv.get("/api/v1/incidents").json()["incidents"]
        assert len(opened) == 1
        _send_spans(srv, N_SPANS)
    finally:
        srv.stop(signal.SIGKILL)
    assert srv.proc.returncode == -signal.SIGKILL
    again = start_serve(tmp_path, db)
    try:
        after = again.get("/api/v1/incidents").json()["incidents"]
        assert [(i["id"], i["state"], i["start"]) for i in after] == [(i["id"], i["state"], i["start"]) for i in opened]
        assert [h["change"] for h in after[0]["history"]] == ["opened"]
        _send_spans(again, N_SPANS)             # the same spans again: stored once
    finally:
        assert again.stop(signal.SIGTERM) == 0
    assert "stopped" in again.log.read_text()
    assert _span_count(db) == before + N_SPANS
