"""Kineto import: classification by hand, and the split against HTA 0.5.0's own results."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pytest

from suanli.errors import InputError
from suanli.ingest.kineto import kernel_breakdown, kernel_kind, read_kineto
from suanli.ingest.records import IngestReport
from tests.conftest import shared_path


def _write(tmp: Path, events: list[dict[str, object]]) -> Path:
    p = tmp / "rank0.json.gz"
    doc = {"distributedInfo": {"rank": 3}, "traceEvents": events}
    p.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return p


def _k(name: str, ts: float, dur: float, cat: str = "kernel", corr: int = 0) -> dict[str, object]:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur,
            "args": {"stream": 7, "correlation": corr}}


def test_hand_made_trace_split_and_overlap(tmp_path: Path) -> None:
    # Kernels (us): gemm 0..100, nccl 50..150 (50 under gemm), memcpy 200..210, gemm 250..300.
    # kernel_time 300; busy = 0..150 + 200..210 + 250..300 = 210 -> idle 90; compute 150;
    # non-compute 60 (50 exposed nccl + 10 memcpy); overlap 50/100 = 0.5.
    events = [_k("ampere_gemm", 0, 100), _k("ncclDevKernel_AllReduce_Sum", 50, 100),
              _k("Memcpy DtoH (Device -> Pinned)", 200, 10, cat="gpu_memcpy"),
              _k("ampere_gemm", 250, 50), {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 5},
              {"ph": "X", "cat": "kernel", "name": "broken", "ts": "x", "dur": 1, "args": {"stream": 7}}]
    report = IngestReport()
    spans = read_kineto(_write(tmp_path, events), job_id="job-a", report=report)
    assert [s.attrs["kind"] for s in spans] == ["compute", "communication", "memory", "compute"]
    assert report.rejected == 1 and spans[0].rank == 3 and spans[0].job_id == "job-a"
    (b,) = kernel_breakdown(spans)
    assert b.kernel_time_s == pytest.approx(300e-6)
    assert b.idle_s == pytest.approx(90e-6)
    assert b.compute_s == pytest.approx(150e-6)
    assert b.non_compute_s == pytest.approx(60e-6)
    assert b.exposed_comm_s == pytest.approx(50e-6)
    assert b.comm_comp_overlap == pytest.approx(0.5)


def test_kind_rules_and_bad_file(tmp_path: Path) -> None:
    assert kernel_kind("ncclKernel_AllGather_RING_LL_Sum_int8_t") == "communication"
    assert kernel_kind("Memset (Device)", "gpu_memset") == "memory"
    assert kernel_kind("void at::native::vectorized_elementwise_kernel") == "compute"
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match=r"bad\.json"):
        read_kineto(bad)


def _hta(name: str, what: str) -> dict[int, dict[str, str]]:
    p = shared_path("realdata", "traces", "hta-computed-by-us", f"{name}.{what}.csv")
    if not p.exists():
        return {}
    with p.open() as fh:
        return {int(r["rank"]): r for r in csv.DictReader(fh)}


# (trace folder, allowed |difference| in points): HTA 0.5.0 agrees within 1 point except on the
# negative_queue_length_values_check fixture, where 249 device events share correlation ids
# (docs/ledger.md, "Kineto vs HTA"): its idle share differs by 5.6 points and compute by 3.1.
TRACES = [("df_index_resolver", 1.0), ("mtia_trace_single_rank", 1.0), ("nccl_parser_config", 1.0),
          ("ns_resolution_trace", 1.0), ("trace_filter", 1.0),
          ("negative_queue_length_values_check", 6.0)]


@pytest.mark.slow
@pytest.mark.parametrize(("folder", "tol"), TRACES)
def test_temporal_breakdown_and_overlap_match_hta(folder: str, tol: float) -> None:
    spans = []
    for f in sorted(shared_path("realdata", "traces", "hta", folder).glob("*.json.gz")):
        spans += read_kineto(f)
    got = {b.rank if b.rank is not None else 0: b for b in kernel_breakdown(spans, drop_last_iteration=True)}
    temporal = _hta(folder, "temporal_breakdown")
    assert temporal, "HTA reference missing"
    for rank, row in temporal.items():
        b = got[rank]
        assert b.kernel_time_s * 1e6 == pytest.approx(float(row["kernel_time(us)"]), rel=3e-3)
        assert b.pct(b.idle_s) == pytest.approx(float(row["idle_time_pctg"]), abs=tol)
        assert b.pct(b.compute_s) == pytest.approx(float(row["compute_time_pctg"]), abs=tol)
        assert b.pct(b.non_compute_s) == pytest.approx(float(row["non_compute_time_pctg"]), abs=tol)
    for rank, row in _hta(folder, "comm_comp_overlap").items():
        want = row["comp_comm_overlap_pctg"]
        if want == "":
            assert got[rank].comm_comp_overlap is None
            continue
        overlap = got[rank].comm_comp_overlap
        assert overlap is not None and overlap * 100 == pytest.approx(float(want), abs=1.0)
