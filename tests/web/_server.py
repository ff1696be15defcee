"""The app under test, served by uvicorn on a loopback port, and consumers that record what arrives."""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from fastapi import FastAPI

from suanli.ingest.records import Span
from suanli.web import AlertNotification, Auth, Consumers, KinetoUpload, create_app
from suanli.web.settings import ReceiverLimits, ReceiverSettings

TOKEN = "test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class Recorder:
    """Consumers that keep what they get; ``delay_s`` makes the span consumer slow."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.spans: list[Span] = []
        self.alerts: list[AlertNotification] = []
        self.kineto: list[KinetoUpload] = []
        self.delay_s = delay_s
        self.lock = threading.Lock()

    def consumers(self) -> Consumers:
        def spans(batch: list[Span]) -> None:
            time.sleep(self.delay_s)
            with self.lock:
                self.spans.extend(batch)

        def alerts(batch: list[AlertNotification]) -> None:
            with self.lock:
                self.alerts.extend(batch)

        def kineto(batch: list[KinetoUpload]) -> None:
            with self.lock:
                self.kineto.extend(batch)

        return Consumers(spans, alerts, kineto)

    def wait(self, what: str, n: int, timeout_s: float = 20.0) -> list[Any]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self.lock:
                got = list(getattr(self, what))
            if len(got) >= n:
                return got
            time.sleep(0.02)
        raise AssertionError(f"waited for {n} {what}, got {len(got)}")


def make_app(rec: Recorder, *, otlp: ReceiverLimits | None = None, open_reads: bool = False,
             **kw: Any) -> FastAPI:
    settings = ReceiverSettings()
    if otlp is not None:
        settings = dataclasses.replace(settings, otlp=otlp)
    settings = dataclasses.replace(settings, **{k: v for k, v in kw.items() if k in ("kineto_upload_dir",)})
    return create_app(settings, rec.consumers(), Auth(TOKEN, open_reads=open_reads),
                      resolver=kw.get("resolver"))


@contextmanager
def serving(app: FastAPI) -> Iterator[str]:
    """``http://127.0.0.1:PORT`` while uvicorn serves ``app`` (lifespan included) on a thread."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()
