"""The vectorised protobuf trace reader: the spans table and report equal the Python parser's."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.internal.encoder import _VarintBytes  # type: ignore[attr-defined]
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.resource.v1 import resource_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from suanli.ingest import bulk_otlp_proto
from suanli.ingest.load import load_traces
from suanli.ingest.records import IngestReport
from suanli.store.duck import DuckStore
from tests.conftest import examples, shared_path
from tests.ingest.span_paths import both_paths, resolver_of, span_rows
from tests.otlp_proto import delimited, jsonl_to_pb

TRACE = "0af7651916cd43dd8448eb211c80319c"
JOB = "llama-34b-rlhf-rm"                              # the job of the healthy scenario's inventory
UUID_N1_G0 = "GPU-1bd210c2-fccf-4d7d-1a48-dafe2ac885f7"   # node-001 gpu index 0 in that inventory
BAD = "span_id/name missing or end before start"
T0 = 1_773_769_158_000_000_000








def _same(r_slow: IngestReport, r_fast: IngestReport) -> bool:
    return (r_slow.loaded, r_slow.unresolved, r_slow.rejected, r_slow.reasons) == \
        (r_fast.loaded, r_fast.unresolved, r_fast.rejected, r_fast.reasons)


def _v(value: Any) -> common_pb2.AnyValue:
    if isinstance(value, bool):
        return common_pb2.AnyValue(bool_value=value)
    if isinstance(value, int):
        return common_pb2.AnyValue(int_value=value)
    if isinstance(value, float):
        return common_pb2.AnyValue(double_value=value)
    if isinstance(value, bytes):
        return common_pb2.AnyValue(bytes_value=value)
    if isinstance(value, list):
        return common_pb2.AnyValue(array_value=common_pb2.ArrayValue(values=[_v(x) for x in value]))
    if isinstance(value, dict):
        return common_pb2.AnyValue(kvlist_value=common_pb2.KeyValueList(values=_kvs(value)))
    return common_pb2.AnyValue(string_value=value)


def _kvs(attrs: dict[str, Any]) -> list[common_pb2.KeyValue]:
    return [common_pb2.KeyValue(key=k, value=_v(v)) for k, v in attrs.items()]


def _sp(sid: str, name: str, t_s: float, parent: str = "", end_s: float | None = None,
        **attrs: Any) -> trace_pb2.Span:
    start = T0 + int(t_s * 1e9)
    return trace_pb2.Span(trace_id=bytes.fromhex(TRACE), span_id=bytes.fromhex(sid), parent_span_id=bytes.fromhex(parent),
                          name=name, start_time_unix_nano=start,
                          end_time_unix_nano=start + 5 if end_s is None else T0 + int(end_s * 1e9),
                          attributes=_kvs({k.replace("__", "."): v for k, v in attrs.items()}))


def _req(resource: dict[str, Any], *scopes: list[trace_pb2.Span]) -> bytes:
    return trace_service_pb2.ExportTraceServiceRequest(resource_spans=[trace_pb2.ResourceSpans(
        resource=resource_pb2.Resource(attributes=_kvs(resource)),
        scope_spans=[trace_pb2.ScopeSpans(spans=s) for s in scopes])]).SerializeToString()


RES_UUID = {"job.id": JOB, "framework.pytorch.rank": 0, "host.name": "node-001",
            "resource.gpu.id": UUID_N1_G0, "nccl.group_id": "g-res", "sla": "gold"}
STEP_ATTRS = {"train__step": 7, "ratio": 0.25, "ok": True, "tags": ["a", 1], "kv": {"x": 2}, "raw": b"\x00\xff"}
# message 1: a child and grandchild before their train_step; a span without id, one ending before
# it starts, and (second scope) one without name are dropped; message 2: a parent in message 1
MSG1 = _req(RES_UUID,
            [_sp("00000000000000c1", "forward", 1.0, "00000000000000a1"),
             _sp("", "lost", 1.5),
             _sp("00000000000000a1", "train_step", 1.0, **STEP_ATTRS),
             _sp("00000000000000d1", "nccl_kernel", 2.0, "00000000000000c1", nccl_group_id="g-span", sla="silver"),
             _sp("00000000000000e1", "backwards", 3.0, end_s=2.0)],
            [_sp("00000000000000f1", "", 4.0)])
MSG2 = _req({"service.name": "trainer"}, [_sp("00000000000000b2", "backward", 5.0, "00000000000000a1")])


def _check_hand_made(fast: list[Any]) -> None:
    """Worked out by hand from MSG1 and MSG2 and the healthy inventory."""
    by_id = {r[1]: r for r in fast}
    ident = (JOB, 0, 7, "node-001/gpu0", "node-001")
    child, step, grand = by_id["00000000000000c1"], by_id["00000000000000a1"], by_id["00000000000000d1"]
    assert [r[1] for r in fast][:3] == ["00000000000000c1", "00000000000000a1", "00000000000000d1"]
    assert child[:4] == (TRACE, "00000000000000c1", "00000000000000a1", "forward")
    assert child[4] == (T0 + 10**9) / 1e9 and child[5] == (T0 + 10**9 + 5) / 1e9
    assert child[6:11] == ident and grand[6:11] == ident and step[6:11] == ident
    assert step[2] is None                                               # no parent: NULL, not ""
    assert step[11] == {**RES_UUID, "train.step": 7, "ratio": 0.25, "ok": True, "tags": ["a", 1],
                        "kv": {"x": 2}, "raw": base64.b64encode(b"\x00\xff").decode()}
    assert grand[11]["sla"] == "silver" and grand[11]["nccl.group_id"] == "g-span"  # span attrs win
    assert grand[11]["nccl_group_id"] == "g-span" and child[11] == RES_UUID
    assert [r[12] for r in fast] == list(range(len(fast)))               # file order


def test_hand_made_stream_equals_python_path(tmp_path: Path) -> None:
    path = tmp_path / "t.pb"
    path.write_bytes(delimited([MSG1, MSG2]))
    used, slow, fast, r_slow, r_fast = both_paths(path, resolver_of(shared_path("scenarios", "healthy")))
    assert used and fast == slow and _same(r_slow, r_fast)
    _check_hand_made(fast)
    assert fast[3][1] == "00000000000000b2" and fast[3][6:11] == (JOB, 0, 7, "node-001/gpu0", "node-001")
    assert r_fast.loaded == {"spans": 4} and r_fast.unresolved == {}
    assert r_fast.reasons == [f"t.pb:message 1: span 1: {BAD}", f"t.pb:message 1: span 4: {BAD}",
                              f"t.pb:message 1: span 0: {BAD}"]


@pytest.mark.parametrize("name", ["t.binpb", "t.pb.gz", "traces"])
def test_single_message_gzip_and_sniffed(name: str, tmp_path: Path) -> None:
    path = tmp_path / name
    path.write_bytes(gzip.compress(MSG1) if name.endswith(".gz") else MSG1)
    used, slow, fast, r_slow, r_fast = both_paths(path, resolver_of(shared_path("scenarios", "healthy")))
    assert used and fast == slow and _same(r_slow, r_fast) and len(fast) == 3
    _check_hand_made(fast)
    assert r_fast.reasons[0] == f"{name}:1: span 1: {BAD}"


def test_empty_request_and_no_resolver(tmp_path: Path) -> None:
    empty = tmp_path / "e.pb"
    empty.write_bytes(_req({}, []))
    used, slow, fast, r_slow, r_fast = both_paths(empty, None)
    assert used and fast == slow == [] and r_fast.loaded == r_slow.loaded == {"spans": 0}
    plain = tmp_path / "p.pb"
    plain.write_bytes(delimited([MSG1, MSG2]))
    used, slow, fast, r_slow, r_fast = both_paths(plain, None)
    assert used and fast == slow and _same(r_slow, r_fast)
    # no inventory: the GPU UUID names nothing (c1, a1, d1); b2 has only its inherited ids, kept as given
    assert r_fast.unresolved == {"spans": 3}


def _wrap(field: int, body: bytes) -> bytes:
    return bytes([field << 3 | 2]) + _VarintBytes(len(body)) + body


@pytest.mark.parametrize("variant", ["truncated", "garbage", "start_as_varint", "dup_parent_id", "empty"])
def test_unmodelled_input_falls_back_and_matches(variant: str, tmp_path: Path) -> None:
    path = tmp_path / "t.pb"
    stream = delimited([MSG1, MSG2])
    if variant == "truncated":                      # a writer killed mid-message
        data = stream[:-7]
    elif variant == "garbage":
        data = b"\xff\xff\xff\xff not protobuf"
    elif variant == "start_as_varint":              # field 7 with wire type 0: upb keeps it as unknown
        span = _sp("00000000000000a9", "x", 1.0).SerializeToString() + b"\x38\x05"
        data = _wrap(1, _wrap(2, _wrap(2, span)))
    elif variant == "dup_parent_id":
        data = _req(RES_UUID, [_sp("00000000000000c1", "forward", 1.0, "00000000000000a1"),
                               _sp("00000000000000a1", "train_step", 1.0, train__step=1),
                               _sp("00000000000000a1", "train_step", 2.0, train__step=2)])
    else:
        data = b""
    path.write_bytes(data)
    used, slow, fast, r_slow, r_fast = both_paths(path, resolver_of(shared_path("scenarios", "healthy")))
    assert not used and fast == slow and _same(r_slow, r_fast)
    if variant in ("truncated", "garbage"):         # one line naming the file, nothing kept
        assert fast == [] and r_fast.rejected == 1
        assert r_fast.reasons[0].startswith("t.pb:1: not a protobuf ExportTraceServiceRequest (")
    if variant == "start_as_varint":
        assert fast[0][4] == (T0 + 10**9) / 1e9                          # upb keeps the field 7 with wire type 0 aside


def test_public_scenario_as_protobuf_equals_both_other_paths(tmp_path: Path) -> None:
    folder = shared_path("scenarios", "healthy")
    truth = json.loads((folder / "truth.json").read_text())
    pb = tmp_path / "traces.otlp.pb"
    jsonl_to_pb(folder / "traces.otlp.jsonl", pb)
    used, slow, fast, r_slow, r_fast = both_paths(pb, resolver_of(folder))
    assert used and fast == slow and _same(r_slow, r_fast)
    assert len(fast) == truth["files"]["spans"] and r_fast.loaded == {"spans": len(fast)}
    from_json = DuckStore(None)
    assert load_traces(folder / "traces.otlp.jsonl", from_json, resolver_of(folder), IngestReport())
    assert span_rows(from_json) == fast                                      # the same spans from either format


@pytest.mark.slow
@pytest.mark.parametrize("groups", [None, (2000, 5000)], ids=["one-stage", "staged"])
def test_simulated_scenario_equals_python_path(groups: tuple[int, int] | None, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Whole, or walked CHUNK_SPANS and staged STAGE_SPANS spans at a time (parents carried
    between stages as for JSON lines): the same spans and report as the Python path."""
    from suanli.sim import simulate
    if groups is not None:
        monkeypatch.setattr(bulk_otlp_proto, "CHUNK_SPANS", groups[0])
        monkeypatch.setattr(bulk_otlp_proto, "STAGE_SPANS", groups[1])
    folder = simulate("seed_optical_ber", tmp_path / "s", seed=3, nodes=4, minutes=3)
    pb = tmp_path / "traces.otlp.pb"
    jsonl_to_pb(folder / "traces.otlp.jsonl", pb)
    used, slow, fast, r_slow, r_fast = both_paths(pb, resolver_of(folder))
    assert used and len(fast) > 1000 and fast == slow and _same(r_slow, r_fast)


