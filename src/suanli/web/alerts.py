"""Alertmanager webhook receiver: ``POST /api/v1/ingest/alertmanager``.

Takes the JSON Alertmanager's ``webhook_configs`` send (payload ``version: "4"``; docs/serve.md
shows the Alertmanager side, with the token as ``http_config.authorization``). Each alert is
checked (``status`` firing/resolved, string ``labels`` with an ``alertname``, RFC 3339
``startsAt``); the good ones are queued as one :class:`AlertNotification`, bad ones are counted
and named in the answer, ``{"accepted": N, "rejected": M, "errors": [...]}``. A body that is not
such a payload at all is 400; Alertmanager does not retry a 4xx, and does retry 429/503.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from suanli.timefmt import parse_time
from suanli.web.auth import Auth
from suanli.web.body import BodyError, decode_content, read_body
from suanli.web.queue import Admission, IngestQueue
from suanli.web.settings import ReceiverLimits

__all__ = ["AlertNotification", "alerts_router", "check_payload"]

_STATUSES = ("firing", "resolved")


@dataclass(frozen=True)
class AlertNotification:
    """One webhook call: its valid alerts, in the webhook's own shape (``payload["alerts"]``),
    ready for :func:`suanli.incidents.signals.alertmanager_signals`."""

    received_at: float
    payload: dict[str, Any]
    rejected: int = 0
    errors: tuple[str, ...] = field(default=())


def _alert_error(alert: Any) -> str | None:
    if not isinstance(alert, dict):
        return "not an object"
    if alert.get("status") not in _STATUSES:
        return f"status must be firing or resolved, not {str(alert.get('status'))[:30]!r}"
    labels = alert.get("labels")
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        return "labels must be an object of strings"
    if not labels.get("alertname"):
        return "labels.alertname missing"
    annotations = alert.get("annotations", {})
    if not isinstance(annotations, dict) or not all(isinstance(v, str) for v in annotations.values()):
        return "annotations must be an object of strings"
    for key in ("startsAt", "endsAt"):
        value = alert.get(key)
        if value is None and key == "endsAt":
            continue
        try:
            parse_time(str(value))
        except ValueError:
            return f"{key} is not an RFC 3339 time: {str(value)[:40]!r}"
    return None


def check_payload(doc: Any, received_at: float) -> AlertNotification:
    """The notification of a decoded webhook body; BodyError(400) when it is not a webhook payload."""
    if not isinstance(doc, dict) or not isinstance(doc.get("alerts"), list):
        raise BodyError(400, "not an Alertmanager webhook payload (expected an object with an 'alerts' list)")
    if str(doc.get("version", "4")) != "4":
        raise BodyError(400, f"unsupported webhook payload version {str(doc.get('version'))[:10]!r} (expected 4)")
    good: list[dict[str, Any]] = []
    errors: list[str] = []
    for i, alert in enumerate(doc["alerts"]):
        why = _alert_error(alert)
        if why is None:
            good.append(alert)
        else:
            errors.append(f"alerts[{i}]: {why}")
    return AlertNotification(received_at, {**doc, "alerts": good}, len(errors), tuple(errors[:10]))


def alerts_router(auth: Auth, limits: ReceiverLimits, queue: IngestQueue[AlertNotification],
                  retry_after_s: float, clock: Callable[[], float] = time.time) -> APIRouter:
    router = APIRouter()

    @router.post("/api/v1/ingest/alertmanager", dependencies=[Depends(auth.require_write)],
                 summary="Alertmanager webhook receiver")
    async def webhook(request: Request) -> JSONResponse:
        refused = queue.would_refuse()
        if refused is not None:
            return pressure(refused, "alert", retry_after_s)
        try:
            data = decode_content(await read_body(request, limits.max_body_bytes),
                                  request.headers.get("content-encoding"), limits.max_decompressed_bytes)
            try:
                doc = json.loads(data)
            except (ValueError, RecursionError) as exc:
                raise BodyError(400, f"not JSON ({str(exc)[:100]})") from None
            note = check_payload(doc, clock())
        except BodyError as exc:
            return JSONResponse({"detail": exc.message}, exc.status)
        admission = queue.offer([note])
        if admission is not Admission.ACCEPTED:
            return pressure(admission, "alert", retry_after_s)
        return JSONResponse({"accepted": len(note.payload["alerts"]), "rejected": note.rejected,
                             "errors": list(note.errors)})

    return router


def pressure(admission: Admission, what: str, retry_after_s: float) -> JSONResponse:
    """429 (queue full) or 503 (not running) with ``Retry-After``."""
    status, detail = (429, f"the {what} queue is full; retry later") if admission is Admission.FULL else \
        (503, f"the {what} receiver is not running (starting or stopping); retry later")
    return JSONResponse({"detail": detail}, status, headers={"Retry-After": str(max(1, round(retry_after_s)))})
