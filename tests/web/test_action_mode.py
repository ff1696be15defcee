"""How ``serve`` carries out actions: a dry run unless a person says otherwise, in the rule file
(``dry_run: false``) or through ``POST /api/v1/actions/mode`` with the token; every switch is a
record in the audit log. The GPU that acts is the one pcie_riser's truth.json names."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from suanli.timefmt import parse_time
from suanli.web.service import Service
from suanli.web.settings import Backend, ServeConfig
from tests.web._serve import env, scenario_db, truth
from tests.web._server import AUTH

pytestmark = [pytest.mark.slow]

RULES = """\
rules:
  - name: aer_storm
    scope: gpu
    category: pcie_riser
    conditions: {any: [pcie_aer_errors > 100/min for 2m]}
    actions:
      - open_ticket: check the riser
executors:
  open_ticket: {kind: log}
actions:
  dry_run: DRY
"""


@pytest.fixture(scope="module")
def base_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scenario_db(tmp_path_factory.mktemp("mode") / "pcie.duckdb")


def _service(base_db: Path, tmp: Path, dry: bool) -> tuple[Service, Path]:
    db = tmp / "c.duckdb"
    shutil.copy(base_db, db)
    rules = tmp / "rules.yaml"
    rules.write_text(RULES.replace("DRY", "true" if dry else "false"))
    end = parse_time(truth()["window"]["end"])
    cfg = ServeConfig(backend=Backend(path=str(db)), rules=(str(rules),))
    return Service(cfg, env(), say=lambda _l: None, clock=lambda: end), db


def _audit(db: Path) -> list[dict[str, Any]]:
    path = Path(str(db) + ".audit.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture()
def live(base_db: Path, tmp_path: Path) -> Iterator[tuple[Service, Path, TestClient]]:
    svc, db = _service(base_db, tmp_path, dry=False)
    try:
        with TestClient(svc.build_app()) as client:
            yield svc, db, client
    finally:
        svc.close()


def test_the_rule_file_says_live_and_the_faulty_gpu_gets_its_ticket(live: tuple[Service, Path, TestClient]) -> None:
    svc, db, client = live
    assert svc.action_mode == "live"
    svc.step()
    root = truth()["faults"][0]["root_cause"]["id"]
    acts = client.get("/api/v1/actions", headers=AUTH).json()
    assert acts["mode"] == "live"
    done = [a for a in acts["rows"] if a["decision"] == "executed"]
    assert [(a["action"], a["target"]) for a in done] == [("open_ticket", root)]
    assert any(r.get("decision") == "executed" and r.get("target") == root for r in _audit(db))


def test_switching_needs_the_token_and_is_audited(live: tuple[Service, Path, TestClient]) -> None:
    svc, db, client = live
    body = {"mode": "dry_run", "reason": "maintenance window", "who": "sre-on-call"}
    assert client.post("/api/v1/actions/mode", json=body).status_code == 401
    assert svc.action_mode == "live"
    assert client.post("/api/v1/actions/mode", json={**body, "mode": "yolo"}, headers=AUTH).status_code == 422
    r = client.post("/api/v1/actions/mode", json=body, headers=AUTH)
    assert r.status_code == 200 and r.json()["mode"] == "dry_run" == svc.action_mode
    (rec,) = [x for x in _audit(db) if x.get("event") == "mode"]
    assert (rec["mode"], rec["previous"], rec["who"], rec["reason"]) == ("dry_run", "live", "sre-on-call",
                                                                         "maintenance window")
    svc.step()
    acts = client.get("/api/v1/actions", headers=AUTH).json()
    assert acts["mode"] == "dry_run" and {a["decision"] for a in acts["rows"]} == {"dry_run"}


def test_without_a_word_it_is_a_dry_run(base_db: Path, tmp_path: Path) -> None:
    svc, db = _service(base_db, tmp_path, dry=True)
    try:
        svc.step()
        assert svc.action_mode == "dry_run"
        decided = [rec for recs in svc.stepper.pipeline.decisions.values() for rec in recs]
        assert decided and {r["decision"] for r in decided} == {"dry_run"}
        assert {r["id"] for r in decided} <= {r["id"] for r in _audit(db)}     # audited beside the db
    finally:
        svc.close()
