"""The RCA report cannot run script (issue 13 item 5): hostile telemetry (a host name, log text, a
label value) is put into the real report of pcie_riser and the page is opened in Debian's Chromium,
sandboxed (never ``--no-sandbox``; as root the browser runs as ``nobody``), driven by Playwright
over the DevTools protocol. Nothing hostile runs, the text is shown as text, the plots render, and
the Content-Security-Policy alone stops a script that escaping had missed."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from suanli.cli.diagnose import open_diagnosis
from suanli.pipeline.rca import Line, RcaData, rca_data
from suanli.report.chromium import CHROMIUM_FLAGS, UNPRIVILEGED
from suanli.report.rca import content_security_policy, html_to_pdf, render_rca
from tests.conftest import need_tool, shared_path

pytestmark = [pytest.mark.slow]

CLOSE_SCRIPT = "corrected</script><script>document.title='XSS1'</script>"
IMG = "<img src=x onerror=\"document.title='XSS2'\">"
LINK = "<a href=\"javascript:document.title='XSS3'\">n</a>"
SVG = "\"><svg onload=\"document.title='XSS4'\">"
HOSTILE = (CLOSE_SCRIPT, IMG, LINK, SVG)


def _hostile(d: RcaData) -> RcaData:
    """The real report data with hostile text wherever telemetry reaches the page."""
    assert d.suspect is not None and d.hardware, "pcie_riser has a suspect with hardware panels"
    panels = tuple(dataclasses.replace(p, lines=(*(dataclasses.replace(ln, name=f"{ln.name} {CLOSE_SCRIPT}")
                                                   for ln in p.lines), Line(LINK, p.lines[0].ts, p.lines[0].values)))
                   for p in d.hardware)
    incidents = [dataclasses.replace(i, evidence=(f"kernel: {IMG}", *i.evidence), root_id=f"{i.root_id}{SVG}")
                 for i in d.incidents]
    return dataclasses.replace(d, cluster=f"c {IMG}", hardware=panels, incidents=incidents,
                               suspect=incidents[0], sla_of={**d.sla_of, f"job{SVG}": d.sla_id})


@pytest.fixture(scope="module")
def page_html() -> str:
    folder = shared_path("scenarios", "pcie_riser")
    diag, store, inv = open_diagnosis(folder, None, None, None, None)
    try:
        job = json.loads((folder / "truth.json").read_text())["faults"][0]["jobs"][0]
        data = rca_data(diag, store, inv, job, None)
    finally:
        store.close()
    return render_rca(_hostile(data))


@pytest.fixture(autouse=True)
def _uses_chromium() -> None:
    """Every test here opens or prints with Chromium (the module's browser is shared)."""
    need_tool("chromium", "chromium-browser")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium with its sandbox, as ``nobody`` when the tests run as root; Playwright attached over CDP."""
    from playwright.sync_api import sync_playwright

    exe = need_tool("chromium", "chromium-browser")
    assert "--no-sandbox" not in CHROMIUM_FLAGS
    profile = Path(tempfile.mkdtemp(prefix="suanli-xss-"))
    who: dict[str, Any] = {}
    if os.geteuid() == 0:
        os.chown(profile, UNPRIVILEGED, UNPRIVILEGED)
        who = {"user": UNPRIVILEGED, "group": UNPRIVILEGED, "extra_groups": []}
    proc = subprocess.Popen([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0",
                             "about:blank"], stderr=subprocess.PIPE, text=True,
                            env={"PATH": os.environ["PATH"], "HOME": str(profile)}, **who)
    try:
        assert proc.stderr is not None
        url = None
        for line in proc.stderr:
            m = re.search(r"DevTools listening on (ws://\S+)", line)
            if m:
                url = m.group(1)
                break
            assert "sandbox" not in line.lower() or "ERROR" not in line, line
        assert url, "Chromium did not start (sandboxed)"
        with sync_playwright() as pw:
            b = pw.chromium.connect_over_cdp(url)
            yield b
            b.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(profile, ignore_errors=True)


def _open(browser: Any, html: str) -> tuple[Any, list[str], list[str]]:
    ctx = browser.new_context()
    page = ctx.new_page()
    page.set_default_timeout(180_000)                  # a 1.6 MB page on a loaded CI machine
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.add_init_script("window.__csp = []; document.addEventListener('securitypolicyviolation', "
                         "e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));")
    page.route("http://report.invalid/rca.html",
               lambda route: route.fulfill(body=html, content_type="text/html; charset=utf-8"))
    page.goto("http://report.invalid/rca.html", wait_until="load")
    page.wait_for_function("document.querySelectorAll('.main-svg').length > 0", timeout=180_000)
    return page, errors, page.evaluate("window.__csp")


@pytest.mark.integration
def test_hostile_telemetry_is_text_and_runs_nothing(browser: Any, page_html: str) -> None:
    for bad in HOSTILE:
        assert bad not in page_html, f"unescaped in the page: {bad}"
    page, errors, violations = _open(browser, page_html)
    title = page.title()
    assert title.startswith("suanli RCA ") and "XSS" not in title
    assert page.evaluate("document.querySelectorAll('img[src=x], svg[onload], a[href^=javascript]').length") == 0
    text = page.evaluate("document.body.innerText")
    assert f"kernel: {IMG}" in text and f"c {IMG}" in text, "the hostile text is shown as text"
    legend = page.evaluate("Array.from(document.querySelectorAll('.legendtext')).map(e => e.textContent)")
    assert any(CLOSE_SCRIPT in t for t in legend) and LINK in legend, legend   # a label shown as typed
    plots = page_html.count('class="plot"')
    assert page.evaluate("document.querySelectorAll('.plot .main-svg').length") >= plots >= 4
    assert violations == [] and errors == [], (violations, errors)      # the report's own scripts all ran
    page.context.close()


@pytest.mark.integration
def test_the_policy_alone_stops_a_script_escaping_missed(browser: Any, page_html: str) -> None:
    assert "Content-Security-Policy" in page_html and "'unsafe-eval'" not in page_html
    smuggled = page_html.replace("<h2>4. Conclusion</h2>",
                                 "<h2>4. Conclusion</h2><script>document.title='XSS5'</script>"
                                 "<img src=x onerror=\"document.title='XSS6'\">", 1)
    page, _errors, violations = _open(browser, smuggled)
    assert "XSS" not in page.title()
    assert any(v.startswith("script-src") for v in violations), violations
    page.context.close()


def test_the_policy_hashes_exactly_the_scripts_of_the_page() -> None:
    csp = content_security_policy("<script>a</script><p>x</p><script>b</script>")
    # sha256("a") and sha256("b"), base64: worked out with `printf a | openssl dgst -sha256 -binary | base64`
    assert "'sha256-ypeBEsobvcr6wjGzmiPcTaeG7/gUfE5yuYB3ha/uSLs='" in csp
    assert "'sha256-PiPoFgA5WUoziU9lZOGxNIu9egCI1CxKy3PurtWcAJ0='" in csp
    assert "default-src 'none'" in csp and csp.count("sha256-") == 2


@pytest.mark.integration
def test_the_pdf_is_printed_sandboxed(page_html: str, tmp_path: Path) -> None:
    need_tool("chromium", "chromium-browser")
    html_path = tmp_path / "rca.html"
    html_path.write_text(page_html, encoding="utf-8")
    pdf = html_to_pdf(html_path, tmp_path / "rca.pdf")
    assert pdf.read_bytes().startswith(b"%PDF-")
