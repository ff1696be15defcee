"""Kineto traces go through `load_paths` like any other trace file (spec/telemetry.md: Kineto files
in folders), next to OTLP JSON, into a real DuckDB file."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

from suanli.ingest.load import load_paths
from suanli.store.duck import DuckStore
from tests.conftest import shared_path

TRACE = ("realdata", "third-party", "kineto", "hta__trace_diff_control_control.json.gz")


def _device_events(path: Path) -> int:
    """Counted straight from the JSON: complete events on a GPU stream (HTA's kernel, memcpy and
    memset categories)."""
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    return sum(1 for e in events if e.get("ph") == "X" and isinstance(e.get("args"), dict)
               and "stream" in e["args"] and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))


def test_a_folder_with_a_kineto_trace_and_otlp_loads_both(tmp_path: Path) -> None:
    src = shared_path(*TRACE)
    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copy(src, folder / "rank3.pt.trace.json.gz")
    shutil.copy(shared_path("realdata", "third-party", "otlp", "otel-proto-examples-trace.json"),
                folder / "example.json")
    db = tmp_path / "k.duckdb"
    with DuckStore(db) as store:
        report = load_paths([folder], store)
    assert report.rejected == 0, report.reasons
    want = _device_events(src)
    assert want == 8568 + 654 + 228          # kernels, memsets, memcpys in this trace
    assert report.loaded.get("kernels") == want
    with DuckStore(db) as store:
        frame = store.spans()
        assert len(frame) == want + report.loaded.get("spans", 0)
        assert report.loaded.get("spans", 0) >= 1                   # the OTLP example still reads as OTLP
        ranks = {int(r) for r, n in zip(frame.rank, frame.name, strict=True) if n != "" and r >= 0}
        assert 3 in ranks                                           # distributedInfo.rank of the trace
