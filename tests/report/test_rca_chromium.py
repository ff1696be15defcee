"""The RCA report of a faulty scenario, opened in real headless Chromium: its plots render and the
page logs no console error. The screenshot is kept in tests/artifacts/ for a person to look at."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from suanli.cli.diagnose import open_diagnosis
from suanli.pipeline.rca import rca_data
from suanli.report.rca import write_rca
from tests.conftest import need_tool, shared_path

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars"]


def _chromium() -> str:
    return need_tool("chromium", "chromium-browser")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = shared_path("scenarios", "pcie_riser")
    diag, store, inv = open_diagnosis(folder, None, None, None, None)
    try:
        job = json.loads((folder / "truth.json").read_text())["faults"][0]["jobs"][0]
        path = tmp_path_factory.mktemp("rca") / "rca.html"
        write_rca(path, rca_data(diag, store, inv, job, None))
    finally:
        store.close()
    return path


@pytest.mark.integration
@pytest.mark.slow
def test_report_renders_in_chromium_without_console_errors(report: Path, tmp_path: Path) -> None:
    exe = _chromium()
    html = report.read_text()
    plots = len(re.findall(r'class="plot"', html))
    assert plots >= 4, "business, phases, per-rank, hardware and latency plots expected"
    profile = tmp_path / "profile"
    dom = subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr",
                          "--v=0", "--virtual-time-budget=10000", "--dump-dom", report.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    rendered = dom.stdout.count('class="main-svg"')
    assert rendered >= plots, f"only {rendered} plotly SVG layers for {plots} plots"
    # every time plot (SLA and the suspect's signals, in UTC) and the two step plots drew the
    # fault-start and detection lines
    timed = html.count('"text": "time (UTC)"')
    assert timed >= 4
    assert dom.stdout.count(">fault start</text>") == dom.stdout.count(">detected</text>") == timed + 2
    assert dom.stdout.count('class="shapelayer"') >= timed + 2
    console = [ln for ln in dom.stderr.splitlines() if "CONSOLE" in ln]
    errors = [ln for ln in console if re.search(r"error|uncaught", ln, re.I)]
    assert errors == [], errors
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "rca-pcie_riser.png"
    subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--window-size=1200,4200",
                    "--virtual-time-budget=10000", f"--screenshot={shot}", report.as_uri()],
                   capture_output=True, timeout=120, check=True)
    assert shot.stat().st_size > 50_000, "a blank page would be a few KB"


@pytest.mark.integration
@pytest.mark.slow
def test_report_prints_to_pdf(report: Path, tmp_path: Path) -> None:
    from suanli.report.rca import html_to_pdf

    _chromium()
    pdf = html_to_pdf(report, tmp_path / "rca.pdf")
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-")
    assert data.count(b"/Type /Page") - data.count(b"/Type /Pages") >= 2, "four sections span pages"
