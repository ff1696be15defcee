"""OTLP spans with ``train.step`` / ``framework.pytorch.rank`` / times at the numeric edges, as
OTLP/JSON (``intValue`` text or number, ``doubleValue`` number or text) and as protobuf: the reader
never raises, a span no int64 holds is one reject naming ``file:line``, every other span is kept
with its step, and the DuckDB bulk reader gives exactly the Python reader's spans."""

from __future__ import annotations

import json
import math
import re
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from suanli.ingest.load import load_traces
from suanli.ingest.otlp import parse_otlp_json_line, parse_otlp_proto, read_otlp
from suanli.ingest.records import IngestReport
from suanli.ingest.sink import SpanBatch
from suanli.store.duck import DuckStore
from tests.fuzz.conftest import FUZZ, FUZZ_DUCK, SEED
from tests.fuzz.strategies import INT64_MAX, digits, float_texts, floats

T0_NS = 1_773_400_000 * 10**9
values = st.one_of(
    digits.map(lambda d: ({"intValue": d}, int(d) if len(d) <= 4300 else None)),
    floats.map(lambda f: ({"doubleValue": f}, f)),
    float_texts.map(lambda t: ({"doubleValue": t}, float(t) if t != "1e-400" else 0.0)),
    st.integers(min_value=-(2**64), max_value=2**64).map(lambda i: ({"intValue": i}, i)),
)


def _holds(x: Any) -> bool:
    """What an int64 step may be: a finite number whose integer part is within int64 (by hand)."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return False
    return -(2**63) <= math.trunc(x) <= INT64_MAX


def _line(steps: list[tuple[dict[str, Any], Any]], line: int = 0) -> str:
    spans = [{"traceId": f"{line + 1:032x}", "spanId": f"{line * 100 + i + 1:016x}", "name": "train_step",
              "startTimeUnixNano": str(T0_NS + i), "endTimeUnixNano": str(T0_NS + i + 10),
              "attributes": [{"key": "train.step", "value": v}]} for i, (v, _) in enumerate(steps)]
    return json.dumps({"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": spans}]}]})


@SEED
@FUZZ
@given(st.lists(values, min_size=1, max_size=6))
def test_json_steps_at_the_edges(steps: list[tuple[dict[str, Any], Any]]) -> None:
    report = IngestReport()
    spans = parse_otlp_json_line(_line(steps), None, report, source="t.jsonl", lineno=3)
    SpanBatch.from_spans(spans)
    want = [math.trunc(x) for _, x in steps if _holds(x)]
    assert [s.step for s in spans] == want
    assert report.rejected == len(steps) - len(want)
    assert all(re.match(r"t\.jsonl:3: span ", r) for r in report.reasons), report.reasons


@SEED
@FUZZ
@given(st.one_of(st.integers(min_value=-(2**63), max_value=INT64_MAX).map(lambda i: ("int_value", i)),
                 floats.map(lambda f: ("double_value", f))),
       st.integers(min_value=0, max_value=2**64 - 1))
def test_protobuf_steps_and_times_at_the_edges(value: tuple[str, Any], start_ns: int) -> None:
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

    req = trace_service_pb2.ExportTraceServiceRequest()
    sp = req.resource_spans.add().scope_spans.add().spans.add()
    sp.trace_id, sp.span_id, sp.name = b"\x01" * 16, b"\x02" * 8, "train_step"
    sp.start_time_unix_nano, sp.end_time_unix_nano = start_ns, start_ns
    attr = sp.attributes.add()
    attr.key = "train.step"
    setattr(attr.value, value[0], value[1])
    report = IngestReport()
    spans = parse_otlp_proto(req.SerializeToString(), None, report, source="t.pb")
    SpanBatch.from_spans(spans)
    ok = _holds(value[1])
    assert len(spans) == int(ok) and report.rejected == int(not ok)
    if ok:
        assert spans[0].step == math.trunc(value[1]) and spans[0].start_s == start_ns / 1e9


@SEED
@FUZZ_DUCK
@given(st.lists(st.lists(values, min_size=1, max_size=3), min_size=1, max_size=4))
def test_bulk_reader_equals_python_reader(lines: list[list[tuple[dict[str, Any], Any]]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.otlp.jsonl"
        path.write_text("\n".join(_line(s, n) for n, s in enumerate(lines)) + "\n")
        slow_report = IngestReport()
        slow = [(s.span_id, s.step) for s in read_otlp(path, None, slow_report)]
        store, report = DuckStore(None), IngestReport()
        try:
            load_traces(path, store, None, report)
            fast = sorted(zip(store.spans().span_id.tolist(), store.spans().step.tolist(), strict=True))
        finally:
            store.close()
    assert fast == sorted((sid, -1 if st_ is None else st_) for sid, st_ in slow)
    assert report.rejected == slow_report.rejected == sum(not _holds(x) for s in lines for _, x in s)
