"""The console in real Chromium (Debian's, driven by Playwright): every page loads with no console
error and every plot rendered (screenshots kept in tests/artifacts/), and an incident that opens
while the page is open appears on it without a reload."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from playwright import sync_api

from suanli.inventory import load_inventory
from suanli.timefmt import parse_time
from tests.conftest import shared_path
from tests.web._serve import Serve, scenario_db, start_serve, truth
from tests.web._server import AUTH, TOKEN

pytestmark = [pytest.mark.slow, pytest.mark.integration]

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.fail("chromium is not installed: `make test` installs the Debian package `chromium`")
    return exe


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    work = tmp_path_factory.mktemp("console")
    db = scenario_db(work / "pcie.duckdb")
    cfg = work / "serve.yaml"
    cfg.write_text("evaluation: {interval: 1s}\n")
    srv = start_serve(work, db, cfg)
    yield srv
    assert srv.stop() == 0


@pytest.fixture(scope="module")
def browser() -> Iterator[sync_api.Browser]:
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=_chromium(), headless=True)
        yield b
        b.close()


def _open(browser: sync_api.Browser, url: str, errors: list[str]) -> sync_api.Page:
    ctx = browser.new_context(extra_http_headers={"Authorization": f"Bearer {TOKEN}"},
                              viewport={"width": 1400, "height": 1000})
    page = ctx.new_page()
    page.on("console", lambda m: errors.append(f"{url}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"{url}: {e}"))
    page.goto(url)
    return page


def test_every_page_renders_without_console_errors(served: Serve, browser: sync_api.Browser) -> None:
    inc = served.get("/api/v1/incidents").json()["incidents"][0]
    category = truth()["faults"][0]["category"]
    pages = {"overview": "/console", "incidents": "/console/incidents", "incident": f"/console/incidents/{inc['id']}",
             "jobs": "/console/jobs", "health": "/console/health", "fabric": "/console/fabric",
             "rules": "/console/rules", "check": "/console/check", "runbook": f"/console/runbooks/{category}"}
    ARTIFACTS.mkdir(exist_ok=True)
    errors: list[str] = []
    for name, path in pages.items():
        page = _open(browser, served.url + path, errors)
        plots = page.locator(".plot:not([hidden])").count()
        if plots:               # locators, not wait_for_function: the page's CSP forbids eval
            page.locator(".plot .main-svg").nth(plots - 1).wait_for(state="attached", timeout=30_000)
        page.locator("#status", has_text="updated").wait_for(timeout=30_000)
        page.screenshot(path=str(ARTIFACTS / f"console-{name}.png"), full_page=True)
        if name == "incident":     # the API's evidence (steps run every second: before or after the page)
            evidence = page.locator("#evidence li").all_text_contents()
            after = served.get(f"/api/v1/incidents/{inc['id']}").json()["evidence"]
            assert evidence and set(evidence) <= set(inc["evidence"]) | set(after)
        if name == "overview":
            assert page.locator("#card-open").text_content() == "1"
        if name == "health":       # one server page of the inventory's GPUs, and their count
            gpus = len(load_inventory(shared_path("scenarios", "pcie_riser", "inventory.yaml")).gpus)
            page.locator("#gpus tbody tr").first.wait_for(timeout=30_000)
            assert page.locator("#gpus tbody tr").count() == min(100, gpus)
            assert page.locator("#gpus-more").text_content() == f"1–{min(100, gpus)} of {gpus}"
        if name == "incident":     # its root-cause report, the page `suanli rca` writes
            href = page.locator("#rca-link").get_attribute("href")
            rca = served.get(str(href))
            assert rca.status_code == 200 and "Root-cause report:" in rca.text
            assert "script-src 'sha256-" in rca.headers["content-security-policy"]
        if name == "check":
            page.locator("#maturity .card").first.wait_for(timeout=30_000)
            assert page.locator("#maturity .card").count() == 3
        page.context.close()
    assert errors == []


def _webhook(gpu_uuid: str, starts: float) -> dict[str, object]:
    at = datetime.fromtimestamp(starts, tz=UTC).isoformat().replace("+00:00", "Z")
    return {"version": "4", "status": "firing", "receiver": "suanli", "groupKey": "{}:{}", "truncatedAlerts": 0,
            "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {}, "externalURL": "http://am",
            "alerts": [{"status": "firing", "startsAt": at, "endsAt": "0001-01-01T00:00:00Z",
                        "labels": {"alertname": "GPUOverTemperature", "UUID": gpu_uuid, "category": "gpu_thermal"},
                        "annotations": {"summary": "hot"}, "fingerprint": "0123456789abcdef"}]}


def test_an_incident_that_opens_appears_without_a_reload(served: Serve, browser: sync_api.Browser) -> None:
    inv = load_inventory(shared_path("scenarios", "pcie_riser", "inventory.yaml"))
    gpu = "node-004/gpu1"
    uuid = inv.gpus[gpu].uuid
    assert uuid is not None
    errors: list[str] = []
    page = _open(browser, served.url + "/console/incidents", errors)
    page.locator("#incidents tbody tr").first.wait_for(timeout=30_000)
    assert "gpu_thermal" not in page.locator("#incidents tbody").inner_text()
    end = parse_time(truth()["window"]["end"])
    r = httpx.post(served.url + "/api/v1/ingest/alertmanager", json=_webhook(uuid, end - 120), headers=AUTH, timeout=30)
    assert r.status_code == 200, r.text
    row = page.locator("#incidents tbody tr", has_text="gpu_thermal")
    row.wait_for(timeout=60_000)
    assert gpu in row.inner_text()
    page.screenshot(path=str(ARTIFACTS / "console-incident-appeared.png"), full_page=True)
    page.context.close()
    assert errors == []
