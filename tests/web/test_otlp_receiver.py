"""OTLP/HTTP answers per the specification: JSON and protobuf, partial success, bad and oversized
requests, pressure (429 with Retry-After, nothing accepted lost) and a receiver not running (503)."""

from __future__ import annotations

import gzip
import json
import threading

import httpx
from fastapi.testclient import TestClient
from google.rpc import code_pb2, error_details_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from suanli.ingest.otlp import parse_otlp_json_line
from suanli.ingest.records import IngestReport
from suanli.web.settings import ReceiverLimits
from tests.otlp_json import request_line, span
from tests.web._server import AUTH, Recorder, make_app, serving

PB = {**AUTH, "Content-Type": "application/x-protobuf"}
JS = {**AUTH, "Content-Type": "application/json"}
T0 = 1_773_000_000_000_000_000


def _line(n: int, first: int = 0, bad: int = 0) -> str:
    spans = [span("ab" * 16, f"{first + i:016x}", "train_step", T0 + i * 1000, T0 + i * 1000 + 500, train__step=first + i)
             for i in range(n)]
    spans += [span("ab" * 16, f"{0xbad0 + i:016x}", "forward", T0 + 900, T0 + 100) for i in range(bad)]
    return request_line({"job.id": "job-a", "framework.pytorch.rank": 0}, spans)


def _status(resp: httpx.Response) -> status_pb2.Status:
    st = status_pb2.Status()
    st.ParseFromString(resp.content)
    return st


def test_json_request_and_partial_success() -> None:
    rec = Recorder()
    line = _line(3, bad=2)
    with TestClient(make_app(rec)) as client:
        ok = client.post("/v1/traces", content=line, headers=JS)
        empty = client.post("/v1/traces", content="{}", headers=JS)
    assert ok.status_code == 200 and ok.headers["content-type"] == "application/json"
    body = ok.json()
    assert body["partialSuccess"]["rejectedSpans"] == "2"      # int64 is a string in OTLP/JSON
    assert "endTimeUnixNano before startTimeUnixNano" in body["partialSuccess"]["errorMessage"]
    assert empty.status_code == 200 and empty.json() == {}
    expected = parse_otlp_json_line(line, None, IngestReport())
    assert rec.spans == expected and len(expected) == 3


def test_protobuf_partial_success_is_encoded_as_protobuf() -> None:
    req = trace_service_pb2.ExportTraceServiceRequest()
    ss = req.resource_spans.add().scope_spans.add()
    good = ss.spans.add(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="train_step",
                        start_time_unix_nano=T0, end_time_unix_nano=T0 + 10)
    good.attributes.add(key="train.step").value.int_value = 7
    ss.spans.add(trace_id=b"\x01" * 16, span_id=b"", name="no id", start_time_unix_nano=T0, end_time_unix_nano=T0)
    rec = Recorder()
    with TestClient(make_app(rec)) as client:
        resp = client.post("/v1/traces", content=gzip.compress(req.SerializeToString()),
                           headers={**PB, "Content-Encoding": "gzip"})
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/x-protobuf"
    answer = trace_service_pb2.ExportTraceServiceResponse()
    answer.ParseFromString(resp.content)
    assert answer.partial_success.rejected_spans == 1
    assert [(s.span_id, s.step) for s in rec.spans] == [("02" * 8, 7)]


def test_bad_requests_get_4xx_with_a_status_body_and_the_receiver_goes_on() -> None:
    rec = Recorder()
    limits = ReceiverLimits(max_body_bytes=10_000, max_decompressed_bytes=50_000, queue_items=1000)
    bomb = gzip.compress(b"\0" * 200_000)                  # 200 kB from a few hundred bytes
    cases = [
        (b"\xff\xff\xff garbage", PB, 400),
        (b"{not json", JS, 400),
        (b"[1, 2]", JS, 400),
        (b'{"resourceSpans": 5}', JS, 400),
        (b"\x1f\x8b not gzip at all", {**PB, "Content-Encoding": "gzip"}, 400),
        (b"x" * 10_001, PB, 413),
        (bomb, {**PB, "Content-Encoding": "gzip"}, 413),
        (b"", {**PB, "Content-Encoding": "br"}, 415),
        (b"a", {**AUTH, "Content-Type": "text/html"}, 415),
        (b"", {"Content-Type": "application/x-protobuf"}, 401),
        (b"", {"Content-Type": "application/x-protobuf", "Authorization": "Bearer wrong-token-wrong-token"}, 401),
    ]
    with TestClient(make_app(rec, otlp=limits)) as client:
        for body, headers, status in cases:
            resp = client.post("/v1/traces", content=body, headers=headers)
            assert resp.status_code == status, (body[:20], resp.status_code, resp.content[:200])
            if resp.headers["content-type"] == "application/x-protobuf":
                st = _status(resp)
                assert st.message
                if status == 400:
                    assert st.code == code_pb2.INVALID_ARGUMENT
                    bad = error_details_pb2.BadRequest()
                    assert st.details[0].Unpack(bad) and bad.field_violations[0].description == st.message
            else:
                assert json.loads(resp.content)["message"]
        after = client.post("/v1/traces", content=_line(2), headers=JS)
    assert after.status_code == 200 and len(rec.spans) == 2


def test_not_running_is_503_with_retry_after() -> None:
    client = TestClient(make_app(Recorder()))             # not entered: the lifespan (queues) never started
    resp = client.post("/v1/traces", content=_line(1), headers=JS)
    assert resp.status_code == 503 and resp.headers["retry-after"] == "1"
    assert resp.json()["message"].startswith("the receiver is not running")


def test_a_burst_gets_429_and_nothing_accepted_is_lost() -> None:
    rec = Recorder(delay_s=0.05)                          # a consumer slower than the senders
    limits = ReceiverLimits(max_body_bytes=1 << 20, max_decompressed_bytes=1 << 22, queue_items=40)
    accepted: list[int] = []
    statuses: list[int] = []
    lock = threading.Lock()
    with serving(make_app(rec, otlp=limits)) as url:
        def send(first: int) -> None:
            with httpx.Client() as client:
                for k in range(5):
                    start = first + k * 10
                    resp = client.post(f"{url}/v1/traces", content=_line(10, first=start), headers=JS)
                    with lock:
                        statuses.append(resp.status_code)
                        if resp.status_code == 200:
                            accepted.extend(range(start, start + 10))
                        else:
                            assert resp.status_code == 429 and resp.headers["retry-after"] == "1"

        threads = [threading.Thread(target=send, args=(i * 1000,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    # the server has stopped: the queue delivered everything it accepted before it exited
    assert statuses.count(429) > 0 and statuses.count(200) > 0 and len(statuses) == 40
    assert sorted(s.step for s in rec.spans) == sorted(accepted)


def test_a_reloaded_inventory_resolves_the_next_requests() -> None:
    from suanli.inventory import load_inventory
    from tests.conftest import shared_path

    inv = load_inventory(shared_path("scenarios", "switch_port_errors", "inventory.yaml"))
    uuid = inv.gpus["node-002/gpu3"].uuid
    line = request_line({"job.id": "j", "resource.gpu.id": uuid},
                        [span("cd" * 16, "00000000000000a1", "train_step", T0, T0 + 5, train__step=1)])
    rec = Recorder()
    app = make_app(rec)
    with TestClient(app) as client:
        assert client.post("/v1/traces", content=line, headers=JS).status_code == 200
        app.state.receivers.use_resolver(inv.resolver)
        assert client.post("/v1/traces", content=line, headers=JS).status_code == 200
    assert [s.gpu_id for s in rec.spans] == [None, "node-002/gpu3"]
