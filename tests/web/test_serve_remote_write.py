"""``serve``'s ``remote_write:``: after each step the derived series and the topology info series
land in a real Prometheus 2.42 (its remote-write receiver) and are queryable; a receiver that is
down costs the loop nothing and the samples wait in the buffer. Counts come from inventory.yaml."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from suanli.timefmt import parse_time
from suanli.web import load_serve_config
from suanli.web.service import Service
from tests.backends.servers import Server, free_port, start_prometheus
from tests.conftest import shared_path
from tests.web._serve import env, scenario_db, truth

pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def base_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scenario_db(tmp_path_factory.mktemp("rw") / "pcie.duckdb")


@pytest.fixture()
def prom(tmp_path: Path) -> Iterator[Server]:
    server = start_prometheus(tmp_path / "prom", tmp_path / "prom" / "data")
    yield server
    server.stop()


def _service(base_db: Path, tmp: Path, url: str) -> Service:
    db = tmp / "c.duckdb"
    shutil.copy(base_db, db)
    cfg = tmp / "serve.yaml"
    cfg.write_text(f"backend: {{path: {db}}}\nremote_write:\n  - url: {url}\n    timeout: 2s\n")
    end = parse_time(truth()["window"]["end"])
    return Service(load_serve_config(cfg), env(), say=lambda _l: None, clock=lambda: end)


def _query(server: Server, q: str, t: float) -> list[dict[str, Any]]:
    r = httpx.get(server.url + "/api/v1/query", params={"query": q, "time": f"{t:.3f}"}, timeout=30)
    r.raise_for_status()
    return list(r.json()["data"]["result"])


@pytest.mark.integration
def test_each_step_lands_in_prometheus(base_db: Path, tmp_path: Path, prom: Server) -> None:
    svc = _service(base_db, tmp_path, prom.url + "/api/v1/write")
    try:
        svc.step()
        doc = svc.stepper.stats.diagnosis
        (status,) = svc.status()["remote_write"]
        assert status["sent"] > 0 and status["pending"] == 0 and status["errors"] == [], status
    finally:
        svc.close()
    t = parse_time(doc["window"]["end"])
    inv = yaml.safe_load((shared_path("scenarios", "pcie_riser") / "inventory.yaml").read_text())
    gpus = sum(len(n["gpus"]) for r in inv["racks"] for n in r["nodes"])
    assert int(float(_query(prom, "count(suanli_gpu_info)", t)[0]["value"][1])) == gpus
    for job in doc["efficiency"]["jobs"]:
        (mfu,) = _query(prom, f'suanli_job_mfu_ratio{{job_id="{job["id"]}"}}', t)
        assert float(mfu["value"][1]) == pytest.approx(job["mfu"], rel=1e-9)
    fault = truth()["faults"][0]
    (inc,) = _query(prom, "suanli_incident_open", t)
    assert (inc["metric"]["category"], inc["metric"]["root_id"], float(inc["value"][1])) == (
        fault["category"], fault["root_cause"]["id"], 1.0)


def test_a_receiver_that_is_down_costs_nothing_and_keeps_the_samples(base_db: Path, tmp_path: Path) -> None:
    svc = _service(base_db, tmp_path, f"http://127.0.0.1:{free_port()}/api/v1/write")
    try:
        svc.step()
        (status,) = svc.status()["remote_write"]
        assert status["sent"] == 0 and status["pending"] > 0 and status["dropped"] == 0
        assert "ConnectError" in status["errors"][0]
        assert svc.stepper.stats.errors == 0 and svc.stepper.incidents()      # the analysis went on
    finally:
        svc.close()
