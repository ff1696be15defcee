"""Kineto trace upload: a real multi-rank trace from HTA's test data, as the file and as gzip."""

from __future__ import annotations

import gzip
from dataclasses import replace
from pathlib import Path

from fastapi.testclient import TestClient

from suanli.ingest.kineto import read_kineto
from tests.conftest import shared_path
from tests.web._server import AUTH, Recorder, make_app


def test_upload_reads_like_the_file(tmp_path: Path) -> None:
    trace = shared_path("realdata", "traces", "hta", "nccl_parser_config", "nccl_data.json.gz")
    packed = trace.read_bytes()
    rec = Recorder()
    keep = tmp_path / "uploads"
    with TestClient(make_app(rec, kineto_upload_dir=str(keep))) as client:
        as_file = client.post("/api/v1/ingest/kineto?job=llama-70b", content=packed, headers=AUTH)
        encoded = client.post("/api/v1/ingest/kineto", content=packed,
                              headers={**AUTH, "Content-Encoding": "gzip"})
    expected = read_kineto(trace, "llama-70b")
    assert as_file.status_code == 200 and encoded.status_code == 200
    assert as_file.json() == {"kernels": len(expected), "rank": 0, "rejected": 0}
    first, second = rec.kineto
    # the trace id of a Kineto span is its file's name: here the stored upload's
    assert {s.trace_id for s in first.spans} == {Path(str(first.path)).name}
    assert [replace(s, trace_id="") for s in first.spans] == [replace(s, trace_id="") for s in expected]
    assert first.job_id == "llama-70b" and first.rank == 0
    assert [(s.name, s.start_s, s.end_s) for s in second.spans] == [(s.name, s.start_s, s.end_s) for s in expected]
    assert first.path is not None and Path(first.path).read_bytes() == gzip.decompress(packed)


def test_bad_uploads() -> None:
    rec = Recorder()
    with TestClient(make_app(rec)) as client:
        not_json = client.post("/api/v1/ingest/kineto", content=b"{nope", headers=AUTH)
        no_events = client.post("/api/v1/ingest/kineto", content=b'{"a": 1}', headers=AUTH)
        bad_job = client.post("/api/v1/ingest/kineto?job=<script>", content=b"{}", headers=AUTH)
        unauth = client.post("/api/v1/ingest/kineto", content=b'{"traceEvents": []}')
        empty = client.post("/api/v1/ingest/kineto", content=b'{"traceEvents": []}', headers=AUTH)
    assert not_json.status_code == 400 and not_json.json()["detail"].startswith("not a Kineto trace")
    assert no_events.status_code == 400 and "traceEvents" in no_events.json()["detail"]
    assert bad_job.status_code == 400 and "<script>" not in bad_job.text
    assert unauth.status_code == 401
    assert empty.status_code == 200 and empty.json() == {"kernels": 0, "rank": None, "rejected": 0}
    assert len(rec.kineto) == 1
