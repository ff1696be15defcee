"""DuckDB bulk read of OTLP JSON lines: the spans table equals the Python parser's, span for span."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from suanli.store.duck import DuckStore
from tests.conftest import shared_path
from tests.ingest.span_paths import both_paths, resolver_of
from tests.otlp_json import request_line, span

SCENARIOS = ("healthy", "switch_port_errors", "pcie_riser")
TRACE = "0af7651916cd43dd8448eb211c80319c"
JOB = "llama-34b-rlhf-rm"                              # the job of the healthy scenario's inventory
UUID_N1_G0 = "GPU-1bd210c2-fccf-4d7d-1a48-dafe2ac885f7"   # node-001 gpu index 0 in that inventory








@pytest.mark.slow
@pytest.mark.parametrize("name", SCENARIOS)
def test_public_scenarios_equal_python_path(name: str) -> None:
    folder = shared_path("scenarios", name)
    truth = json.loads((folder / "truth.json").read_text())
    used, slow, fast, r_slow, r_fast = both_paths(folder / "traces.otlp.jsonl", resolver_of(folder))
    assert used
    assert len(fast) == truth["files"]["spans"]            # the simulator's own count
    assert fast == slow
    assert r_fast.loaded == r_slow.loaded == {"spans": truth["files"]["spans"]}
    assert r_fast.unresolved == r_slow.unresolved == {}


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["healthy", "seed_optical_ber"])
def test_simulated_scenarios_equal_python_path(scenario: str, tmp_path: Path) -> None:
    from suanli.sim import simulate
    folder = simulate(scenario, tmp_path / scenario, seed=3, nodes=4, minutes=3)
    used, slow, fast, r_slow, r_fast = both_paths(folder / "traces.otlp.jsonl", resolver_of(folder))
    assert used and len(fast) > 1000
    assert fast == slow
    assert r_fast.loaded == r_slow.loaded and r_fast.unresolved == r_slow.unresolved


def _span(sid: str, name: str, t0_s: int, parent: str | None = None, **attrs: Any) -> dict[str, Any]:
    return span(TRACE, sid, name, t0_s * 10**9, t0_s * 10**9 + 5, parent, **attrs)


def _line(resource: dict[str, Any], spans: list[dict[str, Any]]) -> str:
    return request_line(resource, spans)


RES_UUID = {"job.id": JOB, "framework.pytorch.rank": 0, "host.name": "node-001",
            "resource.gpu.id": UUID_N1_G0, "nccl.group_id": "g-res", "sla": "gold"}
RES_CANON_UNKNOWN_HOST = {"job.id": JOB, "framework.pytorch.rank": 11, "host.name": "node-999",
                          "resource.gpu.id": "node-002/gpu3"}

TRICKY = [
    # line 1: child and grandchild before their train_step parent; span attrs override resource ones
    _line(RES_UUID, [
        _span("00000000000000c1", "forward", 100, "00000000000000a1"),
        _span("00000000000000d1", "nccl_kernel", 101, "00000000000000c1", nccl_group_id="g-span", sla="silver"),
        _span("00000000000000a1", "train_step", 100, train__step=7, ratio=0.25, ok=True),
        _span("00000000000000e1", "orphan", 102, "ffffffffffffffff"),
    ]),
    # line 2: canonical gpu id, unknown host; a root span without train.step
    _line(RES_CANON_UNKNOWN_HOST, [_span("00000000000000b2", "setup", 103)]),
    # line 3: parent (the train_step of line 1) in an earlier line
    _line({"service.name": "trainer"}, [_span("00000000000000f3", "backward", 104, "00000000000000a1")]),
]


def _write(tmp_path: Path, lines: list[str], name: str = "tricky.otlp.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_tricky_lines_equal_python_path(tmp_path: Path) -> None:
    resolver = resolver_of(shared_path("scenarios", "healthy"))
    used, slow, fast, r_slow, r_fast = both_paths(_write(tmp_path, TRICKY), resolver)
    assert used and fast == slow
    by_id = {r[1]: r for r in fast}
    # worked out by hand from the lines above and the healthy inventory
    child, grand, step = by_id["00000000000000c1"], by_id["00000000000000d1"], by_id["00000000000000a1"]
    assert child[6:11] == (JOB, 0, 7, "node-001/gpu0", "node-001")       # UUID resolved, step inherited
    assert grand[6:11] == (JOB, 0, 7, "node-001/gpu0", "node-001")       # two levels up
    assert grand[11]["sla"] == "silver" and grand[11]["nccl.group_id"] == "g-span"
    assert grand[11]["nccl_group_id"] == "g-span" and grand[11]["job.id"] == JOB
    assert step[11]["train.step"] == 7 and step[11]["ratio"] == 0.25 and step[11]["ok"] is True
    assert step[11]["framework.pytorch.rank"] == 0                       # intValue "0" -> int
    assert by_id["00000000000000e1"][8] is None                          # parent nowhere: no step
    setup = by_id["00000000000000b2"]
    # node-999 is not in the inventory; the node then comes from the canonical gpu id
    assert setup[6:11] == (JOB, 11, None, "node-002/gpu3", "node-002")
    assert by_id["00000000000000f3"][6:11] == (JOB, 0, 7, "node-001/gpu0", "node-001")  # cross-line
    assert r_fast.loaded == r_slow.loaded == {"spans": 6}
    # unresolved: node-999 does not resolve (1); the orphan keeps its job (resource) -> resolved
    assert r_fast.unresolved == r_slow.unresolved == {"spans": 1}
    assert [r[12] for r in fast] == list(range(6))                       # file order


def test_bad_line_falls_back_with_reason(tmp_path: Path) -> None:
    resolver = resolver_of(shared_path("scenarios", "healthy"))
    path = _write(tmp_path, [*TRICKY[:2], "{not json", TRICKY[2]])
    used, slow, fast, r_slow, r_fast = both_paths(path, resolver)
    assert not used and fast == slow and len(fast) == 6
    assert r_fast.rejected == r_slow.rejected == 1
    assert r_fast.reasons[0].startswith("tricky.otlp.jsonl:3: not JSON")


@pytest.mark.parametrize("variant", ["snake", "end_before_start", "dup_id", "int_name", "pretty", "no_rs",
                                     "leading_zero_time", "numeric_span_id"])
def test_unmodelled_input_falls_back_and_matches(variant: str, tmp_path: Path) -> None:
    resolver = resolver_of(shared_path("scenarios", "healthy"))
    doc = json.loads(TRICKY[0])
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    if variant == "snake":
        spans[0]["parent_span_id"] = spans[0].pop("parentSpanId")
    elif variant == "end_before_start":
        spans[0]["endTimeUnixNano"] = "1"
    elif variant == "dup_id":
        spans[1]["spanId"] = spans[0]["spanId"]
    elif variant == "leading_zero_time":       # int("0100") is 100 for Python: kept, not rejected
        spans[0]["startTimeUnixNano"] = "0" + spans[0]["startTimeUnixNano"]
    elif variant == "numeric_span_id":         # not a string: the Python path rejects the span
        spans[3]["spanId"] = 1234567890123456
    elif variant == "int_name":
        spans[0]["name"] = 5
    elif variant == "no_rs":
        doc = {"something": []}
    lines = [json.dumps(doc, indent=1)] if variant == "pretty" else [json.dumps(doc), *TRICKY[1:]]
    used, slow, fast, r_slow, r_fast = both_paths(_write(tmp_path, lines), resolver)
    assert not used
    assert fast == slow and r_fast.loaded == r_slow.loaded and r_fast.reasons == r_slow.reasons


def test_gzip_and_blank_lines(tmp_path: Path) -> None:
    resolver = resolver_of(shared_path("scenarios", "healthy"))
    gz = tmp_path / "t.otlp.jsonl.gz"
    gz.write_bytes(gzip.compress(("\n".join(TRICKY) + "\n").encode()))
    used, slow, fast, _, _ = both_paths(gz, resolver)
    assert fast == slow and len(fast) == 6
    blank = _write(tmp_path, ["", TRICKY[0], "   ", TRICKY[1], TRICKY[2], ""])
    used, slow, fast, r_slow, r_fast = both_paths(blank, resolver)
    assert used and fast == slow and r_fast.loaded == r_slow.loaded == {"spans": 6}


def test_empty_request_counts_like_python(tmp_path: Path) -> None:
    path = _write(tmp_path, [json.dumps({"resourceSpans": []})])
    used, slow, fast, r_slow, r_fast = both_paths(path, None)
    assert used and fast == slow == [] and r_fast.loaded == r_slow.loaded == {"spans": 0}


def test_load_paths_takes_the_bulk_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import suanli.ingest.load as load
    from suanli.ingest.load import load_paths

    def no_python(*_: Any) -> None:
        raise AssertionError("fell back to the Python parser")

    monkeypatch.setattr(load, "read_otlp", no_python)
    folder = shared_path("scenarios", "switch_port_errors")
    truth = json.loads((folder / "truth.json").read_text())
    store = DuckStore(None)
    report = load_paths([folder / "inventory.yaml", folder / "traces.otlp.jsonl"], store)
    assert report.loaded["spans"] == truth["files"]["spans"] == store.stats()["spans"]
