"""Kineto (PyTorch profiler) trace upload: ``POST /api/v1/ingest/kineto[?job=ID]``.

The body is one trace file as the profiler writes it (``*.pt.trace.json``, gzip-compressed or
sent with ``Content-Encoding: gzip``), read by suanli's Kineto reader
(:func:`suanli.ingest.kineto.read_kineto`) on a worker thread. The trace is kept in
``receivers.kineto.upload_dir`` when that is set (else read from a temporary file, then removed).
The answer is ``{"kernels": N, "rank": R, "rejected": M}``; 400 for a body that is not a trace.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from suanli.errors import InputError
from suanli.ingest.kineto import read_kineto
from suanli.ingest.records import IngestReport, Span
from suanli.web.alerts import pressure
from suanli.web.auth import Auth
from suanli.web.body import BodyError, decode_content, gunzip, read_body
from suanli.web.queue import Admission, IngestQueue
from suanli.web.settings import ReceiverLimits

__all__ = ["KinetoUpload", "kineto_router"]

_JOB = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}\Z")


@dataclass(frozen=True)
class KinetoUpload:
    """One uploaded trace: its device-activity spans (times on the trace's own clock)."""

    received_at: float
    job_id: str | None
    rank: int | None
    spans: list[Span]
    path: str | None = None
    """Where the trace was kept (None: not kept)."""
    report: IngestReport = field(default_factory=IngestReport)


def _read(data: bytes, job: str | None, upload_dir: str | None, now: float) -> KinetoUpload:
    digest = hashlib.sha256(data).hexdigest()[:16]
    if upload_dir is not None:
        os.makedirs(upload_dir, exist_ok=True)
        path = Path(upload_dir) / f"{int(now * 1000)}-{digest}.pt.trace.json"
        path.write_bytes(data)
    else:
        fd, name = tempfile.mkstemp(suffix=".pt.trace.json")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        path = Path(name)
    report = IngestReport()
    try:
        spans = read_kineto(path, job, report=report)
    except InputError as exc:
        path.unlink(missing_ok=True)
        raise BodyError(400, f"not a Kineto trace: {exc.what}") from None
    finally:
        if upload_dir is None:
            path.unlink(missing_ok=True)
    rank = next((s.rank for s in spans if s.rank is not None), None)
    return KinetoUpload(now, job, rank, spans, str(path) if upload_dir is not None else None, report)


def kineto_router(auth: Auth, limits: ReceiverLimits, queue: IngestQueue[KinetoUpload], retry_after_s: float,
                  upload_dir: str | None, clock: Callable[[], float] = time.time) -> APIRouter:
    router = APIRouter()

    @router.post("/api/v1/ingest/kineto", dependencies=[Depends(auth.require_write)],
                 summary="Upload a PyTorch profiler (Kineto) trace")
    async def upload(request: Request, job: str | None = None) -> JSONResponse:
        if job is not None and not _JOB.match(job):
            return JSONResponse({"detail": "job: expected an id of letters, digits and . _ : - (at most 128)"}, 400)
        refused = queue.would_refuse()
        if refused is not None:
            return pressure(refused, "trace", retry_after_s)
        try:
            data = decode_content(await read_body(request, limits.max_body_bytes),
                                  request.headers.get("content-encoding"), limits.max_decompressed_bytes)
            if data[:2] == b"\x1f\x8b":                       # a .json.gz file sent as it is
                data = gunzip(data, limits.max_decompressed_bytes)
            item = await run_in_threadpool(_read, data, job, upload_dir, clock())
        except BodyError as exc:
            return JSONResponse({"detail": exc.message}, exc.status)
        admission = queue.offer([item])
        if admission is not Admission.ACCEPTED:
            return pressure(admission, "trace", retry_after_s)
        return JSONResponse({"kernels": len(item.spans), "rank": item.rank, "rejected": item.report.rejected})

    return router
