"""The console: server-rendered page shells (Jinja2, autoescaped) that read the JSON API from the
browser and draw with Plotly.js, the bundle vendored in ``suanli/report/assets`` (no CDN, no build).

Pages: ``/console`` (overview: effective compute, $ per effective PFLOP, lost cost, open incidents,
mean time to detect), ``/console/incidents`` and ``/console/incidents/{id}`` (with its root-cause report at
``/console/incidents/{id}/rca``, the page ``suanli rca`` writes), ``/console/jobs``
(MFU and goodput over time, time split, forecast with its p10-p90 band), ``/console/health`` (GPUs:
health by rack, the GPU list, overrides), ``/console/fabric`` (latency-ratio heatmap, port errors),
``/console/rules`` (rule states, alerts, actions and the audit), ``/console/check`` (metadata
consistency and maturity) and ``/console/runbooks/{category}`` (what Alertmanager's runbook link
opens). Tables sort and filter; the GPU and port tables are paged by the server (the API's lists,
:mod:`suanli.web.api_lists`) and the plots aggregate by rack, so pages hold at 10,240 GPUs. They
poll the API every 2 s, so an incident that opens appears without a reload. The pages carry a strict
Content-Security-Policy (scripts from this origin only) and put request text only through
``textContent``.
"""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse
from jinja2 import Environment, PackageLoader, select_autoescape

from suanli.analysis.categories import POLICIES
from suanli.report.plotly_bundle import plotly_js_path

if TYPE_CHECKING:
    from suanli.web.service import Service

__all__ = ["CSP", "console_router"]

CSP = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
"""Plotly sets inline styles on its SVG (hence ``'unsafe-inline'`` for styles only)."""

_STATIC = {"console.js": "text/javascript", "console.css": "text/css"}
_PAGES = {"": ("overview", "Overview"), "incidents": ("incidents", "Incidents"),
          "jobs": ("jobs", "Jobs: the efficiency ledger"), "health": ("health", "GPUs: health and forecasts"),
          "fabric": ("fabric", "Fabric: latency and port errors"), "rules": ("rules", "Rules and actions"),
          "check": ("check", "Check: metadata consistency and maturity")}


def _env() -> Environment:
    return Environment(loader=PackageLoader("suanli.web", "templates"), autoescape=select_autoescape(["html"]),
                       trim_blocks=True, lstrip_blocks=True)


def _html(text: str) -> HTMLResponse:
    return HTMLResponse(text, headers={"Content-Security-Policy": CSP, "Cache-Control": "no-store"})


def _rca_page(svc: Service, incident_id: str) -> HTMLResponse:
    """The root-cause report (the page ``suanli rca`` writes) of an incident of the last step, for
    the first job it touches; it carries its own policy (only its own inline scripts, by hash)."""
    from suanli.pipeline.rca import rca_data
    from suanli.report.rca import content_security_policy, render_rca

    last = svc.stepper.last
    inc = next((i for i in last.incidents if i.id == incident_id), None) if last is not None else None
    if last is None or inc is None:
        raise HTTPException(404, "no such incident in the current window (the report covers the last step's)")
    jobs = [j for j in inc.impact.jobs if j in svc.inventory.jobs] or sorted(svc.inventory.jobs)
    if not jobs:
        raise HTTPException(404, "the inventory names no job to report on")
    page = render_rca(rca_data(last, svc.store, svc.inventory, jobs[0], None))
    return HTMLResponse(page, headers={"Content-Security-Policy": content_security_policy(page),
                                       "Cache-Control": "no-store"})


def console_router(svc: Service) -> APIRouter:
    env = _env()
    router = APIRouter(prefix="/console", dependencies=[Depends(svc.auth.require_read)], include_in_schema=False)
    static = resources.files("suanli.web").joinpath("static")

    def page(template: str, title: str, **data: Any) -> HTMLResponse:
        return _html(env.get_template(f"{template}.html").render(page=template, title=title, data=data))

    @router.get("/static/plotly.min.js")
    def plotly_js() -> FileResponse:
        return FileResponse(plotly_js_path(), media_type="text/javascript")

    @router.get("/static/{name}")
    def static_file(name: str) -> HTMLResponse:
        if name not in _STATIC:
            raise HTTPException(404, "no such file")
        return HTMLResponse(static.joinpath(name).read_text(encoding="utf-8"), media_type=_STATIC[name])

    @router.get("/incidents/{incident_id}")
    def incident(incident_id: str) -> HTMLResponse:
        if incident_id not in svc.stepper.kept:
            raise HTTPException(404, "no such incident")
        return page("incident", f"Incident {incident_id}", incident=incident_id)

    @router.get("/incidents/{incident_id}/rca")
    def rca(incident_id: str) -> HTMLResponse:
        return _rca_page(svc, incident_id)

    @router.get("/ledger")
    def ledger() -> RedirectResponse:          # the page's name before the console had a jobs page
        return RedirectResponse("/console/jobs", status_code=308)

    @router.get("/runbooks/{category}")
    def runbook(category: str) -> HTMLResponse:
        pol = POLICIES.get(category)
        if pol is None:
            raise HTTPException(404, "no such category")
        return _html(env.get_template("runbook.html").render(page="runbook", title=f"Runbook: {category}",
                                                             data={}, policy=pol))

    def register(path: str, template: str, title: str) -> None:
        router.add_api_route(f"/{path}" if path else "", lambda: page(template, title), methods=["GET"])

    for path, (template, title) in _PAGES.items():
        register(path, template, title)
    return router
