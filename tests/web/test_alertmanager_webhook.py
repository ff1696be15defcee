"""The Alertmanager webhook receiver, fed by a real Alertmanager (Debian prometheus-alertmanager)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from suanli.incidents.signals import alertmanager_signals
from suanli.inventory import Inventory, load_inventory
from tests.conftest import shared_path
from tests.web._server import AUTH, TOKEN, Recorder, make_app, serving

ALERTMANAGER = "prometheus-alertmanager"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _now(offset_s: float = 0.0) -> str:
    return datetime.fromtimestamp(time.time() + offset_s, tz=UTC).isoformat().replace("+00:00", "Z")


@pytest.fixture(scope="module")
def inv() -> Inventory:
    return load_inventory(shared_path("scenarios", "switch_port_errors", "inventory.yaml"))


@pytest.fixture
def alertmanager() -> str:
    binary = shutil.which(ALERTMANAGER)
    assert binary, f"{ALERTMANAGER} is not installed (make debs installs it)"
    return binary


def _start(binary: str, tmp: Path, webhook: str) -> tuple[subprocess.Popen[bytes], str]:
    (tmp / "token").write_text(TOKEN + "\n")
    (tmp / "am.yml").write_text(f"""
route:
  receiver: suanli
  group_by: [alertname]
  group_wait: 100ms
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: suanli
    webhook_configs:
      - url: {webhook}
        send_resolved: true
        http_config:
          authorization:
            type: Bearer
            credentials_file: {tmp / 'token'}
""")
    port = _free_port()
    proc = subprocess.Popen([binary, f"--config.file={tmp / 'am.yml'}", f"--storage.path={tmp / 'data'}",
                             f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address="],
                            stdout=subprocess.DEVNULL, stderr=(tmp / "am.log").open("wb"))
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/-/ready", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"Alertmanager did not start: {(tmp / 'am.log').read_text()[-2000:]}")


def test_a_real_alertmanager_delivers_firing_and_resolved(alertmanager: str, tmp_path: Path, inv: Inventory) -> None:
    uuid = inv.gpus["node-003/gpu2"].uuid
    labels = {"alertname": "GPUOverTemperature", "UUID": uuid, "Hostname": "node-003", "category": "gpu_thermal",
              "severity": "critical"}
    rec = Recorder()
    with serving(make_app(rec)) as url:
        proc, am = _start(alertmanager, tmp_path, f"{url}/api/v1/ingest/alertmanager")
        try:
            fired = httpx.post(f"{am}/api/v2/alerts", json=[{
                "labels": labels, "annotations": {"summary": "GPU 2 on node-003 at 91 C"},
                "startsAt": _now(-60)}], timeout=5)
            assert fired.status_code == 200, fired.text
            first = rec.wait("alerts", 1)[0]
            resolved = httpx.post(f"{am}/api/v2/alerts", json=[{
                "labels": labels, "startsAt": _now(-60), "endsAt": _now(-1)}], timeout=5)
            assert resolved.status_code == 200
            notes = rec.wait("alerts", 2)
        finally:
            proc.terminate()
            proc.wait(10)
    assert first.payload["status"] == "firing" and first.rejected == 0
    (alert,) = first.payload["alerts"]
    assert alert["labels"] == labels and alert["annotations"]["summary"] == "GPU 2 on node-003 at 91 C"
    (sig,) = alertmanager_signals(first.payload, inv)
    assert (sig.entity_kind, sig.entity_id, sig.category, sig.end) == ("gpu", "node-003/gpu2", "gpu_thermal", None)
    last = notes[-1]
    assert last.payload["status"] == "resolved"
    (gone,) = alertmanager_signals(last.payload, inv)
    assert gone.end is not None and gone.end - gone.start == pytest.approx(59, abs=1.5)


def test_bad_alerts_are_counted_good_ones_kept() -> None:
    rec = Recorder()
    good = {"status": "firing", "labels": {"alertname": "A", "instance": "node-001:9100"},
            "startsAt": "2026-03-10T01:40:00.123456789Z", "endsAt": "0001-01-01T00:00:00Z"}
    payload = {"version": "4", "status": "firing", "receiver": "suanli", "alerts": [
        good, {"status": "pending", "labels": {"alertname": "B"}, "startsAt": "2026-03-10T01:40:00Z"},
        {"status": "firing", "labels": {"alertname": "C", "n": 3}, "startsAt": "2026-03-10T01:40:00Z"},
        {"status": "firing", "labels": {"alertname": "D"}, "startsAt": "yesterday"}]}
    with TestClient(make_app(rec)) as client:
        resp = client.post("/api/v1/ingest/alertmanager", json=payload, headers=AUTH)
        bad = [client.post("/api/v1/ingest/alertmanager", content=body, headers=AUTH)
               for body in (b"[]", b"{oops", b'{"alerts": {}}', b'{"version": "3", "alerts": []}')]
        unauth = client.post("/api/v1/ingest/alertmanager", json=payload)
    assert resp.status_code == 200
    assert resp.json()["accepted"] == 1 and resp.json()["rejected"] == 3
    assert [e.split(":")[0] for e in resp.json()["errors"]] == ["alerts[1]", "alerts[2]", "alerts[3]"]
    assert [b.status_code for b in bad] == [400, 400, 400, 400]
    assert unauth.status_code == 401 and unauth.headers["www-authenticate"] == "Bearer"
    (note,) = rec.alerts
    assert note.payload["alerts"] == [good]
