"""The JSON API of ``serve`` under ``/api/v1/`` (FastAPI's OpenAPI page at ``/docs`` documents it).

Reads (the token unless ``auth.open_reads``): ``incidents`` (``{"incidents": [...]}``, each shaped
as in spec/diagnosis.md plus ``state`` and ``history``; ``?state=open|resolved``),
``incidents/{id}``, ``diagnosis`` (the last step's whole diagnosis JSON), ``health`` (per GPU:
health score, P(DBE), recommendation), ``ledger`` (per job: MFU, goodput, time split, cost),
``overrides`` (the audit), ``service`` (the analysis loop). Changes (always the token):
``POST overrides`` records an operator override, ``POST actions/mode`` switches how actions are
carried out (dry_run, shadow, live; recorded in the audit log), ``POST reload`` re-reads the
inventory and rules. The lists (jobs, gpus, fabric, rules, actions, check) are in
:mod:`suanli.web.api_lists`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Depends, HTTPException
from pydantic import BaseModel, Field

from suanli.analysis.health.overrides import load_overrides
from suanli.errors import InputError

if TYPE_CHECKING:
    from suanli.web.service import Service

__all__ = ["ModeRequest", "OverrideRequest", "api_router"]


class ModeRequest(BaseModel):
    mode: str = Field(pattern="^(dry_run|shadow|live)$", description="dry_run, shadow or live")
    reason: str = Field(min_length=1, max_length=1000)
    who: str = Field(default="operator", max_length=200)


class OverrideRequest(BaseModel):
    gpu: str = Field(max_length=200, description="A GPU: canonical id, UUID or host/index")
    state: str = Field(pattern="^(healthy|retired)$")
    reason: str = Field(min_length=1, max_length=1000)
    who: str = Field(default="operator", max_length=200)


def api_router(svc: Service) -> APIRouter:
    read = APIRouter(prefix="/api/v1", dependencies=[Depends(svc.auth.require_read)], tags=["read"])
    write = APIRouter(prefix="/api/v1", dependencies=[Depends(svc.auth.require_write)], tags=["change"])

    @read.get("/incidents", summary="Incidents, open and resolved")
    def incidents(state: str | None = None) -> dict[str, Any]:
        if state not in (None, "open", "resolved"):
            raise HTTPException(400, "state must be open or resolved")
        return {"incidents": [k.json() for k in svc.stepper.incidents(state)]}

    @read.get("/incidents/{incident_id}", summary="One incident")
    def incident(incident_id: str) -> dict[str, Any]:
        kept = svc.stepper.kept.get(incident_id)
        if kept is None:
            raise HTTPException(404, "no such incident")
        return kept.json()

    @read.get("/diagnosis", summary="The last step's diagnosis (spec/diagnosis.md)")
    def diagnosis() -> dict[str, Any]:
        return svc.stepper.stats.diagnosis

    @read.get("/health", summary="GPU health: score, P(DBE), recommendation")
    def health() -> dict[str, Any]:
        return {"gpus": svc.stepper.stats.diagnosis.get("predictions", [])}

    @read.get("/ledger", summary="The efficiency ledger per job")
    def ledger() -> dict[str, Any]:
        return {"jobs": svc.stepper.stats.diagnosis.get("efficiency", {}).get("jobs", [])}

    @read.get("/overrides", summary="Operator overrides (the audit)")
    def overrides() -> dict[str, Any]:
        return {"overrides": [o.to_json() for o in load_overrides(svc.overrides_path)]}

    @read.get("/service", summary="The analysis loop and the sources")
    def service() -> dict[str, Any]:
        return svc.status()

    @write.post("/overrides", summary="Record an operator override")
    def add_override(req: OverrideRequest) -> dict[str, Any]:
        try:
            ov = svc.record_override(req.gpu, req.state, req.reason, req.who)
        except InputError as exc:
            raise HTTPException(400, "unknown GPU" if exc.key == "gpu" else "bad override") from None
        return {"override": ov.to_json()}

    @write.post("/actions/mode", summary="Carry out actions as dry_run, shadow or live from the next step")
    def action_mode(req: ModeRequest) -> dict[str, Any]:
        try:
            rec = svc.set_action_mode(req.mode, req.who, req.reason)
        except InputError as exc:
            raise HTTPException(400, str(exc)) from None
        return {"mode": svc.action_mode, "record": rec}

    @write.post("/reload", summary="Re-read the inventory and the rule files now")
    def reload() -> dict[str, Any]:
        changed = svc.reload()
        return {"reloaded": changed, **svc.status()["reload"]}

    router = APIRouter()
    router.include_router(read)
    router.include_router(write)
    return router
