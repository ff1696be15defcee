"""Built-in GPU model specs (dense peak TFLOP/s per precision, TDP) for common parts.

Numbers are NVIDIA's published dense (no sparsity) peaks from the datasheets; ``inventory.yaml``
``gpu_models`` entries override them key by key. Prices are never built in (they are the user's).
"""

from __future__ import annotations

import re

from suanli.inventory.model import GpuModelSpec

__all__ = ["BUILTIN_GPU_MODELS", "PRECISION_KEYS", "lookup_model", "merge_spec", "normalize_model_name"]

#: ``gpu_models`` keys that carry peak throughput, mapped to the precision name used in ``tflops``.
PRECISION_KEYS: dict[str, str] = {
    "fp64_tflops": "fp64", "fp32_tflops": "fp32", "tf32_tflops": "tf32", "fp16_tflops": "fp16",
    "bf16_tflops": "bf16", "fp8_tflops": "fp8", "int8_tops": "int8", "fp4_tflops": "fp4",
}


def _spec(name: str, tdp_w: float, **tflops: float) -> GpuModelSpec:
    return GpuModelSpec(name=name, tflops=dict(tflops), tdp_w=tdp_w)


#: Datasheet dense peaks. H100/H200 SXM: 989 bf16/fp16, 1979 fp8, 494.5 tf32, 67 fp32.
BUILTIN_GPU_MODELS: dict[str, GpuModelSpec] = {
    s.name: s for s in (
        _spec("H100-SXM", 700, bf16=989.0, fp16=989.0, fp8=1979.0, tf32=494.5, fp32=67.0, fp64=67.0),
        _spec("H100-PCIe", 350, bf16=756.0, fp16=756.0, fp8=1513.0, tf32=378.0, fp32=51.0, fp64=51.0),
        _spec("H100-NVL", 400, bf16=835.0, fp16=835.0, fp8=1670.0, tf32=417.5, fp32=60.0, fp64=60.0),
        _spec("H200-SXM", 700, bf16=989.0, fp16=989.0, fp8=1979.0, tf32=494.5, fp32=67.0, fp64=67.0),
        _spec("H800-SXM", 700, bf16=989.0, fp16=989.0, fp8=1979.0, tf32=494.5, fp32=67.0, fp64=1.0),
        _spec("B200", 1000, bf16=2250.0, fp16=2250.0, fp8=4500.0, fp4=9000.0, tf32=1100.0, fp32=80.0),
        _spec("GB200", 1200, bf16=2500.0, fp16=2500.0, fp8=5000.0, fp4=10000.0, tf32=1250.0, fp32=80.0),
        _spec("A100-SXM", 400, bf16=312.0, fp16=312.0, tf32=156.0, fp32=19.5, fp64=19.5),
        _spec("A100-PCIe", 300, bf16=312.0, fp16=312.0, tf32=156.0, fp32=19.5, fp64=19.5),
        _spec("A800-SXM", 400, bf16=312.0, fp16=312.0, tf32=156.0, fp32=19.5, fp64=19.5),
        _spec("L40S", 350, bf16=362.05, fp16=362.05, fp8=733.0, tf32=183.0, fp32=91.6),
        _spec("A30", 165, bf16=165.0, fp16=165.0, tf32=82.0, fp32=10.3, fp64=10.3),
        _spec("V100-SXM", 300, fp16=125.0, fp32=15.7, fp64=7.8),
    )
}

_ALIASES: dict[str, str] = {
    "h10080gbhbm3": "H100-SXM", "h100sxm5": "H100-SXM", "h100": "H100-SXM", "h200": "H200-SXM",
    "h100pcie": "H100-PCIe", "a100": "A100-SXM", "a100sxm480gb": "A100-SXM", "a100sxm440gb": "A100-SXM",
    "a10080gbpcie": "A100-PCIe", "a10040gbpcie": "A100-PCIe", "v100sxm232gb": "V100-SXM",
    "teslav100sxm232gb": "V100-SXM", "teslav100sxm216gb": "V100-SXM", "v100": "V100-SXM",
}


def normalize_model_name(name: str) -> str:
    """Lower case, no vendor words or punctuation: ``NVIDIA H100 80GB HBM3`` -> ``h10080gbhbm3``."""
    s = name.lower().replace("nvidia", "").replace("tesla ", "tesla")
    return re.sub(r"[^a-z0-9]", "", s)


def lookup_model(name: str | None, models: dict[str, GpuModelSpec]) -> GpuModelSpec | None:
    """``models[name]``, else a match on the normalized name, else a built-in alias (DCGM ``modelName``)."""
    if not name:
        return None
    if name in models:
        return models[name]
    norm = normalize_model_name(name)
    for key, spec in models.items():
        if normalize_model_name(key) == norm:
            return spec
    alias = _ALIASES.get(norm)
    if alias is not None:
        return models.get(alias, BUILTIN_GPU_MODELS.get(alias))
    return None


def merge_spec(name: str, tflops: dict[str, float], tdp_w: float | None,
               price: float | None) -> GpuModelSpec:
    """The file's values over the built-in spec of the same (or an aliased) name."""
    base = lookup_model(name, BUILTIN_GPU_MODELS)
    if base is None:
        return GpuModelSpec(name=name, tflops=dict(tflops), tdp_w=tdp_w, gpu_hour_price=price)
    return GpuModelSpec(name=name, tflops={**base.tflops, **tflops},
                        tdp_w=tdp_w if tdp_w is not None else base.tdp_w, gpu_hour_price=price)
