"""Span names, attributes, resource and ids of the probe, read back from its OTLP/JSON file."""

from __future__ import annotations

import hashlib
import re
import time
from pathlib import Path

import pytest

from suanli.probe import Probe, step_trace_id
from tests.probe._otlp import by_name, read_spans


def _run(path: Path, steps: int = 3, **kw: object) -> list[dict[str, object]]:
    probe = Probe(file=str(path), **kw)  # type: ignore[arg-type]
    for i in range(steps):
        with probe.step(i, tokens=128):
            for name in ("data_load", "forward", "backward", "optimizer"):
                with probe.phase(name):
                    time.sleep(0.001)
    with probe.checkpoint_save(steps - 1):
        time.sleep(0.001)
    with probe.checkpoint_load():
        pass
    probe.close()
    return read_spans(path)


def test_trace_id_is_sha256_of_job_and_step_shared_by_ranks(tmp_path: Path) -> None:
    a = _run(tmp_path / "r0.jsonl", job_id="llama", rank=0, world_size=2)
    b = _run(tmp_path / "r1.jsonl", job_id="llama", rank=1, world_size=2)
    for step in range(3):
        want = hashlib.sha256(f"llama/{step}".encode()).hexdigest()[:32]   # the documented rule
        ta = [s["traceId"] for s in by_name(a, "train_step") if s["attrs"]["train.step"] == step]
        tb = [s["traceId"] for s in by_name(b, "train_step") if s["attrs"]["train.step"] == step]
        assert ta == tb == [want]
        assert f"{step_trace_id('llama', step):032x}" == want
    assert len({s["traceId"] for s in by_name(a, "train_step")}) == 3


def test_names_attributes_and_parents_follow_the_spec(tmp_path: Path) -> None:
    spans = _run(tmp_path / "t.jsonl", job_id="job-a", rank=0, sla_id="pretrain_v3", flops_per_token=6.0,
                 host="node-007", gpu_uuid="GPU-1234")
    steps = by_name(spans, "train_step")
    assert [s["attrs"] for s in steps] == [
        {"train.step": i, "train.tokens": 128, "train.model_flops": 768.0} for i in range(3)]
    assert all("parentSpanId" not in s for s in steps)
    ids = {s["spanId"]: s for s in steps}
    for name in ("data_load", "forward", "backward", "optimizer"):
        kids = by_name(spans, name)
        assert len(kids) == 3
        for k in kids:
            parent = ids[k["parentSpanId"]]
            assert k["traceId"] == parent["traceId"]
            assert parent["start"] <= k["start"] <= k["end"] <= parent["end"]
    # children come after their step in the file, so a reader meets the parent first
    pos = {s["spanId"]: i for i, s in enumerate(spans)}
    assert all(pos[k["parentSpanId"]] < pos[k["spanId"]] for k in spans if k.get("parentSpanId"))
    res = steps[0]["resource"]
    assert {k: res[k] for k in ("job.id", "framework.pytorch.rank", "host.name", "resource.gpu.id",
                                "business.sla_id", "nccl.group_id", "nccl.rank")} == {
        "job.id": "job-a", "framework.pytorch.rank": 0, "host.name": "node-007", "resource.gpu.id": "GPU-1234",
        "business.sla_id": "pretrain_v3", "nccl.group_id": "job-a/dp/pp0-tp0", "nccl.rank": 0}
    for s in spans:
        assert re.fullmatch(r"[0-9a-f]{32}", s["traceId"]) and re.fullmatch(r"[0-9a-f]{16}", s["spanId"])


def test_init_and_checkpoint_spans(tmp_path: Path) -> None:
    spans = _run(tmp_path / "t.jsonl", job_id="j", rank=0)
    (init,) = by_name(spans, "init")
    first = min(s["start"] for s in by_name(spans, "train_step"))
    assert init["end"] == first                       # process start to first step
    assert init["start"] < first - 1_000_000          # this process started well before (imports)
    (save,) = by_name(spans, "checkpoint_save")
    (load,) = by_name(spans, "checkpoint_load")
    assert save["attrs"] == {"train.step": 2} and load["attrs"] == {}
    assert save["end"] - save["start"] >= 1_000_000
    last_step_end = max(s["end"] for s in by_name(spans, "train_step"))
    assert last_step_end <= save["start"] <= save["end"] <= load["start"]


def test_nccl_group_of_a_tensor_parallel_rank(tmp_path: Path) -> None:
    # dp=2, tp=2: rank = dp_i * 2 + tp_i, so rank 3 is (dp 1, tp 1); its data-parallel group
    # holds ranks 1 and 3 (tp 1), named llama/dp/pp0-tp1, and rank 3 is member 1 of it.
    spans = _run(tmp_path / "t.jsonl", steps=1, job_id="llama", rank=3, world_size=4,
                 parallelism={"dp": 2, "tp": 2})
    res = by_name(spans, "train_step")[0]["resource"]
    assert (res["nccl.group_id"], res["nccl.rank"]) == ("llama/dp/pp0-tp1", 1)


def test_otel_resource_attributes_override_detection_and_code_overrides_both(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "host.name=node-042,job.id=from-env,team=nlp")
    spans = _run(tmp_path / "a.jsonl", steps=1, rank=0)
    res = by_name(spans, "train_step")[0]["resource"]
    assert (res["host.name"], res["job.id"], res["team"]) == ("node-042", "from-env", "nlp")
    spans = _run(tmp_path / "b.jsonl", steps=1, rank=0, job_id="from-code")
    assert by_name(spans, "train_step")[0]["resource"]["job.id"] == "from-code"


def test_rank_comes_from_the_launcher_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANK", "5")
    monkeypatch.setenv("WORLD_SIZE", "8")
    spans = _run(tmp_path / "t.jsonl", steps=1, job_id="j")
    res = by_name(spans, "train_step")[0]["resource"]
    assert (res["framework.pytorch.rank"], res["nccl.group_id"], res["nccl.rank"]) == (5, "j/dp/pp0-tp0", 5)


def test_endpoint_variable_gives_the_traces_path(monkeypatch: pytest.MonkeyPatch) -> None:
    from suanli.probe import ProbeConfig

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")
    assert ProbeConfig.from_env().endpoint == "http://collector:4318/v1/traces"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://other:9/x")
    assert ProbeConfig.from_env().endpoint == "http://other:9/x"
    with pytest.raises(TypeError):
        ProbeConfig.from_env(jobid="typo")
