"""The RCA report of a faulty scenario, opened in real headless Chromium: its plots render and the
page logs no console error. The screenshot is kept in tests/artifacts/ for a person to look at."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from suanli.report.rca import write_rca
from tests.conftest import need_tool
from tests.report.rca_cases import scenario_rca

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars"]


def _chromium() -> str:
    return need_tool("chromium", "chromium-browser")


FAULTY = ("pcie_riser", "switch_port_errors", "collective_hang", "storage_slow")


def _write_report(scenario: str, out: Path) -> Path:
    return write_rca(out / f"rca-{scenario}.html", scenario_rca(scenario)[0])


@pytest.fixture(scope="module", params=FAULTY)
def report(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write_report(request.param, tmp_path_factory.mktemp("rca"))


@pytest.mark.integration
@pytest.mark.slow
def test_report_renders_in_chromium_without_console_errors(report: Path, tmp_path: Path) -> None:
    exe = _chromium()
    html = report.read_text()
    plots = len(re.findall(r'class="plot"', html))
    assert plots >= 3, "business, phases and per-rank plots at least"
    profile = tmp_path / "profile"
    dom = subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr",
                          "--v=0", "--virtual-time-budget=10000", "--dump-dom", report.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    rendered = dom.stdout.count('class="main-svg"')
    assert rendered >= plots, f"only {rendered} plotly SVG layers for {plots} plots"
    # every time plot (the SLA, the framework's phases and ranks, the suspect's signals; one clock
    # axis in UTC) drew the fault-start and detection lines
    timed = html.count('"text": "time (UTC)"')
    assert timed >= 3
    assert dom.stdout.count(">fault start</text>") == dom.stdout.count(">detected</text>") == timed
    assert dom.stdout.count('class="shapelayer"') >= timed
    console = [ln for ln in dom.stderr.splitlines() if "CONSOLE" in ln]
    errors = [ln for ln in console if re.search(r"error|uncaught", ln, re.I)]
    assert errors == [], errors
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / report.with_suffix(".png").name
    subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--window-size=1200,4200",
                    "--virtual-time-budget=10000", f"--screenshot={shot}", report.as_uri()],
                   capture_output=True, timeout=120, check=True)
    assert shot.stat().st_size > 50_000, "a blank page would be a few KB"


@pytest.mark.integration
@pytest.mark.slow
def test_report_prints_to_pdf(tmp_path: Path) -> None:
    from suanli.report.rca import html_to_pdf

    _chromium()
    pdf = html_to_pdf(_write_report("pcie_riser", tmp_path), tmp_path / "rca.pdf")
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-")
    assert data.count(b"/Type /Page") - data.count(b"/Type /Pages") >= 2, "four sections span pages"
