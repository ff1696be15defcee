"""OTLP spans: the public scenarios, protobuf round trips, bad input, attribute merging."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from google.protobuf import json_format
from google.protobuf.internal.encoder import _VarintBytes  # type: ignore[attr-defined]
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.resource.v1 import resource_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from suanli.ingest.otlp import parse_otlp_json_line, parse_otlp_proto, read_otlp
from suanli.ingest.records import IngestReport, Span
from tests.conftest import examples, shared_path
from tests.ingest.test_logs_support import InventoryResolver
from tests.otlp_json import request_line, span

SCENARIOS = ("healthy", "switch_port_errors", "pcie_riser")


def _span(sid: str, name: str, start_ns: int, end_ns: int, parent: str | None = None,
          **attrs: Any) -> dict[str, Any]:
    return span("0af7651916cd43dd8448eb211c80319c", sid, name, start_ns, end_ns, parent, **attrs)


def _request(resource: dict[str, Any], spans: list[dict[str, Any]]) -> str:
    return request_line(resource, spans)


RES = {"job.id": "job-a", "framework.pytorch.rank": 3, "host.name": "node-001",
       "resource.gpu.id": "node-001/gpu3", "nccl.group_id": "g-res", "nccl.rank": 1}


# -- the public scenarios -------------------------------------------------------------------

@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_span_counts_and_identity(name: str) -> None:
    folder = shared_path("scenarios", name)
    truth = json.loads((folder / "truth.json").read_text())
    resolver = InventoryResolver.load(folder / "inventory.yaml")
    report = IngestReport()
    spans = list(read_otlp(folder / "traces.otlp.jsonl", resolver, report))
    assert len(spans) == truth["files"]["spans"]
    assert report.rejected == 0 and report.unresolved == {}
    assert report.loaded["spans"] == truth["files"]["spans"]
    missing = [s for s in spans if None in (s.job_id, s.rank, s.step, s.gpu_id, s.node_id)]
    assert missing == []
    # independent check of inheritance: each child's step is its train_step parent's train.step,
    # read straight from the JSON here
    step_of: dict[str, int] = {}
    uuid_of_rank: dict[tuple[str, int], str] = {}
    for line in (folder / "traces.otlp.jsonl").read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            res = {a["key"]: a["value"] for a in rs["resource"]["attributes"]}
            uuid_of_rank[(res["job.id"]["stringValue"], int(res["framework.pytorch.rank"]["intValue"]))] = \
                res["resource.gpu.id"]["stringValue"]
            for ss in rs["scopeSpans"]:
                for sp in ss["spans"]:
                    for a in sp.get("attributes", []):
                        if a["key"] == "train.step":
                            step_of[sp["spanId"]] = int(a["value"]["intValue"])
    children = [s for s in spans if s.parent_id]
    assert children and all(s.step == step_of[s.parent_id] for s in children if s.parent_id)
    for s in spans[:500]:      # resource.gpu.id is a UUID or already the canonical id
        raw = uuid_of_rank[(str(s.job_id), int(s.rank or 0))]
        assert s.gpu_id == (raw if "/gpu" in raw else resolver.by_uuid[raw])


# -- JSON lines: merging, inheritance, bad records -------------------------------------------

def test_child_before_parent_inherits_step_and_span_attrs_win() -> None:
    line = _request(RES, [
        _span("00000000000000a1", "allreduce", 2_000_000_000, 3_000_000_000, "00000000000000b1",
              nccl_group_id="g-span", nccl_rank=5, job__id="job-b"),
        _span("00000000000000b1", "train_step", 1_000_000_000, 4_500_000_000, None, train__step=42),
    ])
    report = IngestReport()
    spans = parse_otlp_json_line(line, None, report, source="t.jsonl")
    child, parent = spans
    assert (parent.step, parent.job_id, parent.rank, parent.gpu_id, parent.node_id) == \
        (42, "job-a", 3, "node-001/gpu3", "node-001")
    assert child.step == 42                        # inherited from the parent that came after it
    assert child.job_id == "job-b"                 # the span's own job.id wins over the resource's
    assert child.attrs["nccl.group_id"] == "g-span" and child.attrs["nccl.rank"] == 5
    assert parent.attrs["nccl.group_id"] == "g-res"
    assert (child.start_s, child.end_s) == (2.0, 3.0)
    assert child.parent_id == "00000000000000b1"


def test_parent_in_an_earlier_line_is_remembered(tmp_path: Path) -> None:
    p = tmp_path / "t.otlp.jsonl"
    p.write_text(
        _request(RES, [_span("00000000000000b1", "train_step", 10**9, 2 * 10**9, None, train__step=7)]) + "\n"
        + _request({"job.id": "job-a"}, [_span("00000000000000a1", "forward", 10**9, 15 * 10**8,
                                               "00000000000000b1")]) + "\n")
    spans = list(read_otlp(p, None, IngestReport()))
    assert [s.step for s in spans] == [7, 7]
    assert spans[1].rank == 3 and spans[1].gpu_id == "node-001/gpu3"


def test_bad_lines_and_spans_are_rejected_rest_kept(tmp_path: Path) -> None:
    good = _span("00000000000000b1", "train_step", 10**9, 2 * 10**9, None, train__step=1)
    no_end = {k: v for k, v in _span("00000000000000b2", "train_step", 10**9, 0).items()
              if k != "endTimeUnixNano"}
    backwards = _span("00000000000000b3", "train_step", 5 * 10**9, 10**9)
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join([_request(RES, [good, no_end, backwards]), "{not json", "[1, 2]", "",
                            _request(RES, [good])]) + "\n")
    report = IngestReport()
    spans = list(read_otlp(p, None, report))
    assert len(spans) == 2
    # 2 bad spans on line 1, a non-JSON line 2, a list of non-requests on line 3 (two items)
    assert report.rejected == 5
    assert report.reasons[0].startswith("t.jsonl:1: span 1: endTimeUnixNano missing")
    assert report.reasons[2].startswith("t.jsonl:2: not JSON")


def test_unresolvable_spans_are_kept_and_counted() -> None:
    resolver = InventoryResolver({"racks": [{"id": "r", "nodes": [{"id": "node-001", "gpus": [
        {"index": 3, "uuid": "GPU-x"}]}]}], "jobs": [{"id": "job-a"}]})
    line = _request({**RES, "job.id": "nobody", "resource.gpu.id": "GPU-x"},
                    [_span("00000000000000b1", "train_step", 10**9, 2 * 10**9, None, train__step=1)])
    report = IngestReport()
    (span,) = parse_otlp_json_line(line, resolver, report)
    assert span.job_id is None and span.gpu_id == "node-001/gpu3" and span.node_id == "node-001"
    assert report.unresolved == {"spans": 1}


def test_gzip_and_pretty_printed_documents(tmp_path: Path) -> None:
    doc = json.loads(_request(RES, [_span("00000000000000b1", "train_step", 10**9, 2 * 10**9, None,
                                          train__step=9)]))
    gz = tmp_path / "traces.otlp.jsonl.gz"
    gz.write_bytes(gzip.compress((json.dumps(doc) + "\n").encode()))
    pretty = tmp_path / "traces.json"
    pretty.write_text(json.dumps(doc, indent=2))
    for path in (gz, pretty):
        report = IngestReport()
        (span,) = list(read_otlp(path, None, report))
        assert span.step == 9 and report.rejected == 0


# -- protobuf ------------------------------------------------------------------------------

def _any(value: Any) -> common_pb2.AnyValue:
    if isinstance(value, int):
        return common_pb2.AnyValue(int_value=value)
    return common_pb2.AnyValue(string_value=value)


def _proto_request(step: int, rank: int) -> trace_service_pb2.ExportTraceServiceRequest:
    res_attrs = [common_pb2.KeyValue(key=k, value=_any(v)) for k, v in
                 {**RES, "framework.pytorch.rank": rank}.items()]
    child = trace_pb2.Span(trace_id=bytes.fromhex("0af7651916cd43dd8448eb211c80319c"),
                           span_id=bytes.fromhex("00000000000000a1"), parent_span_id=bytes.fromhex("00000000000000b1"),
                           name="forward", start_time_unix_nano=1_773_769_158_580_447_000,
                           end_time_unix_nano=1_773_769_159_000_000_000)
    parent = trace_pb2.Span(trace_id=bytes.fromhex("0af7651916cd43dd8448eb211c80319c"),
                            span_id=bytes.fromhex("00000000000000b1"), name="train_step",
                            start_time_unix_nano=1_773_769_158_000_000_000,
                            end_time_unix_nano=1_773_769_160_000_000_000,
                            attributes=[common_pb2.KeyValue(key="train.step", value=_any(step))])
    return trace_service_pb2.ExportTraceServiceRequest(resource_spans=[trace_pb2.ResourceSpans(
        resource=resource_pb2.Resource(attributes=res_attrs),
        scope_spans=[trace_pb2.ScopeSpans(spans=[child, parent])])])


def _key(s: Span) -> tuple[Any, ...]:
    return (s.trace_id, s.span_id, s.parent_id, s.name, s.start_s, s.end_s, s.job_id, s.rank, s.step,
            s.gpu_id, s.node_id, s.attrs)


def test_protobuf_round_trip_equals_json_mapping() -> None:
    req = _proto_request(step=70385, rank=32)
    report = IngestReport()
    from_proto = parse_otlp_proto(req.SerializeToString(), None, report)
    # the same message through protobuf's own JSON mapping (base64 ids, int64 as strings)
    from_json = parse_otlp_json_line(json_format.MessageToJson(req), None, report)
    assert [_key(s) for s in from_proto] == [_key(s) for s in from_json]
    child = from_proto[0]
    assert child.trace_id == "0af7651916cd43dd8448eb211c80319c" and child.span_id == "00000000000000a1"
    assert (child.step, child.rank, child.job_id) == (70385, 32, "job-a")
    assert child.start_s == pytest.approx(1_773_769_158.580447, abs=1e-6)
    assert report.rejected == 0


def test_protobuf_files_single_and_length_delimited(tmp_path: Path) -> None:
    one = _proto_request(1, 0).SerializeToString()
    two = _proto_request(2, 1).SerializeToString()
    single = tmp_path / "t.pb"
    single.write_bytes(one)
    stream = tmp_path / "t.bin"
    # protobuf's own delimited framing (what Java's writeDelimitedTo writes): varint length + message
    stream.write_bytes(_VarintBytes(len(one)) + one + _VarintBytes(len(two)) + two)
    sniffed = tmp_path / "traces"            # no extension: content decides
    sniffed.write_bytes(one)
    for path, steps in ((single, [1, 1]), (stream, [1, 1, 2, 2]), (sniffed, [1, 1])):
        report = IngestReport()
        assert [s.step for s in read_otlp(path, None, report)] == steps
        assert report.rejected == 0


# -- never raises ----------------------------------------------------------------------------

GOOD = _request(RES, [_span("00000000000000aa", "train_step", 10**18, 10**18 + 2 * 10**9, train__step=7)])


def _well_formed(spans: list[Any], report: IngestReport, source: str) -> None:
    """What any input may give: spans with OTLP-shaped ids and finite, ordered times; rejects as
    one line each naming the source."""
    for s in spans:
        assert len(s.span_id) == 16 and int(s.span_id, 16) >= 0
        assert len(s.trace_id) == 32 and int(s.trace_id, 16) >= 0
        assert np.isfinite(s.start_s) and np.isfinite(s.end_s) and s.end_s >= s.start_s
    assert all(r.startswith(source) and "\n" not in r for r in report.reasons)


@settings(max_examples=examples(150), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=400))
def test_arbitrary_bytes_give_well_formed_spans_and_keep_a_good_line(tmp_path: Path, data: bytes) -> None:
    for name in ("x.pb", "x.jsonl", "x"):
        p = tmp_path / name
        p.write_bytes(data)
        report = IngestReport()
        _well_formed(list(read_otlp(p, None, report)), report, name)
    # a junk line before a good JSON line does not lose it: the good span comes out with its step
    # ("x " first, so that the junk is neither a gzip header nor the "{" of a pretty-printed file)
    p = tmp_path / "y.jsonl"
    p.write_bytes(b"x " + data.replace(b"\n", b" ") + b"\n" + GOOD.encode())
    report = IngestReport()
    got = [s for s in read_otlp(p, None, report) if s.span_id == "00000000000000aa"]
    assert [(s.step, s.rank, s.end_s - s.start_s) for s in got] == [(7, 3, 2.0)]


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                     lambda c: st.lists(c, max_size=4) | st.dictionaries(
                         st.sampled_from(["resourceSpans", "resource", "attributes", "scopeSpans", "spans",
                                          "spanId", "name", "startTimeUnixNano", "endTimeUnixNano", "key",
                                          "value", "intValue", "parentSpanId"]), c, max_size=4),
                     max_leaves=30)


@settings(max_examples=examples(300), deadline=None, derandomize=True)
@given(doc=_json, text=st.text(max_size=200))
def test_arbitrary_json_and_text_give_well_formed_spans(doc: Any, text: str) -> None:
    for line in (json.dumps(doc), text):
        report = IngestReport()
        spans = parse_otlp_json_line(line, None, report, source="otlp")
        _well_formed(spans, report, "otlp")


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_every_descendant_inherits_its_roots_step(data: st.DataObject) -> None:
    n_roots = data.draw(st.integers(1, 4))
    parents: list[int | None] = [None] * n_roots
    for i in range(data.draw(st.integers(0, 15))):   # under an earlier span: at most 15 hops (limit 16)
        parents.append(data.draw(st.integers(0, n_roots + i - 1)))
    order = data.draw(st.permutations(range(len(parents))))
    spans = []
    for i in order:
        p = parents[i]
        extra = {"train__step": 100 + i} if p is None else {}
        spans.append(_span(f"{i + 1:016x}", "train_step" if p is None else "phase", 10**9, 2 * 10**9,
                           None if p is None else f"{p + 1:016x}", **extra))
    got = {s.span_id: s.step for s in parse_otlp_json_line(_request(RES, spans), None, IngestReport())}

    def root(i: int) -> int:
        p = parents[i]
        return i if p is None else root(p)

    assert got == {f"{i + 1:016x}": 100 + root(i) for i in range(len(parents))}
