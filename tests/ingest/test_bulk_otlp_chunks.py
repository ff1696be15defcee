"""The OTLP/JSON bulk reader staged a chunk of lines at a time: the same spans and report as the
Python parser whatever the chunk size, parents across chunks, and the Python path's bounded parent
cache modelled exactly (a FIFO of the last ``parent_cache_size`` step spans)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from suanli.ingest import bulk_otlp
from suanli.ingest.otlp import OtlpConfig
from tests.conftest import shared_path
from tests.ingest.span_paths import both_paths, resolver_of
from tests.otlp_json import request_line, span

TRACE = "0af7651916cd43dd8448eb211c80319c"
JOB = "llama-34b-rlhf-rm"                               # the healthy scenario's job
RES = {"job.id": JOB, "framework.pytorch.rank": 0, "host.name": "node-001",
       "resource.gpu.id": "GPU-1bd210c2-fccf-4d7d-1a48-dafe2ac885f7"}    # node-001/gpu0 there
RES2 = {"job.id": JOB, "framework.pytorch.rank": 9, "host.name": "node-002", "resource.gpu.id": "node-002/gpu1"}


def _sid(n: int) -> str:
    return f"{n:016x}"


def _step(n: int, step: int, t: int) -> dict[str, Any]:
    return span(TRACE, _sid(n), "train_step", t * 10**9, t * 10**9 + 9, train__step=step)


def _child(n: int, parent: int, t: int, name: str = "forward") -> dict[str, Any]:
    return span(TRACE, _sid(n), name, t * 10**9, t * 10**9 + 5, _sid(parent))


def _write(tmp_path: Path, lines: list[str], end: str = "\n") -> Path:
    path = tmp_path / "chunks.otlp.jsonl"
    path.write_bytes((end.join(lines) + end).encode())
    return path


@pytest.fixture(scope="module")
def resolver() -> Any:
    return resolver_of(shared_path("scenarios", "healthy"))


@pytest.fixture(params=[None, 1, 700], ids=["one-chunk", "line-per-chunk", "700-bytes"])
def chunked(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int | None:
    if request.param is not None:
        monkeypatch.setattr(bulk_otlp, "CHUNK_BYTES", request.param)
    return request.param


def _ident(rows: list[Any]) -> dict[str, tuple[Any, ...]]:
    return {r[1]: r[6:11] for r in rows}


def test_cache_evicts_the_oldest_step_span(tmp_path: Path, resolver: Any, chunked: int | None) -> None:
    """Cache of 2. Worked by hand: before line 3 the Python path has remembered A, B, C (the
    steps 1, 2, 3) and holds B, C. x -> A finds nothing; D (step 4) is remembered before y, which
    leaves C, D: y -> B finds nothing either, z -> C gets step 3."""
    lines = [request_line(RES, [_step(0xA, 1, 100)]),
             request_line(RES, [_step(0xB, 2, 101), _step(0xC, 3, 102)]),
             request_line(RES, [_child(1, 0xA, 103), _step(0xD, 4, 104), _child(2, 0xB, 105),
                                _child(3, 0xC, 106)])]
    used, slow, fast, r_slow, r_fast = both_paths(_write(tmp_path, lines), resolver, OtlpConfig(parent_cache_size=2))
    assert used and fast == slow and r_fast.loaded == r_slow.loaded == {"spans": 7}
    got = _ident(fast)
    gpu = (JOB, 0, None, "node-001/gpu0", "node-001")
    assert got[_sid(1)] == gpu and got[_sid(2)] == gpu
    assert got[_sid(3)] == (JOB, 0, 3, "node-001/gpu0", "node-001")
    assert [r[12] for r in fast] == list(range(7))                       # file order across chunks


def test_the_cache_edge_after_the_carried_spans_are_cut_back(tmp_path: Path, resolver: Any,
                                                              chunked: int | None) -> None:
    """Cache of 2, one step span per line A..E: a line per chunk carries them all until five,
    then keeps D, E. Line 6: x -> D is found (D, E: two step spans from D on), y -> C is not."""
    lines = [request_line(RES, [_step(0xA + i, i + 1, 100 + i)]) for i in range(5)]
    lines.append(request_line({"service.name": "t"}, [_child(1, 0xD, 110), _child(2, 0xC, 111)]))
    used, slow, fast, _, _ = both_paths(_write(tmp_path, lines), resolver, OtlpConfig(parent_cache_size=2))
    assert used and fast == slow
    got = _ident(fast)
    assert got[_sid(1)] == (JOB, 0, 4, "node-001/gpu0", "node-001")
    assert got[_sid(2)] == (None, None, None, None, None)


def test_a_step_span_that_inherits_counts_from_after_itself(tmp_path: Path, resolver: Any,
                                                           chunked: int | None) -> None:
    """Cache of 2. S is a step span (train.step 5) without a job: when it looks up P, the cache
    holds P, Q (S is remembered after its own lookup), so S takes job, rank, GPU from P."""
    lines = [request_line(RES, [_step(0xA, 1, 100)]), request_line(RES, [_step(0xB, 2, 101)]),
             request_line({"service.name": "t"}, [span(TRACE, _sid(0xC), "micro", 102 * 10**9, 102 * 10**9 + 1,
                                                        _sid(0xA), train__step=5)])]
    used, slow, fast, _, _ = both_paths(_write(tmp_path, lines), resolver, OtlpConfig(parent_cache_size=2))
    assert used and fast == slow
    assert _ident(fast)[_sid(0xC)] == (JOB, 0, 5, "node-001/gpu0", "node-001")


def test_a_parent_chunks_back_fills_what_the_child_lacks(tmp_path: Path, resolver: Any,
                                                         chunked: int | None) -> None:
    """A child with no identity of its own (its resource names none) takes job, rank, step, GPU
    and node from its step span three lines (three chunks) back; CRLF line ends as well."""
    lines = [request_line(RES2, [_step(0xA, 41, 100)]), request_line(RES, [_step(0xB, 1, 101)]),
             request_line(RES, [_step(0xC, 2, 102)]),
             request_line({"service.name": "trainer"}, [_child(1, 0xA, 103, "backward")])]
    for end in ("\n", "\r\n"):
        used, slow, fast, r_slow, r_fast = both_paths(_write(tmp_path, lines, end), resolver)
        assert used and fast == slow and r_fast.unresolved == r_slow.unresolved == {}
        assert _ident(fast)[_sid(1)] == (JOB, 9, 41, "node-002/gpu1", "node-002")


def test_a_step_id_repeated_within_the_cache_falls_back(tmp_path: Path, resolver: Any,
                                                        chunked: int | None) -> None:
    """The Python cache is a dict: a step span id remembered twice holds one entry, which a FIFO
    of spans does not model; such a file takes the Python path (and reads the same)."""
    lines = [request_line(RES, [_step(0xA, 1, 100)]), request_line(RES2, [_step(0xA, 2, 101)]),
             request_line({"service.name": "trainer"}, [_child(1, 0xA, 102)])]
    used, slow, fast, r_slow, r_fast = both_paths(_write(tmp_path, lines), resolver)
    assert not used and fast == slow and r_fast.loaded == r_slow.loaded
    assert _ident(fast)[_sid(1)][2] == 2                                 # the later one, as Python has it


def test_a_parent_that_inherits_across_lines_itself_falls_back(tmp_path: Path, resolver: Any) -> None:
    """A step span without a job (its resource names none) whose own parent is in an earlier line
    is filled in the same pass as its child: the chain is left to the Python path."""
    lines = [request_line(RES, [_step(0xA, 1, 100)]),
             request_line({"service.name": "t"}, [span(TRACE, _sid(0xB), "micro", 101 * 10**9, 101 * 10**9 + 1,
                                                        _sid(0xA), train__step=5)]),
             request_line({"service.name": "t"}, [_child(1, 0xB, 102)])]
    used, slow, fast, _, _ = both_paths(_write(tmp_path, lines), resolver)
    assert not used and fast == slow
    assert _ident(fast)[_sid(1)] == (JOB, 0, 5, "node-001/gpu0", "node-001")


def test_invalid_utf8_in_one_line_falls_back_with_its_reason(tmp_path: Path, resolver: Any,
                                                             chunked: int | None) -> None:
    good = request_line(RES, [_step(0xA, 1, 100)])
    path = tmp_path / "bad.otlp.jsonl"
    path.write_bytes(good.encode() + b"\n" + good.replace("train_step", "tr\xffin").encode("latin-1") + b"\n")
    used, slow, fast, r_slow, r_fast = both_paths(path, resolver)
    assert not used and fast == slow and r_fast.reasons == r_slow.reasons and r_fast.rejected == 1


def test_a_line_longer_than_the_chunk_and_no_final_newline(tmp_path: Path, resolver: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bulk_otlp, "CHUNK_BYTES", 64)
    lines = [request_line(RES, [_step(i, i, 100 + i) for i in range(1, 40)]), "   ",
             request_line(RES, [_child(99, 39, 200)])]
    path = tmp_path / "long.otlp.jsonl"
    path.write_text("\n".join(lines))
    used, slow, fast, r_slow, r_fast = both_paths(path, resolver)
    assert used and fast == slow and r_fast.loaded == r_slow.loaded == {"spans": 40}
    assert _ident(fast)[_sid(99)][2] == 39


@st.composite
def _files(draw: st.DrawFn) -> tuple[list[str], int, int]:
    """Lines of step spans and children whose parents are in their line, an earlier line, or
    nowhere; a small cache; a chunk size from one line to the whole file."""
    lines: list[str] = []
    steps: list[int] = []
    n = 1
    for li in range(draw(st.integers(1, 7))):
        spans: list[dict[str, Any]] = []
        local: list[int] = []
        for _ in range(draw(st.integers(0, 5))):
            kind = draw(st.sampled_from(["step", "child-here", "child-before", "orphan", "grandchild"]))
            if kind == "step" or (kind == "child-here" and not local) or (kind == "child-before" and not steps):
                spans.append(_step(n, n, li))
                local.append(n)
            elif kind == "child-here":
                spans.append(_child(n, draw(st.sampled_from(local)), li))
            elif kind == "child-before":
                spans.append(_child(n, draw(st.sampled_from(steps)), li))
            elif kind == "grandchild" and len(spans):
                spans.append(_child(n, int(spans[-1]["spanId"], 16), li, "nccl"))
            else:
                spans.append(_child(n, 0xFFFFFF, li))
            n += 1
        steps += local
        res = draw(st.sampled_from([RES, RES2, {"service.name": "trainer"}]))
        lines.append(request_line(res, spans))
    return lines, draw(st.integers(1, 5)), draw(st.sampled_from([1, 200, 1500, 1 << 20]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_files())
def test_any_chunking_and_cache_size_reads_as_the_python_path(
        tmp_path: Path, resolver: Any, monkeypatch: pytest.MonkeyPatch, case: tuple[list[str], int, int]) -> None:
    lines, cache, chunk = case
    monkeypatch.setattr(bulk_otlp, "CHUNK_BYTES", chunk)
    used, slow, fast, r_slow, r_fast = both_paths(_write(tmp_path, lines), resolver,
                                                  OtlpConfig(parent_cache_size=cache))
    assert used
    assert fast == slow
    assert r_fast.loaded == r_slow.loaded and r_fast.unresolved == r_slow.unresolved


def test_simulated_traces_in_small_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from suanli.sim import simulate
    folder = simulate("healthy", tmp_path / "h", seed=5, nodes=2, minutes=2)
    path = folder / "traces.otlp.jsonl"
    monkeypatch.setattr(bulk_otlp, "CHUNK_BYTES", path.stat().st_size // 7)
    used, slow, fast, r_slow, r_fast = both_paths(path, resolver_of(folder))
    assert used and len(fast) > 500 and fast == slow
    assert r_fast.loaded == r_slow.loaded == {"spans": json.loads((folder / "truth.json").read_text())["files"]["spans"]}
