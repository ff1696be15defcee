"""``suanli profile`` on small traces whose time split is worked out by hand in each test."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest

from suanli.analysis.profile import (
    FRACTION_KEYS,
    TABLE_COLUMNS,
    ProfileConfig,
    RankProfile,
    format_profile_table,
    profile_json,
    profile_table,
    profile_traces,
)
from suanli.errors import InputError
from suanli.ingest.kineto import KinetoConfig

GEMM = "void cutlass::Kernel<cutlass_80_tensorop_s16816gemm_f16_128x128_32x4_nn_align8>(Params)"
ALLREDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def _k(name: str, ts: float, dur: float, stream: int = 7, corr: int = -1, cat: str = "kernel") -> dict[str, Any]:
    args: dict[str, Any] = {"stream": stream, "device": 0}
    if corr >= 0:
        args["correlation"] = corr
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur, "args": args}


def _trace(tmp: Path, events: list[dict[str, Any]], name: str = "rank-0.pt.trace.json",
           info: dict[str, Any] | None = None) -> Path:
    doc: dict[str, Any] = {"schemaVersion": 1, "traceEvents": events}
    if info is not None:
        doc["distributedInfo"] = info
    path = tmp / name
    path.write_text(json.dumps(doc))
    return path


def _one(tmp: Path, events: list[dict[str, Any]], config: ProfileConfig | None = None) -> RankProfile:
    (r,) = profile_traces([_trace(tmp, events)], config).ranks
    return r


def _split(r: RankProfile) -> dict[str, float]:
    f = r.fractions
    assert f is not None
    return f


def test_fully_hidden_allreduce(tmp_path: Path) -> None:
    # gemm 0..100 on stream 7; all-reduce 20..60 on stream 20, wholly under it.
    # span 100, compute 100, comm 40 of which 40 hidden: exposed 0, other 0, idle 0.
    r = _one(tmp_path, [_k(GEMM, 0, 100), _k(ALLREDUCE, 20, 40, stream=20)])
    assert r.span_s == pytest.approx(100e-6)
    assert _split(r) == pytest.approx({"compute": 1.0, "communication": 0.4, "exposed_communication": 0.0,
                                       "other": 0.0, "idle": 0.0, "non_compute": 0.0})
    assert r.comm_overlap == pytest.approx(1.0)


def test_partially_hidden_allreduce_with_a_copy_and_a_gap(tmp_path: Path) -> None:
    # gemm 0..100, all-reduce 80..150 (80..100 under the gemm), copy 160..170, gemm 180..200.
    # span 200; busy = 0..150 + 160..170 + 180..200 = 180 -> idle 20 (0.10)
    # compute 100 + 20 = 120 (0.60); comm 70 (0.35), hidden 20 -> exposed 50 (0.25)
    # other = the copy alone, 10 (0.05); 0.60 + 0.25 + 0.05 + 0.10 = 1; overlap 20/70.
    r = _one(tmp_path, [_k(GEMM, 0, 100), _k(ALLREDUCE, 80, 70, stream=20),
                        _k("Memcpy DtoD (Device -> Device)", 160, 10, cat="gpu_memcpy"), _k(GEMM, 180, 20)])
    assert _split(r) == pytest.approx({"compute": 0.60, "communication": 0.35, "exposed_communication": 0.25,
                                       "other": 0.05, "idle": 0.10, "non_compute": 0.30})
    assert r.comm_overlap == pytest.approx(20 / 70)
    assert r.memory_s == pytest.approx(10e-6)


def test_nested_kernels_on_several_streams(tmp_path: Path) -> None:
    # gemm A 0..100 (stream 7) holds gemm B 10..30 (stream 8) and all-reduce 40..50 (stream 9);
    # a second all-reduce 90..120 sticks out by 20; a memset 110..115 runs under it.
    # compute = 100 (B is inside A); comm = 10 + 30 = 40, hidden 10 + 10 = 20 -> exposed 20;
    # busy = 0..120 = span: idle 0; the memset is under communication: other 0.
    r = _one(tmp_path, [_k(GEMM, 0, 100), _k(GEMM, 10, 20, stream=8), _k(ALLREDUCE, 40, 10, stream=9),
                        _k(ALLREDUCE, 90, 30, stream=9), _k("Memset (Device)", 110, 5, cat="gpu_memset")])
    assert _split(r) == pytest.approx({"compute": 100 / 120, "communication": 40 / 120,
                                       "exposed_communication": 20 / 120, "other": 0.0, "idle": 0.0,
                                       "non_compute": 20 / 120})
    assert r.comm_overlap == pytest.approx(0.5)


def test_expert_parallel_and_hccl_kernels_are_communication(tmp_path: Path) -> None:
    # DeepEP dispatch 0..30 and combine 70..100 around an expert gemm 30..70; an Ascend HCCL
    # all-reduce 100..110; DeepEP's layout kernel 110..120 is compute. span 120:
    # compute 40 + 10 = 50; comm 30 + 30 + 10 = 70, none hidden; idle 0.
    events = [_k("void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, int*)", 0, 30),
              _k(GEMM, 30, 40), _k("void deep_ep::internode_ll::combine<false, 7168>(void*, int*)", 70, 30),
              _k("hcom_allReduce__612_0_1", 100, 10),
              _k("void deep_ep::layout::get_dispatch_layout<256, 32, 8>(long const*, int*)", 110, 10)]
    f = _split(_one(tmp_path, events))
    assert (f["compute"], f["communication"], f["exposed_communication"], f["idle"]) == pytest.approx(
        (50 / 120, 70 / 120, 70 / 120, 0.0))


def test_last_profiler_step_is_left_out_as_hta_does(tmp_path: Path) -> None:
    # Steps #4 [0, 1000) and #5 [1000, 2000). Launched in #4 at 10: gemm 100..200. Launched in #5
    # at 1500: gemm 1600..1700 (left out). A memcpy with no correlation at 500..520 starts before
    # #5: kept. A kernel whose launch is not in the trace (correlation 99): left out.
    # Kept: 100..200 and 500..520 -> span 420, busy 120, compute 100, other 20, idle 300.
    steps = [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "ts": t, "dur": 1000}
             for n, t in ((4, 0), (5, 1000))]
    launch = [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": t, "dur": 5,
               "args": {"correlation": c}} for t, c in ((10, 1), (1500, 2))]
    events = [*steps, *launch, _k(GEMM, 100, 100, corr=1), _k(GEMM, 1600, 100, corr=2),
              _k("Memcpy HtoD (Pageable -> Device)", 500, 20, cat="gpu_memcpy"), _k(GEMM, 300, 50, corr=99)]
    r = _one(tmp_path, events)
    assert r.span_s == pytest.approx(420e-6) and r.left_out_events == 2 and r.steps == (4,)
    assert _split(r) == pytest.approx({"compute": 100 / 420, "communication": 0.0, "exposed_communication": 0.0,
                                       "other": 20 / 420, "idle": 300 / 420, "non_compute": 20 / 420})
    every = _one(tmp_path, events, ProfileConfig(drop_last_step=False))     # 100..1700 all four
    assert every.span_s == pytest.approx(1600e-6) and every.left_out_events == 0 and every.steps == (4, 5)


def test_fractional_microseconds_are_rounded_as_hta_does(tmp_path: Path) -> None:
    # gemm 10.4..15.6 -> 11..15 (4 us); gemm 20.2..20.7 -> 21..20: nothing; gemm 30.5..40.0 -> 31..40.
    # Rounded: span 11..40 = 29, busy 4 + 9 = 13. Exact: span 10.4..40 = 29.6, busy 5.2 + 0.5 + 9.5.
    events = [_k(GEMM, 10.4, 5.2), _k(GEMM, 20.2, 0.5), _k(GEMM, 30.5, 9.5)]
    rounded = _one(tmp_path, events)
    assert (rounded.span_s, rounded.busy_s) == pytest.approx((29e-6, 13e-6))
    exact = _one(tmp_path, events, ProfileConfig(round_to_us=False))
    assert (exact.span_s, exact.busy_s) == pytest.approx((29.6e-6, 15.2e-6))


def test_a_stream_waiting_is_not_work(tmp_path: Path) -> None:
    # MTIA: pe_exe 0..10 on stream 1; stream 2 waits 0..50 then copies 50..60 (dma_request).
    # The wait is left out: span 60, compute 10, other 10, idle 40.
    events = [_k("pe_exe", 0, 10, stream=1, cat="mtia_ccp_events"), _k("event_wait", 0, 50, stream=2,
              cat="mtia_ccp_events"), _k("dma_request", 50, 10, stream=2, cat="mtia_ccp_events")]
    r = _one(tmp_path, events)
    assert (r.compute_s, r.other_s, r.idle_s, r.left_out_events) == pytest.approx((10e-6, 10e-6, 40e-6, 1))


def test_cpu_only_trace_has_no_split_and_says_why(tmp_path: Path) -> None:
    r = _one(tmp_path, [{"ph": "X", "cat": "cpu_op", "name": "gloo:all_reduce", "ts": 0, "dur": 5}])
    assert r.fractions is None and r.comm_overlap is None and r.span_s == 0
    assert r.problems and "no device activity in 1 events" in r.problems[0]


def test_folders_ranks_bad_files_and_the_json(tmp_path: Path) -> None:
    _trace(tmp_path, [_k(GEMM, 0, 10), _k(ALLREDUCE, 5, 10, stream=20)], "a.json", {"rank": 1, "world_size": 2})
    _trace(tmp_path, [_k(GEMM, 0, 10)], "worker_rank-0.pt.trace.json")
    (tmp_path / "broken.pt.trace.json").write_text('{"traceEvents": [\n{"ph": "X", "ts": 1')
    (tmp_path / "notes.json").write_text('{"not": "a trace"}')
    result = profile_traces([tmp_path])
    assert [(r.rank, r.rank_source) for r in result.ranks] == [(0, "file name"), (1, "distributedInfo"),
                                                                (None, None)]
    assert "truncated" in result.ranks[2].problems[0] and result.errors == ()
    doc = profile_json(result)
    assert json.loads(json.dumps(doc)) == doc
    first = doc["ranks"][1]
    assert set(first) == {"trace", "rank", "rank_source", "world_size", "device_events", "left_out_events",
                          "steps", "fractions", "comm_overlap", "seconds", "problems"}
    # rank 1: span 15, compute 10, comm 10 with 5 hidden -> exposed 5, idle 0
    assert first["fractions"]["exposed_communication"] == pytest.approx(5 / 15)
    assert first["seconds"]["span"] == pytest.approx(15e-6) and doc["config"]["drop_last_step"] is True
    rows = profile_table(result)
    assert rows[0][0] == "0 (file name)" and rows[1][1:4] == ("66.7%", "66.7%", "33.3%")
    assert rows[2][1] == "-" and len(rows[0]) == len(TABLE_COLUMNS)
    assert format_profile_table(result).splitlines()[0].split()[:2] == ["rank", "compute"]


def test_unreadable_traces(tmp_path: Path) -> None:
    good = _trace(tmp_path, [_k(GEMM, 0, 10)])
    notjson = tmp_path / "x.pt.trace.json"
    notjson.write_text("garbage")
    result = profile_traces([good, notjson])
    assert len(result.ranks) == 1 and result.errors == (f"{notjson}:1: not a Kineto trace: not a JSON object",)
    with pytest.raises(InputError, match="not a Kineto trace"):
        profile_traces([notjson])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="no Kineto trace here"):
        profile_traces([empty])
    with pytest.raises(InputError, match="no such file"):
        profile_traces([tmp_path / "missing.json"])


def test_every_config_field_and_json_key_is_documented() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "profile.md").read_text()
    names = [f.name for cls in (ProfileConfig, KinetoConfig) for f in dataclasses.fields(cls)]
    names += [*FRACTION_KEYS, "rank_source", "left_out_events", "comm_overlap", "problems", "errors"]
    assert [n for n in names if not re.search(rf"[`.]{n}\b", doc)] == []
