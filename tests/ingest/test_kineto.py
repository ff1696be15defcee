"""Kineto traces: recognition, the rank and where it came from, and reading damaged or huge files."""

from __future__ import annotations

import gzip
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from suanli.errors import InputError
from suanli.ingest.kineto import is_kineto_trace, rank_from_name, read_kineto, read_trace
from suanli.ingest.records import IngestReport
from tests.conftest import shared_path


def _k(name: str, ts: float, dur: float, corr: int = -1, cat: str = "kernel", stream: int = 7) -> dict[str, Any]:
    args: dict[str, Any] = {"stream": stream, "device": 0}
    if corr >= 0:
        args["correlation"] = corr
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur, "args": args}


def _launch(ts: float, corr: int) -> dict[str, Any]:
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts,
            "dur": 3, "args": {"correlation": corr}}


def _text(events: list[Any], head: str = '"schemaVersion": 1, "distributedInfo": {"rank": 3}, ') -> str:
    """Kineto's layout: a few keys, then one event per line."""
    body = ",\n".join("  " + json.dumps(e) for e in events)
    return "{" + head + '"traceEvents": [\n' + body + "\n]}\n"


def _write(path: Path, text: str) -> Path:
    path.write_bytes(gzip.compress(text.encode()) if path.name.endswith(".gz") else text.encode())
    return path


# --- recognition -------------------------------------------------------------------------------

def test_recognised_by_name_without_reading(tmp_path: Path) -> None:
    assert is_kineto_trace(tmp_path / "host_1234.1700000000.pt.trace.json")      # need not exist
    assert is_kineto_trace(tmp_path / "worker0.pt.trace.json.gz")
    assert not is_kineto_trace(tmp_path / "metrics.om")
    assert not is_kineto_trace(tmp_path / "missing.json")                     # unreadable: no, no raise


def test_recognised_by_content(tmp_path: Path) -> None:
    trace = _write(tmp_path / "rank0.json.gz", _text([_k("gemm", 0, 1)]))
    otlp = _write(tmp_path / "traces.json", json.dumps({"resourceSpans": [{"scopeSpans": []}]}))
    listed = _write(tmp_path / "list.json", json.dumps([{"traceEvents": []}]))
    # traceEvents past the sniffed first MiB: not recognised (the documented limit), never read whole
    late = _write(tmp_path / "late.json", '{"pad": "' + "x" * (1 << 20) + '", "traceEvents": []}')
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(_text([_k("gemm", 0, 1)] * 50).encode())[:200])
    assert is_kineto_trace(trace) and is_kineto_trace(cut)
    assert not is_kineto_trace(otlp) and not is_kineto_trace(listed) and not is_kineto_trace(late)


def test_real_traces_are_recognised_and_other_json_is_not() -> None:
    folders = [shared_path("realdata", "traces", "hta"), shared_path("realdata", "third-party", "kineto")]
    traces = [f for d in folders for f in d.rglob("*") if f.is_file()]
    assert len(traces) >= 16 and all(is_kineto_trace(f) for f in traces)
    otlp = [f for f in shared_path("realdata", "third-party", "otlp").rglob("*.json*") if f.is_file()]
    assert otlp and not any(is_kineto_trace(f) for f in otlp)


# --- the rank ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "rank"), [
    ("cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", 34), ("mtia_rank_0.json.gz", 0),
    ("rank0.json.gz", 0), ("sampled_rank-1.json.gz", 1), ("RANK_12.json", 12),
    ("local_rank_3.json", None), ("ranks_8.json", None), ("prank3.json", None), ("trace.json", None)])
def test_rank_from_name(name: str, rank: int | None) -> None:
    assert rank_from_name(name) == rank


