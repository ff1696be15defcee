"""FLOPs per token by hand, MFU on the fly, and rank 0's Prometheus endpoint."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from suanli.probe import Probe, flops_per_token_of_shape, mfu_of_step
from tests.probe._need import need
from tests.probe._otlp import by_name, read_spans


def test_flops_per_token_of_a_shape_by_hand() -> None:
    # PaLM appendix B: 6N + 12·L·hidden·T. N = 1e6, L = 2, hidden = 64, T = 128:
    # 6,000,000 + 12·2·64·128 = 6,000,000 + 196,608
    assert flops_per_token_of_shape(1e6, layers=2, hidden=64, seq_len=128) == 6_196_608.0
    assert flops_per_token_of_shape(1e6) == 6_000_000.0
    # Megatron (Narayanan et al. eq. 3 per token; model FLOPs, so without recomputation):
    # 72·l·h²·(1 + s/6h) + 6·h·V with l = 2, h = 64, s = 384, V = 1000:
    # 72·2·4096·(1 + 1) + 6·64·1000 = 1,179,648 + 384,000
    assert flops_per_token_of_shape(1e6, 2, 64, 384, 1000, formula="megatron") == 1_563_648.0


def test_model_flops_of_a_small_torch_model_by_hand() -> None:
    torch = need("torch")
    from suanli.probe.torch import count_params, model_flops_per_token

    mlp = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    # weights 4·8 + 8·2 = 48, biases 8 + 2 = 10: N = 58, 6N = 348
    assert count_params(mlp) == 58
    assert model_flops_per_token(mlp) == 348.0
    tied = torch.nn.Linear(3, 3, bias=False)
    two = torch.nn.Sequential(tied, tied)                  # a shared weight counts once
    assert count_params(two) == 9

    class WithConfig(torch.nn.Module):                     # a Hugging Face style model
        def __init__(self) -> None:
            super().__init__()
            self.config = type("C", (), {"num_hidden_layers": 2, "hidden_size": 4})()
            self.w = torch.nn.Linear(4, 4)                 # N = 20

    # 6·20 + 12·2·4·16 = 120 + 1536
    assert model_flops_per_token(WithConfig(), seq_len=16) == 1656.0


def test_mfu_of_a_step_by_hand() -> None:
    # 3e12 FLOPs in 0.5 s on a 10 TFLOP/s device: 6e12 FLOP/s achieved / 1e13 = 0.6
    assert mfu_of_step(3e12, 0.5, 1e13) == pytest.approx(0.6)
    assert mfu_of_step(None, 0.5, 1e13) is None and mfu_of_step(1.0, 0.0, 1e13) is None
    assert mfu_of_step(1.0, 1.0, None) is None


def _scrape(port: int) -> dict[str, float]:
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    return {s.name: s.value for fam in text_string_to_metric_families(text) for s in fam.samples}


def test_rank0_serves_mfu_and_step_time(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    probe = Probe(job_id="j", rank=0, file=str(path), flops_per_token=1e6, peak_flops=1e9, metrics_port=0)
    port = probe.metrics_port
    assert port
    for i in range(3):
        with probe.step(i, tokens=20):            # 2e7 FLOPs
            time.sleep(0.05)
    probe.flush()
    time.sleep(0.5)                               # the export thread sets the gauges
    got = _scrape(port)
    last = by_name(read_spans(path), "train_step")[-1]
    step_s = (last["end"] - last["start"]) / 1e9
    assert got["suanli_probe_step_time_seconds"] == pytest.approx(step_s, rel=1e-9)
    assert got["suanli_probe_mfu"] == pytest.approx(2e7 / (step_s * 1e9), rel=1e-9)   # ~0.4
    assert got["suanli_probe_steps_total"] == 3 and got["suanli_probe_spans_dropped"] == 0
    probe.close()
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2)


def test_other_ranks_serve_nothing(tmp_path: Path) -> None:
    probe = Probe(job_id="j", rank=1, file=str(tmp_path / "t.jsonl"), metrics_port=0)
    assert probe.metrics_port is None
    probe.close()
