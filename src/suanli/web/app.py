"""The FastAPI app of ``suanli serve``, built by :func:`create_app` from its dependencies (no global state).

What it serves now: the receivers (OTLP/HTTP ``/v1/traces``, the Alertmanager webhook, Kineto
uploads) and ``GET /api/v1/ingest/status`` (their queues and whatever ``status`` reports: scrape
targets, log tails). Further routers (the JSON API, the console, ``/metrics``) are passed in
``routers``. The receivers' queues start with the app (its lifespan) and, when it stops, deliver
everything they accepted before the app exits.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from suanli.ingest.records import Span
from suanli.inventory import Resolver
from suanli.web.alerts import AlertNotification, alerts_router
from suanli.web.auth import Auth
from suanli.web.kineto import KinetoUpload, kineto_router
from suanli.web.otlp import ParserSlot, otlp_router
from suanli.web.queue import IngestQueue
from suanli.web.settings import ReceiverSettings

__all__ = ["Consumers", "Receivers", "create_app"]

log = logging.getLogger("suanli.web")


@dataclass(frozen=True)
class Consumers:
    """Where accepted records go (called on each queue's own thread, in arrival order)."""

    spans: Callable[[list[Span]], None]
    alerts: Callable[[list[AlertNotification]], None]
    kineto: Callable[[list[KinetoUpload]], None]


@dataclass(frozen=True)
class Receivers:
    """The receivers' queues and the OTLP parser (``app.state.receivers``)."""

    spans: IngestQueue[Span]
    alerts: IngestQueue[AlertNotification]
    kineto: IngestQueue[KinetoUpload]
    otlp: ParserSlot

    def all(self) -> tuple[IngestQueue[Any], ...]:
        return (self.spans, self.alerts, self.kineto)

    def use_resolver(self, resolver: Resolver | None) -> None:
        """A reloaded inventory: spans resolve against it from the next request on."""
        self.otlp.use(resolver)


class _NoSniff:
    """``X-Content-Type-Options: nosniff`` on every answer, so no JSON or protobuf body (which may
    quote a request) is ever rendered as HTML."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (b"x-content-type-options", b"nosniff")]
            await send(message)

        await self.app(scope, receive, send_with if scope["type"] == "http" else send)


def create_app(receivers: ReceiverSettings, consumers: Consumers, auth: Auth, *, resolver: Resolver | None = None,
               status: Callable[[], Mapping[str, Any]] | None = None, routers: Sequence[APIRouter] = (),
               clock: Callable[[], float] = time.time) -> FastAPI:
    """The app; ``resolver`` maps span identities to inventory ids; ``status`` adds to the status page."""
    queues = Receivers(IngestQueue("spans", receivers.otlp.queue_items, consumers.spans),
                       IngestQueue("alerts", receivers.alertmanager.queue_items, consumers.alerts),
                       IngestQueue("kineto", receivers.kineto.queue_items, consumers.kineto), ParserSlot(resolver))

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if not auth.configured:
            log.warning("no token configured (auth.token_file or $%s): every state change will be refused",
                        "SUANLI_TOKEN")
        for q in queues.all():
            q.start()
        try:
            yield
        finally:
            for q in queues.all():
                q.close()

    app = FastAPI(title="suanli", lifespan=lifespan)
    app.state.receivers = queues
    retry = receivers.retry_after_s
    app.include_router(otlp_router(auth, receivers.otlp, queues.spans, queues.otlp, retry))
    app.include_router(alerts_router(auth, receivers.alertmanager, queues.alerts, retry, clock))
    app.include_router(kineto_router(auth, receivers.kineto, queues.kineto, retry, receivers.kineto_upload_dir,
                                     clock))

    @app.get("/api/v1/ingest/status", dependencies=[Depends(auth.require_read)], summary="Receivers and sources")
    def ingest_status() -> dict[str, Any]:
        out: dict[str, Any] = {"receivers": {q.name: dataclasses.asdict(q.stats()) | {"open": q.is_open}
                                             for q in queues.all()}}
        if status is not None:
            out.update(status())
        return out

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception) -> JSONResponse:
        log.exception("internal error on %s %s", request.method, request.url.path)
        return JSONResponse({"detail": "internal error"}, 500)

    for router in routers:
        app.include_router(router)
    app.add_middleware(_NoSniff)
    return app