def test_rank_sources_on_real_traces() -> None:
    kt = shared_path("realdata", "third-party", "kineto")
    stated = read_trace(kt / "hta__trace_diff_control_control.json.gz")
    assert (stated.rank, stated.rank_source, stated.world_size) == (3, "distributedInfo", 8)
    # distributedInfo comes after traceEvents in this file: still read
    late = read_trace(kt / "hta__cupti_profiler_benchmark_result_924719_1679055439_trace.json.gz")
    assert (late.rank, late.rank_source) == (0, "distributedInfo")
    named = read_trace(kt / "hta__mtia_inference_trace_mtia_inference_rank_0.json.gz")
    assert (named.rank, named.rank_source) == (0, "file name")
    unknown = read_trace(kt / "hta__distributed_info_unavailable_distributed_info_not_found.json.gz")
    assert (unknown.rank, unknown.rank_source) == (None, None)


# --- real traces of every kind of device -------------------------------------------------------

def _device_events_by_hand(path: Path) -> int:
    """Complete events of a device category with an integer stream >= 0, counted from json.load."""
    raw = path.read_bytes()
    doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    cats = {"kernel", "gpu_memcpy", "gpu_memset", "mtia_ccp_events"}
    return sum(1 for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") in cats
               and isinstance(e.get("args", {}).get("stream"), int) and e["args"]["stream"] >= 0)


@pytest.mark.parametrize(("name", "kind"), [
    ("hta__amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz", "ROCm/HIP"),
    ("hta__mtia_inference_trace_mtia_inference_rank_0.json.gz", "MTIA"),
    ("hta__cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", "CPU only"),
    ("hta__call_stack_backward_thread.json", "plain JSON"),
    ("hta__triton_example_triton_example.json.gz", "Triton")])
def test_real_device_kinds_read_whole(name: str, kind: str) -> None:
    path = shared_path("realdata", "third-party", "kineto", name)
    trace = read_trace(path)
    assert int(trace.device_mask().sum()) == _device_events_by_hand(path), kind
    assert trace.problems == () and trace.rejected == 0


def test_stream_events_outside_device_categories_are_kept_apart() -> None:
    kt = shared_path("realdata", "third-party", "kineto")
    # AlexNet: 41 cuda_sync records (the host waiting) sit on stream 7 beside 98 kernels, copies, fills
    alexnet = read_trace(kt / "hta__critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz")
    assert len(alexnet) == 98 + 41 and int(alexnet.device_mask().sum()) == 98
    # Triton: the launcher's cpu_op carries "stream": 0; only the kernel is device work
    triton = read_trace(kt / "hta__triton_example_triton_example.json.gz")
    assert sorted(triton.cats) == ["cpu_op", "kernel"] and int(triton.device_mask().sum()) == 1


def test_rocm_trace_launches_and_steps() -> None:
    trace = read_trace(shared_path("realdata", "third-party", "kineto",
                                   "hta__amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"))
    # 14 kernels and 2 copies; hipLaunchKernel's stream is "0x0", so it stays a host launch
    assert sorted(trace.cats) == ["gpu_memcpy", "kernel"] and len(trace) == 16
    assert trace.fractional_ts and set(trace.step_no.tolist()) == {1, 2}
    assert (trace.launch_ts() > 0).all()            # every device event's launch is in the trace


# --- damaged files -----------------------------------------------------------------------------

def test_truncated_text_keeps_what_came_before(tmp_path: Path) -> None:
    events = [_k(f"gemm{i}", i * 10, 5) for i in range(6)]
    text = _text(events)
    cut = text.index('"gemm4"') + 3                         # inside the fifth event, on line 6
    trace = read_trace(_write(tmp_path / "cut.json", text[:cut]))
    assert trace.names == ("gemm0", "gemm1", "gemm2", "gemm3")
    assert len(trace.problems) == 1 and trace.problems[0].startswith(f"{tmp_path / 'cut.json'}:6: truncated")


