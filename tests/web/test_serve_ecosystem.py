"""``serve`` telling the ecosystem, against the real servers from Debian: Prometheus scrapes
``/metrics`` (``promtool check metrics`` accepts it, PromQL returns the MFU series) and
Alertmanager receives the incident through its v2 API, then sees it resolved."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from suanli.timefmt import parse_time
from suanli.web import load_serve_config
from suanli.web.service import Service
from tests.backends.servers import Server, _spawn, _wait_ready, free_port, need
from tests.web._serve import env, scenario_db, start_alertmanager, start_serve, suanli, truth
from tests.web._server import TOKEN

pytestmark = [pytest.mark.slow, pytest.mark.integration]


@pytest.fixture(scope="module")
def base_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scenario_db(tmp_path_factory.mktemp("eco") / "pcie.duckdb")


def _prometheus(workdir: Path, target: str) -> Server:
    workdir.mkdir(parents=True, exist_ok=True)
    token = workdir / "token"
    token.write_text(TOKEN)
    config = workdir / "prometheus.yml"
    config.write_text(f"""global:
  scrape_interval: 1s
scrape_configs:
  - job_name: suanli
    authorization:
      credentials_file: {token}
    static_configs:
      - targets: ["{target}"]
""")
    port = free_port()
    argv = [need("prometheus"), f"--config.file={config}", f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"]
    server = Server("prometheus", f"http://127.0.0.1:{port}", _spawn("prometheus", argv, workdir / "p.log"),
                    workdir / "p.log")
    _wait_ready(server, "/-/ready")
    return server


def _query(prom: Server, promql: str, timeout_s: float = 60) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        res = httpx.get(prom.url + "/api/v1/query", params={"query": promql}, timeout=10).json()["data"]["result"]
        if res:
            return list(res)
        time.sleep(0.5)
    raise AssertionError(f"no result for {promql}")


def test_prometheus_scrapes_metrics_and_promtool_accepts_them(base_db: Path, tmp_path: Path) -> None:
    copy = tmp_path / "c.duckdb"
    shutil.copy(base_db, copy)
    batch = suanli("diagnose", "--db", str(copy), "--json")      # the batch pipeline, before serve locks the file
    assert batch.returncode == 0, batch.stderr
    want = {j["id"]: j["mfu"] for j in json.loads(batch.stdout)["efficiency"]["jobs"]}
    srv = start_serve(tmp_path, copy)
    prom = None
    try:
        text = srv.get("/metrics").text
        lint = subprocess.run([need("promtool"), "check", "metrics"], input=text, capture_output=True, text=True)
        assert lint.returncode == 0, lint.stdout + lint.stderr
        prom = _prometheus(tmp_path / "prom", srv.url.removeprefix("http://"))
        got = {r["metric"]["job_id"]: float(r["value"][1]) for r in _query(prom, "suanli_job_mfu_ratio")}
        assert got == pytest.approx(want, rel=1e-9)
        cat = truth()["faults"][0]["category"]
        open_ = _query(prom, f'suanli_incidents_open{{category="{cat}"}}')
        assert float(open_[0]["value"][1]) == 1.0
        up = _query(prom, 'up{job="suanli"}')
        assert float(up[0]["value"][1]) == 1.0
    finally:
        if prom is not None:
            prom.stop()
        assert srv.stop() == 0


def _am_alerts(am: Server) -> list[dict[str, Any]]:
    return list(httpx.get(am.url + "/api/v2/alerts", timeout=10).json())


def test_alertmanager_receives_the_incident_and_its_resolution(base_db: Path, tmp_path: Path) -> None:
    copy = tmp_path / "c.duckdb"
    shutil.copy(base_db, copy)
    am = start_alertmanager(tmp_path / "am")
    cfg_file = tmp_path / "serve.yaml"
    cfg_file.write_text(f"backend: {{path: {copy}}}\nalertmanager:\n  - url: {am.url}\n")
    fault = truth()["faults"][0]
    clock = [parse_time(truth()["window"]["end"])]
    said: list[str] = []
    svc = Service(load_serve_config(cfg_file), env(), say=said.append, clock=lambda: clock[0])
    try:
        svc.step()
        alerts = _am_alerts(am)
        assert len(alerts) == 1, alerts
        a = alerts[0]
        inc = svc.stepper.incidents()[0]
        assert {k: a["labels"][k] for k in ("alertname", "category", "root_kind", "root_id", "incident_id")} == {
            "alertname": "SuanliIncident", "category": fault["category"], "root_kind": fault["root_cause"]["kind"],
            "root_id": fault["root_cause"]["id"], "incident_id": inc.incident.id}
        assert a["status"]["state"] == "active"
        assert parse_time(a["startsAt"]) == pytest.approx(inc.incident.start, abs=1.0)      # RFC 3339 to the second
        assert "GPU-hours lost" in a["annotations"]["summary"]
        assert a["annotations"]["runbook_url"].endswith(f"/console/runbooks/{fault['category']}")
        assert a["annotations"]["evidence"].splitlines()[0] == inc.incident.evidence[0]
        # the fault's data ends: a step past the window and the tracker's resolve delay resolves it
        clock[0] += svc.config.live.window_s + svc.config.tracker.resolve_after_s + 60
        svc.step()
        assert svc.stepper.incidents()[0].incident.state == "resolved"
        assert said == [f"opened {inc.incident.id} {fault['category']} at {fault['root_cause']['id']} "
                        f"({inc.incident.impact.gpus} GPUs, ${inc.incident.impact.lost_cost:,.2f} lost)",
                        said[1]] and said[1].startswith(f"resolved {inc.incident.id}")
        assert [x for x in _am_alerts(am) if x["status"]["state"] == "active"] == []
    finally:
        svc.close()
        am.stop()
