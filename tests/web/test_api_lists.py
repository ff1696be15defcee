"""The API's lists on a served public scenario (switch_port_errors, in process): every count comes
from the scenario's own files (inventory.yaml, truth.json) or the shipped rule file, read here as
plain YAML, never from suanli's output."""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from suanli.timefmt import parse_time
from suanli.web.service import Service
from suanli.web.settings import Backend, ServeConfig
from tests.conftest import shared_path
from tests.web._serve import env, scenario_db, truth
from tests.web._server import AUTH

SCENARIO = "switch_port_errors"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    db = scenario_db(tmp_path_factory.mktemp("lists") / "spe.duckdb", SCENARIO)
    end = parse_time(truth(SCENARIO)["window"]["end"])
    svc = Service(ServeConfig(backend=Backend(path=str(db))), env(), say=lambda _l: None, clock=lambda: end)
    try:
        svc.step()
        with TestClient(svc.build_app()) as c:
            yield c
    finally:
        svc.close()


def _inventory() -> dict[str, Any]:
    return dict(yaml.safe_load((shared_path("scenarios", SCENARIO) / "inventory.yaml").read_text()))


def _get(client: TestClient, path: str) -> dict[str, Any]:
    r = client.get(path, headers=AUTH)
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_gpus_and_racks_match_the_inventory(client: TestClient) -> None:
    inv = _inventory()
    per_rack = {r["id"]: sum(len(n["gpus"]) for n in r["nodes"]) for r in inv["racks"]}
    page = _get(client, "/api/v1/gpus?limit=5&sort=health_score")
    assert page["total"] == sum(per_rack.values()) and len(page["rows"]) == 5
    scores = [r["health_score"] for r in page["rows"]]
    assert scores == sorted(scores)
    racks = _get(client, "/api/v1/gpus/racks")["rows"]
    assert {r["rack"]: r["gpus"] for r in racks} == per_rack
    assert _get(client, "/api/v1/gpus?q=rack-02&limit=0")["total"] == per_rack["rack-02"]


def test_the_faulty_port_tops_the_port_list(client: TestClient) -> None:
    root = truth(SCENARIO)["faults"][0]["root_cause"]
    top = _get(client, "/api/v1/fabric/ports?sort=crc_ratio&desc=true&limit=2")["rows"]
    assert (top[0]["id"], top[0]["kind"]) == (root["id"], root["kind"])
    assert top[0]["crc_ratio"] > 0 and top[1]["crc_ratio"] < top[0]["crc_ratio"]


def test_fabric_heatmap_is_per_node_for_a_small_cluster(client: TestClient) -> None:
    nodes = sorted(n["id"] for r in _inventory()["racks"] for n in r["nodes"])
    view = _get(client, "/api/v1/fabric")
    assert view["by"] == "node" and sorted(view["labels"]) == nodes
    assert len(view["ratio"]) == len(nodes) and all(len(row) == len(nodes) for row in view["ratio"])
    assert _get(client, "/api/v1/fabric?by=rack")["labels"] == sorted(r["id"] for r in _inventory()["racks"])
    assert client.get("/api/v1/fabric?by=pod", headers=AUTH).status_code == 422


def test_rules_list_every_rule_of_the_shipped_pack_and_the_firing_one(client: TestClient) -> None:
    text = resources.files("suanli.rules").joinpath("default_rules.yaml").read_text()
    names = [r["name"] for r in yaml.safe_load(text)["rules"]]
    rules = _get(client, f"/api/v1/rules?limit={len(names)}")
    assert rules["total"] == len(names) and sorted(r["name"] for r in rules["rows"]) == sorted(names)
    root = truth(SCENARIO)["faults"][0]["root_cause"]["id"]
    alerts = _get(client, "/api/v1/rules/alerts?limit=1000")["rows"]
    firing = [a for a in alerts if a["state"] == "firing" and a["entity"]["id"] == root]
    assert firing, alerts
    by_rule = {r["name"]: r for r in rules["rows"]}
    for a in firing:
        assert by_rule[a["rule"]]["firing"] >= 1


def test_jobs_actions_and_check(client: TestClient) -> None:
    jobs = _get(client, "/api/v1/jobs")
    assert sorted(j["id"] for j in jobs["rows"]) == sorted(j["id"] for j in _inventory()["jobs"])
    actions = _get(client, "/api/v1/actions")
    assert actions["mode"] == "dry_run" and all(a["decision"] != "executed" for a in actions["rows"])
    check = _get(client, "/api/v1/check")
    assert set(check["maturity"]) == {"coverage", "correlation", "decision"}
    assert all(1 <= m["level"] <= 5 for m in check["maturity"].values())
    assert check["ok"] is (check["problems"] == [])


def test_lists_need_the_token_and_reject_bad_pages(client: TestClient) -> None:
    assert client.get("/api/v1/gpus").status_code == 401
    assert client.get("/api/v1/gpus?limit=5000", headers=AUTH).status_code == 422
    assert client.get("/api/v1/gpus?offset=-1", headers=AUTH).status_code == 422