@pytest.mark.parametrize("groups", [(1, 1), (1, 2), (2, 3)])
def test_hand_made_stream_staged_request_by_request(groups: tuple[int, int], tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """MSG2's span inherits from MSG1's step span across two stages."""
    monkeypatch.setattr(bulk_otlp_proto, "CHUNK_SPANS", groups[0])
    monkeypatch.setattr(bulk_otlp_proto, "STAGE_SPANS", groups[1])
    path = tmp_path / "t.pb"
    path.write_bytes(delimited([MSG1, MSG2]))
    used, slow, fast, r_slow, r_fast = both_paths(path, resolver_of(shared_path("scenarios", "healthy")))
    assert used and fast == slow and _same(r_slow, r_fast)
    assert fast[3][6:11] == (JOB, 0, 7, "node-001/gpu0", "node-001")


def test_load_paths_takes_the_fast_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import suanli.ingest.load as load
    from suanli.ingest.load import load_paths

    def no_python(*_: Any) -> None:
        raise AssertionError("fell back to the Python parser")

    monkeypatch.setattr(load, "read_otlp", no_python)
    folder = shared_path("scenarios", "healthy")
    good = tmp_path / "good.pb"
    good.write_bytes(delimited([MSG1, MSG2]))
    store = DuckStore(None)
    report = load_paths([folder / "inventory.yaml", good], store)
    assert report.loaded["spans"] == 4 == store.stats()["spans"]
    assert report.rejected == 3


def test_a_truncated_file_beside_a_good_one(tmp_path: Path) -> None:
    from suanli.ingest.load import load_paths
    good, cut = tmp_path / "good.pb", tmp_path / "cut.pb"
    good.write_bytes(delimited([MSG1, MSG2]))
    cut.write_bytes(delimited([MSG1, MSG2])[:-7])
    store = DuckStore(None)
    report = load_paths([good, cut], store)
    assert store.stats()["spans"] == 4                                   # the good file's spans kept
    bad = [r for r in report.reasons if r.startswith("cut.pb")]
    assert len(bad) == 1 and bad[0].startswith("cut.pb:1: not a protobuf ExportTraceServiceRequest (")


@settings(max_examples=examples(80), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=3),
       cut=st.integers(0, 40), single=st.booleans())
def test_mutated_bytes_equal_python_path(tmp_path: Path, edits: list[tuple[int, int]], cut: int,
                                          single: bool) -> None:
    """Whatever bytes: the fast path (or its fallback) gives the Python path's rows and report."""
    data = bytearray(MSG1 if single else delimited([MSG1, MSG2]))
    for at, byte in edits:
        data[at % len(data)] = byte
    path = tmp_path / "m.pb"
    path.write_bytes(bytes(data[:len(data) - cut]))
    _, slow, fast, r_slow, r_fast = both_paths(path, None)
    assert fast == slow and _same(r_slow, r_fast)
