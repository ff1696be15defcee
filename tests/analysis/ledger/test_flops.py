"""Published MFU / TFLOP/s numbers reproduced from their own inputs (shared/realdata/mfu)."""

from __future__ import annotations

import csv

import pytest

from suanli.analysis.ledger.flops import (
    flops_per_token,
    megatron_flops_per_iteration,
    megatron_flops_per_token,
    mfu,
    palm_flops_per_token,
)
from suanli.analysis.ledger.peaks import canonical_model, peak_flops_per_s
from suanli.errors import InputError
from suanli.inventory.model import GpuModelSpec, ModelShape
from tests.conftest import shared_path

# n_layers / d_model of llm-foundry's scripts/train/yamls/pretrain/mpt-<size>.yaml (SOURCE.md).
MPT_SHAPES = {"125m": (12, 768), "350m": (24, 1024), "760m": (24, 1536), "1b": (24, 2048),
              "3b": (32, 2560), "7b": (32, 4096), "13b": (40, 5120), "30b": (48, 7168),
              "70b": (80, 8192)}
GPU_NAMES = {"h100_80gb": "H100-SXM", "a100_80gb": "A100-80GB", "a100_40gb": "A100-40GB"}


def _foundry_rows() -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for p in sorted(shared_path("realdata", "mfu").glob("llm-foundry-*.csv")):
        with p.open() as fh:
            rows.extend(csv.DictReader(fh))
    return rows


def test_llm_foundry_every_row_mfu_and_hfu() -> None:
    rows = _foundry_rows()
    assert len(rows) == 216
    for row in rows:
        layers, hidden = MPT_SHAPES[row["Model"]]
        n = float(row["NumParams"])
        seq = int(row["SeqLen (T)"])
        gpus = int(row["# GPUs"])
        tokens_per_s = float(row["Throughput (T/s)"])
        peak = peak_flops_per_s(GPU_NAMES[row["GPU"]], row["Precision"])
        recompute = "full" if row["Activation Checkpointing"] == "True" else "none"
        got_mfu = mfu(palm_flops_per_token(n, layers, hidden, seq) * tokens_per_s, gpus, peak)
        got_hfu = mfu(palm_flops_per_token(n, layers, hidden, seq, recompute) * tokens_per_s,
                      gpus, peak)
        where = f"{row['Model']} seq {seq} x{gpus} {row['GPU']} {row['Precision']}"
        assert got_mfu * 100 == pytest.approx(float(row["MFU"]), abs=0.1), where
        assert got_hfu * 100 == pytest.approx(float(row["HFU"]), abs=0.1), where


def test_mtnlg_530b_per_gpu_tflops() -> None:
    # Smith et al. 2022 as reproduced in cli99/llm-analysis: B=1920, s=2048, l=105, h=20480,
    # V=50272; 126 / 121 / 113 TFLOP/s per GPU on 2240 / 2800 / 3360 GPUs at 60.1 / 50.2 / 44.4 s.
    per_iter = megatron_flops_per_iteration(1920, 2048, 105, 20480, 50272)
    assert per_iter == pytest.approx(1.6926e19, rel=1e-4)
    for gpus, iter_s, published in ((2240, 60.1, 126), (2800, 50.2, 121), (3360, 44.4, 113)):
        assert per_iter / (gpus * iter_s) / 1e12 == pytest.approx(published, abs=1.0)
    # The per-token form times the tokens of one iteration is the same number.
    per_token = megatron_flops_per_token(105, 20480, 2048, 50272, recompute=True)
    assert per_token * 1920 * 2048 == pytest.approx(per_iter, rel=1e-12)


def test_palm_540b_mfu() -> None:
    # PaLM: N = 540.35e9, L = 118, H = 48, Q = 256, T = 2048; 238.3K tokens/s on 6144 TPU v4 at
    # 275 TFLOP/s -> 46.2 % MFU. By hand: 6N = 3.2421e12, 12*118*48*256*2048 = 3.5635e10,
    # sum 3.2777e12 * 238.3e3 = 7.811e17 over 6144*275e12 = 1.6896e18 -> 0.4623.
    per_token = palm_flops_per_token(540.35e9, 118, 48 * 256, 2048)
    assert per_token == pytest.approx(3.2777e12, rel=1e-4)
    got = mfu(per_token * 238.3e3, 6144, peak_flops_per_s("TPU v4", "bf16"))
    assert got * 100 == pytest.approx(46.2, abs=0.05)


def test_megatron_1t_fraction_of_peak() -> None:
    # Narayanan et al. 2021: 502 PFLOP/s aggregate on 3072 A100 = 52 % of theoretical peak.
    got = mfu(502e15, 3072, peak_flops_per_s("A100-80GB", "bf16"))
    assert round(got * 100) == 52


def test_megatron_without_recompute_is_three_quarters_of_transformer_term() -> None:
    # l=2, h=64, s=128, V=0: 96*2*64^2*(1+128/384) = 1,048,576 with recompute; 72*... = 786,432.
    assert megatron_flops_per_token(2, 64, 128, 0, recompute=True) == pytest.approx(1048576.0)
    assert megatron_flops_per_token(2, 64, 128, 0, recompute=False) == pytest.approx(786432.0)


def test_flops_per_token_from_shape_moe_and_override() -> None:
    dense = ModelShape(params=1e9, layers=2, hidden=100, seq_len=10)
    assert flops_per_token(dense) == 6e9 + 12 * 2 * 100 * 10
    assert flops_per_token(dense, recompute="full") == 8e9 + 16 * 2 * 100 * 10
    moe = ModelShape(params=47e9, active_params=13e9)
    assert flops_per_token(moe) == 6 * 13e9
    assert flops_per_token(ModelShape(params=1e9, flops_per_token=5.5e9)) == 5.5e9
    assert flops_per_token(ModelShape()) is None


def test_peaks_aliases_and_inventory_override() -> None:
    assert canonical_model("NVIDIA H100 80GB HBM3") == "H100-SXM"
    assert canonical_model("NVIDIA A100-SXM4-40GB") == "A100-40GB"
    assert canonical_model("H100 PCIe") == "H100-PCIe"
    assert peak_flops_per_s("H200", "fp8") == 1979e12
    custom = {"H100-SXM": GpuModelSpec("H100-SXM", {"bf16": 900.0})}
    assert peak_flops_per_s("H100-SXM", "bf16", custom) == 900e12
    with pytest.raises(InputError, match="gpu_models"):
        peak_flops_per_s("mystery-9000", "bf16")
