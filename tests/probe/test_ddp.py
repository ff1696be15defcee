"""examples/ddp_probe.py end to end: 2-process DDP on gloo -> OTLP/JSON file -> `suanli ingest`
-> `suanli diagnose --json`; and the hook leaves DDP's numbers exactly as they were."""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests.probe._need import need
from tests.probe._otlp import by_name, read_spans

need("torch")

ROOT = Path(__file__).resolve().parents[2]
SUANLI = str(Path(sys.executable).with_name("suanli"))
JOB = "ddp-probe-example"
STEPS = 200
PEAK = 1e11
# The example's MLP: Linear(256, 1024), Linear(1024, 1024), Linear(1024, 256), weights and biases
PARAMS = (256 * 1024 + 1024) + (1024 * 1024 + 1024) + (1024 * 256 + 256)     # 1,575,168

INVENTORY = f"""\
cluster: probe-test
gpu_models:
  CPU-TEST: {{fp32_tflops: {PEAK / 1e12}, gpu_hour_price: 1.0}}
racks:
  - id: rack-01
    nodes:
      - id: node-001
        gpus:
          - {{index: 0, uuid: GPU-00000000-0000-0000-0000-000000000000, model: CPU-TEST}}
          - {{index: 1, uuid: GPU-00000000-0000-0000-0000-000000000001, model: CPU-TEST}}
jobs:
  - id: {JOB}
    precision: fp32
    model: {{params: {PARAMS}}}
    parallelism: {{dp: 2}}
    ranks:
      - {{rank: 0, gpu: node-001/gpu0}}
      - {{rank: 1, gpu: node-001/gpu1}}
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ddp")
    env = {**os.environ, "OTEL_RESOURCE_ATTRIBUTES": "host.name=node-001", "PYTHONPATH": str(ROOT / "src")}
    env.pop("SUANLI_PROBE", None)
    subprocess.run([sys.executable, str(ROOT / "examples" / "ddp_probe.py"), "--out",
                    str(out / "traces.otlp.jsonl"), "--steps", str(STEPS), "--checkpoint-every", "100",
                    "--ckpt-dir", str(out), "--peak-flops", str(PEAK)],
                   check=True, env=env, timeout=300, capture_output=True)
    (out / "inventory.yaml").write_text(INVENTORY, encoding="utf-8")
    return out


def _cell(table: str, row: str) -> list[str]:
    line = next(ln for ln in table.splitlines() if re.match(rf"\W*{row}\b", ln))
    return [c.strip() for c in re.split(r"[│|┃]", line) if c.strip()]


def test_spans_pass_ingest_with_nothing_rejected_or_unresolved(folder: Path, tmp_path: Path) -> None:
    spans = read_spans(folder / "traces.otlp.jsonl")
    done = subprocess.run([SUANLI, "ingest", str(folder), "--db", str(tmp_path / "s.duckdb")],
                          check=True, capture_output=True, text=True, timeout=120)
    assert _cell(done.stdout, "spans") == ["spans", f"{len(spans):,}", "0"]
    assert "rejected: 0 line(s)" in done.stdout
    names = [s["name"] for s in spans]
    assert names.count("train_step") == 2 * STEPS and names.count("init") == 2
    assert names.count("checkpoint_save") == 2                  # rank 0, after steps 99 and 199


def test_ledger_split_sums_to_one_and_allreduce_is_communication(folder: Path) -> None:
    done = subprocess.run([SUANLI, "diagnose", str(folder), "--json"], check=True, capture_output=True,
                          text=True, timeout=120)
    (job,) = [j for j in json.loads(done.stdout)["efficiency"]["jobs"] if j["id"] == JOB]
    split = job["time_split"]
    assert sum(split.values()) == pytest.approx(1.0, abs=1e-5)
    assert split["communication"] > 0.01 and split["compute"] > 0.1
    assert job["ranks"] == 2 and job["steps"] == STEPS
    # MFU worked out from the spans alone: FLOPs of every rank's steps over
    # (peak x ranks x each step's wall time from its earliest start to its latest end)
    spans = read_spans(folder / "traces.otlp.jsonl")
    flops = sum(s["attrs"]["train.model_flops"] for s in by_name(spans, "train_step"))
    wall: dict[int, list[int]] = defaultdict(list)
    for s in by_name(spans, "train_step"):
        wall[s["attrs"]["train.step"]] += [s["start"], s["end"]]
    gpu_s = sum((max(v) - min(v)) / 1e9 * 2 for v in wall.values())
    assert job["mfu"] == pytest.approx(flops / (gpu_s * PEAK), rel=1e-4)
    assert flops == 2 * STEPS * 64 * 6 * PARAMS                  # tokens x 6N, by hand


def test_every_gradient_byte_goes_through_the_timed_allreduce(folder: Path) -> None:
    spans = read_spans(folder / "traces.otlp.jsonl")
    steps = {s["spanId"]: s for s in by_name(spans, "train_step")}
    per_step: dict[tuple[int, int], int] = defaultdict(int)
    links: dict[tuple[int, int], set[str]] = defaultdict(set)
    for a in by_name(spans, "allreduce"):
        parent = steps[a["parentSpanId"]]
        assert parent["start"] <= a["start"] <= a["end"] <= parent["end"]
        assert a["attrs"]["nccl.op"] == "allreduce" and a["attrs"]["nccl.group_id"] == f"{JOB}/dp/pp0-tp0"
        key = (parent["attrs"]["train.step"], parent["resource"]["framework.pytorch.rank"])
        per_step[key] += a["attrs"]["nccl.bytes"]
        (link,) = a["links"]
        step, seq = parent["attrs"]["train.step"], a["attrs"]["nccl.seq"]
        want = hashlib.sha256(f"{JOB}/{step}/{JOB}/dp/pp0-tp0/{seq}".encode()).hexdigest()[:16]
        assert link["spanId"] == want and link["traceId"] == a["traceId"]
        links[(step, seq)].add(parent["resource"]["framework.pytorch.rank"])
    assert set(per_step.values()) == {4 * PARAMS}                 # fp32 gradients, all of them, every step
    assert len(per_step) == 2 * STEPS
    assert all(ranks == {0, 1} for ranks in links.values())      # one collective, both ranks linked to it
    for step in (0, 57, STEPS - 1):
        tids = {s["traceId"] for s in by_name(spans, "train_step") if s["attrs"]["train.step"] == step}
        assert tids == {hashlib.sha256(f"{JOB}/{step}".encode()).hexdigest()[:32]}


def test_the_hook_changes_no_number(tmp_path: Path) -> None:
    import torch.multiprocessing as mp

    from tests.probe._ddp_worker import compare

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(compare, args=(port, str(tmp_path)), nprocs=2, join=True)
    got: list[Any] = [(tmp_path / f"rank{r}").read_text().split() for r in (0, 1)]
    assert [g[0] for g in got] == ["True", "True"]
    assert all(int(g[1]) > 6 for g in got)                       # steps and allreduce spans were made