def test_truncated_gzip_keeps_what_came_before(tmp_path: Path) -> None:
    events = [_k("gemm", i * 10, 5, cat="kernel") for i in range(3000)]
    blob = gzip.compress(_text(events).encode())
    path = tmp_path / "cut.json.gz"
    path.write_bytes(blob[: len(blob) // 2])
    trace = read_trace(path)
    assert 0 < len(trace) < 3000
    assert "truncated: the compressed stream ends early" in trace.problems[0]


def test_corrupt_event_is_skipped_to_the_next_line(tmp_path: Path) -> None:
    lines = _text([_k("a", 0, 1), _k("b", 10, 1), _k("c", 20, 1)]).split("\n")
    lines[2] = lines[2].replace('"ts": 10', '"ts": 1O')              # line 3 (event b): not JSON
    path = _write(tmp_path / "bad.json", "\n".join(lines))
    trace = read_trace(path)
    assert trace.names == ("a", "c") and trace.rejected == 1
    assert trace.problems == (f"{path}:3: not JSON (Expecting ',' delimiter)",)


def test_bad_times_are_rejected_with_their_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.json", _text([_k("a", 0, 1), _k("b", "x", 1),   # type: ignore[arg-type]
                                              _k("c", 5, -2), 7, _k("d", 9, 1)]))
    report = IngestReport()
    spans = read_kineto(path, job_id="job-a", report=report)
    assert [s.name for s in spans] == ["a", "d"] and report.rejected == 3
    assert [r.split(": ", 1)[0] for r in report.reasons] == [f"{path}:3", f"{path}:4", f"{path}:5"]
    assert spans[0].rank == 3 and spans[0].job_id == "job-a" and report.loaded == {"kernels": 2}


@pytest.mark.parametrize(("text", "what"), [
    ("", "empty file"), ("hello", "not a JSON object"), ('{"a": 1, "b" 2}', "expected a key and ':'"),
    ('{"schemaVersion": 1}', "no traceEvents array"), ('{"deviceProperties": [', "not a Kineto trace")])
def test_not_a_trace_is_one_line_naming_the_file(tmp_path: Path, text: str, what: str) -> None:
    path = _write(tmp_path / "x.json", text)
    with pytest.raises(InputError, match=what) as err:
        read_trace(path)
    assert str(err.value).startswith(str(path)) and "\n" not in str(err.value)


def test_damaged_gzip_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(b"\x1f\x8b" + b"\x00" * 40)
    with pytest.raises(InputError, match=r"bad\.json\.gz"):
        read_trace(bad)
    with pytest.raises(InputError, match="cannot read"):
        read_trace(tmp_path / "missing.pt.trace.json")


def test_huge_trace_streams_in_bounded_memory(tmp_path: Path) -> None:
    host = [{"ph": "X", "cat": "cpu_op", "name": f"aten::op_{i % 50}", "pid": 1, "tid": 1, "ts": i * 10,
             "dur": 5, "args": {"External id": i, "Sequence number": i}} for i in range(70_000)]
    kernels = [_k("gemm", i * 100, 50, corr=i) for i in range(500)]
    path = _write(tmp_path / "big.pt.trace.json", _text(host + kernels))
    size = path.stat().st_size
    tracemalloc.start()
    try:
        trace = read_trace(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert size > 10e6 and len(trace) == 500 and trace.events == 70_500
    assert peak < size / 4, f"peak {peak / 1e6:.1f} MB for a {size / 1e6:.1f} MB file"


# --- spans for the store -------------------------------------------------------------------------

def test_spans_carry_kind_step_and_launch(tmp_path: Path) -> None:
    steps = [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "ts": t, "dur": 100}
             for n, t in ((7, 0), (8, 100))]
    events = [*steps, _launch(10, 1), _k("ampere_gemm", 20, 30, corr=1), _launch(150, 2),
              _k("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 160, 50, corr=2),
              _k("Memcpy DtoH (Device -> Pinned)", 300, 5, corr=3, cat="gpu_memcpy"),   # launch not in trace
              _k("not on a stream", 0, 1, stream=-1)]
    spans = read_kineto(_write(tmp_path / "r.json.gz", _text(events)))
    assert [(s.name[:6], s.attrs["kind"], s.step) for s in spans] == [
        ("ampere", "compute", 7), ("ncclDe", "communication", 8), ("Memcpy", "memory", None)]
    assert spans[0].start_s == pytest.approx(20e-6) and spans[0].end_s == pytest.approx(50e-6)
    assert spans[1].attrs["correlation"] == 2 and spans[0].attrs["rank_source"] == "distributedInfo"
    assert spans[0].span_id == "3" and spans[0].trace_id == "r.json.gz"
