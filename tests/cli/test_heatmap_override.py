"""`diagnose --heatmap` writes the latency heatmap; `gpu-override` is stored, audited and shown."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.cli.helpers import invoke
from tests.conftest import shared_path


def test_heatmap_html_marks_the_slow_node(tmp_path: Path) -> None:
    folder = shared_path("scenarios", "switch_port_errors")
    out = tmp_path / "latency.html"
    res = invoke("diagnose", folder, "--heatmap", out)
    assert res.exit_code == 0, res.stderr
    html = out.read_text()
    assert "Plotly.newPlot" in html                              # self-contained: no script from a CDN
    assert not re.search(r"<script[^>]*\bsrc=[\"']?https?://", html)
    # the bad port leaf-02/p16 is node-008's only cable: its row and column are the slow pairs
    assert "node-008" in html and "14 slow pairs" in html


def test_override_is_stored_audited_and_shown(tmp_path: Path) -> None:
    folder = shared_path("scenarios", "pcie_riser")
    db = tmp_path / "c.duckdb"
    assert invoke("ingest", folder, "--db", db).exit_code == 0
    res = invoke("gpu-override", "node-002/gpu5", "--state", "healthy", "--reason", "riser reseated",
                 "--who", "alice", "--db", db)
    assert res.exit_code == 0, res.stderr
    log = [json.loads(x) for x in db.with_suffix(".overrides.jsonl").read_text().splitlines()]
    assert [(e["gpu_id"], e["state"], e["who"], e["reason"]) for e in log] == [
        ("node-002/gpu5", "healthy", "alice", "riser reseated")]
    got = json.loads(invoke("diagnose", "--db", db, "--json").stdout)
    shown = [p for p in got["predictions"] if p["id"] == "node-002/gpu5"]
    assert shown and shown[0]["override"]["state"] == "healthy"
    assert all("override" not in p for p in got["predictions"] if p["id"] != "node-002/gpu5")


def test_alertmanager_webhooks_join_the_diagnosis(tmp_path: Path) -> None:
    folder = shared_path("scenarios", "switch_port_errors")
    uuid = "GPU-01a4e8f7-a2b3-91bb-aa86-4257d9ab58a2"            # node-004/gpu2 in that inventory
    payload = {"version": "4", "status": "firing", "alerts": [
        {"status": "firing", "startsAt": "2026-03-10T01:41:00Z", "endsAt": "0001-01-01T00:00:00Z",
         "labels": {"alertname": "GPUOverTemperature", "UUID": uuid, "category": "gpu_thermal"}}]}
    hooks = tmp_path / "hooks.jsonl"
    hooks.write_text(json.dumps(payload) + "\n")
    res = invoke("diagnose", folder, "--json", "--alerts", hooks)
    assert res.exit_code == 0, res.stderr
    got = {(i["category"], i["root_cause"]["id"]) for i in json.loads(res.stdout)["incidents"]}
    assert got == {("switch_port_errors", "leaf-02/p16"), ("gpu_thermal", "node-004/gpu2")}
    hooks.write_text('{"version": "4", "alerts": [}\n')
    bad = invoke("diagnose", folder, "--json", "--alerts", hooks)
    assert bad.exit_code == 2 and "hooks.jsonl:1" in bad.stderr
