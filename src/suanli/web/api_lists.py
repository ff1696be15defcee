"""The API's lists under ``/api/v1/`` (reads: the token unless ``auth.open_reads``), each one page at
a time so they hold at 10,240 GPUs (:mod:`suanli.web.views`): ``?offset=&limit=`` (at most 1000),
``&sort=KEY&desc=true``, ``&q=`` (a substring of any value). Each answers ``{"total", "offset",
"limit", "rows"}`` besides its own keys.

``jobs`` (the ledger per job, spec/diagnosis.md's ``efficiency.jobs`` rows), ``gpus`` (health score,
P(DBE), recommendation, node, rack), ``gpus/racks`` (the same aggregated by rack), ``fabric`` (the
latency-ratio heatmap, by rack above 128 nodes or with ``?by=rack``, and the localisations),
``fabric/ports`` (each port's and NIC's error signals), ``rules`` (each rule and its alerts'
states) with ``rules/alerts``, ``actions`` (the actions decided since serve started, the
action mode, and the audit log's latest records, ``<db>.audit.jsonl`` unless the rule file moves it), ``check`` (``suanli check`` on the store: problems, counts,
maturity; recomputed at most once per analysis step).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Generic, TypeVar

from fastapi import APIRouter, Depends, HTTPException, Query

from suanli.rules.audit import read_audit
from suanli.web.views import (
    MAX_LIMIT,
    Page,
    fabric_view,
    gpu_rows,
    paginate,
    port_rows,
    rack_summary,
    rule_rows,
)

if TYPE_CHECKING:
    from suanli.analysis.fabric import FabricResult
    from suanli.web.service import Service

__all__ = ["lists_router"]


def _page(offset: int = Query(0, ge=0), limit: int = Query(100, ge=0, le=MAX_LIMIT),
          sort: str | None = Query(None, max_length=64), desc: bool = False,
          q: str = Query("", max_length=200)) -> Page:
    return Page(offset, limit, sort, desc, q)


PageArg = Annotated[Page, Depends(_page)]
T = TypeVar("T")


class _PerStep(Generic[T]):
    """A view built once per analysis step (and inventory), not once per request: at 10,240 GPUs
    the rows (or the rack matrix of 1,280 x 1,280 pairs) take longer to build than to serve."""

    def __init__(self, svc: Service, build: Callable[[], T]) -> None:
        self.svc, self.build, self._lock = svc, build, threading.Lock()
        self._key: tuple[int, int] | None = None
        self._value: T | None = None

    def get(self) -> T:
        key = (self.svc.stepper.stats.steps, id(self.svc.inventory))
        with self._lock:
            if key != self._key or self._value is None:
                self._value, self._key = self.build(), key
            return self._value


class _CheckCache:
    """``suanli check`` reads every series: run it once per analysis step, not once per request."""

    def __init__(self, svc: Service) -> None:
        self.svc, self._lock = svc, threading.Lock()
        self._at: int | None = None
        self._doc: dict[str, Any] = {}

    def get(self) -> dict[str, Any]:
        from suanli.store.check import check

        with self._lock:
            steps = self.svc.stepper.stats.steps
            if self._at != steps:
                rs = self.svc.rules.value
                rep = check(self.svc.store, self.svc.inventory, rules_loaded=len(rs.rules),
                            inhibitions=len(rs.inhibit_rules))
                self._doc = {"ok": rep.ok, "problems": rep.problems, "counts": rep.counts,
                             "maturity": {k: {"level": lv, "reason": why} for k, (lv, why) in rep.maturity.items()}}
                self._at = steps
            return self._doc


def _heatmap(fabric: Callable[[], FabricResult | None], by: str) -> Callable[[], dict[str, Any]]:
    return lambda: fabric_view(fabric(), by)


def lists_router(svc: Service) -> APIRouter:
    r = APIRouter(prefix="/api/v1", dependencies=[Depends(svc.auth.require_read)], tags=["read"])
    checks = _CheckCache(svc)

    def doc() -> dict[str, Any]:
        return svc.stepper.stats.diagnosis

    def fabric_result() -> FabricResult | None:
        last = svc.stepper.last
        return last.results.fabric if last is not None else None

    gpus_rows = _PerStep(svc, lambda: gpu_rows(doc().get("predictions", []), svc.inventory))
    ports_rows = _PerStep(svc, lambda: port_rows(fabric_result(), svc.inventory))
    heatmaps = {by: _PerStep(svc, _heatmap(fabric_result, by)) for by in ("auto", "node", "rack")}

    @r.get("/jobs", summary="The ledger per job: MFU, goodput, time split, cost, forecast")
    def jobs(page: PageArg) -> dict[str, Any]:
        return paginate(doc().get("efficiency", {}).get("jobs", []), page)

    @r.get("/gpus", summary="GPUs: health score, P(DBE), recommendation, node and rack")
    def gpus(page: PageArg) -> dict[str, Any]:
        return paginate(gpus_rows.get(), page)

    @r.get("/gpus/racks", summary="GPU health aggregated by rack")
    def racks(page: PageArg, at_risk: float = Query(0.5, ge=0, le=1)) -> dict[str, Any]:
        return paginate(rack_summary(gpus_rows.get(), at_risk), page)

    @r.get("/fabric", summary="The latency-ratio heatmap and the fabric's localisations")
    def fabric(by: str = Query("auto", pattern="^(auto|node|rack)$")) -> dict[str, Any]:
        return heatmaps[by].get()

    @r.get("/fabric/ports", summary="Switch ports and NICs with their error signals")
    def ports(page: PageArg) -> dict[str, Any]:
        return paginate(ports_rows.get(), page)

    @r.get("/rules", summary="Each rule and how many of its alerts pend, fire and resolved")
    def rules(page: PageArg) -> dict[str, Any]:
        ev = svc.stepper.pipeline.evaluator
        rs = svc.rules.value
        return {"source": rs.source, **paginate(rule_rows(rs.rules, ev.alerts() if ev else []), page)}

    @r.get("/rules/alerts", summary="The rule evaluator's alerts (pending, firing, resolved)")
    def alerts(page: PageArg) -> dict[str, Any]:
        ev = svc.stepper.pipeline.evaluator
        return paginate([a.to_json() for a in (ev.alerts() if ev else [])], page)

    @r.get("/actions", summary="Actions decided, and the audit log")
    def actions(page: PageArg) -> dict[str, Any]:
        runner = svc.stepper.pipeline.runner
        decided = [rec for recs in svc.stepper.pipeline.decisions.values() for rec in recs]
        path = runner.audit.path if runner is not None else None
        audit, bad = read_audit(path) if path is not None and path.exists() else ([], 0)
        return {"mode": runner.mode if runner else None, "audit_log": str(path) if path else None,
                "audit": audit[-page.limit:] if page.limit else [], "audit_unreadable_lines": bad,
                **paginate(decided, page)}

    @r.get("/check", summary="Metadata consistency and maturity (suanli check)")
    def check() -> dict[str, Any]:
        try:
            return checks.get()
        except Exception as exc:        # the store is being written: say so, the loop goes on
            raise HTTPException(503, f"check failed: {type(exc).__name__}: {exc}") from None

    return r
