"""The real OpenTelemetry SDK exporter sends spans to the receiver under uvicorn; they arrive as the
same spans, written to a file by the SDK's own encoder, are read back by suanli's file reader."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from suanli.ingest.otlp import read_otlp
from suanli.ingest.records import IngestReport
from suanli.inventory import load_inventory
from tests.conftest import shared_path
from tests.web._server import AUTH, Recorder, make_app, serving


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


class _Tee(SpanExporter):
    """Each batch the SDK exports: appended to a file (length-delimited protobuf) and sent over OTLP/HTTP."""

    def __init__(self, path: Path, wire: OTLPSpanExporter) -> None:
        self.path, self.wire = path, wire
        self.results: list[SpanExportResult] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        msg = encode_spans(spans).SerializeToString()
        with self.path.open("ab") as fh:
            fh.write(_varint(len(msg)) + msg)
        result = self.wire.export(spans)
        self.results.append(result)
        return result

    def shutdown(self) -> None:
        self.wire.shutdown()


def test_sdk_spans_arrive_as_the_file_reader_reads_them(tmp_path: Path) -> None:
    inv = load_inventory(shared_path("scenarios", "switch_port_errors", "inventory.yaml"))
    gpu = inv.gpus["node-002/gpu3"]
    rec = Recorder()
    file = tmp_path / "spans.pb"
    with serving(make_app(rec, resolver=inv.resolver)) as url:
        wire = OTLPSpanExporter(endpoint=f"{url}/v1/traces", headers=AUTH, compression=Compression.Gzip,
                                timeout=10)
        tee = _Tee(file, wire)
        provider = TracerProvider(resource=Resource.create({
            "job.id": "llama-34b-continual", "framework.pytorch.rank": 11, "resource.gpu.id": gpu.uuid,
            "host.name": "node-002"}))
        provider.add_span_processor(BatchSpanProcessor(tee, max_export_batch_size=64, schedule_delay_millis=50))
        tracer = provider.get_tracer("suanli-test")
        for step in range(40):
            with tracer.start_as_current_span("train_step", attributes={"train.step": step, "train.tokens": 4096}):
                for phase in ("forward", "backward", "allreduce", "optimizer"):
                    with tracer.start_as_current_span(phase, attributes={"nccl.bytes": 1 << 20} if phase ==
                                                      "allreduce" else None):
                        pass
        provider.shutdown()
        got = rec.wait("spans", 200)
    assert tee.results and all(r is SpanExportResult.SUCCESS for r in tee.results)
    assert len(tee.results) >= 4                          # 200 spans in batches of at most 64
    expected = list(read_otlp(file, inv.resolver, IngestReport()))
    assert len(expected) == 200 == len(got)
    assert got == expected
    steps = [s for s in got if s.name == "train_step"]
    assert [s.step for s in steps] == list(range(40))
    assert {(s.job_id, s.rank, s.gpu_id, s.node_id) for s in got} == {
        ("llama-34b-continual", 11, "node-002/gpu3", "node-002")}
