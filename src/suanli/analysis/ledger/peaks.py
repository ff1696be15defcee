"""Peak dense FLOP/s per accelerator model and precision (the denominator of MFU).

Dense (no 2:4 sparsity) tensor-core peaks from the vendors' datasheets, in TFLOP/s. The inventory's
``gpu_models`` (``GpuModelSpec.tflops``) override these per model and precision.

| part | bf16/fp16 | fp8 | tf32 | fp32 | source |
| --- | --- | --- | --- | --- | --- |
| A100 40GB / 80GB SXM | 312 | - | 156 | 19.5 | NVIDIA A100 datasheet |
| H100 SXM | 989 | 1979 | 494.7 | 67 | NVIDIA H100 datasheet (sparsity figures halved) |
| H100 PCIe | 756 | 1513 | 378 | 51 | NVIDIA H100 datasheet |
| H200 (SXM) | 989 | 1979 | 494.7 | 67 | NVIDIA H200 datasheet |
| B200 | 2250 | 4500 | 1100 | 80 | NVIDIA HGX B200 (per GPU, dense) |
| MI300X | 1307.4 | 2614.9 | 653.7 | 163.4 | AMD Instinct MI300X datasheet |
| L40S | 362.05 | 733 | 183 | 91.6 | NVIDIA L40S datasheet |
| V100 SXM2 | 125 (fp16) | - | - | 15.7 | NVIDIA V100 datasheet |
| TPU v4 | 275 (bf16) | - | - | - | Google Cloud TPU v4 (PaLM's 46.2 % MFU uses it) |
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from suanli.errors import InputError
from suanli.inventory.model import GpuModelSpec

__all__ = ["PEAK_TFLOPS", "canonical_model", "normalise_precision", "peak_flops_per_s"]

PEAK_TFLOPS: dict[str, dict[str, float]] = {
    "A100-40GB": {"bf16": 312.0, "fp16": 312.0, "tf32": 156.0, "fp32": 19.5},
    "A100-80GB": {"bf16": 312.0, "fp16": 312.0, "tf32": 156.0, "fp32": 19.5},
    "H100-SXM": {"bf16": 989.0, "fp16": 989.0, "fp8": 1979.0, "tf32": 494.7, "fp32": 67.0},
    "H100-PCIe": {"bf16": 756.0, "fp16": 756.0, "fp8": 1513.0, "tf32": 378.0, "fp32": 51.0},
    "H200": {"bf16": 989.0, "fp16": 989.0, "fp8": 1979.0, "tf32": 494.7, "fp32": 67.0},
    "B200": {"bf16": 2250.0, "fp16": 2250.0, "fp8": 4500.0, "tf32": 1100.0, "fp32": 80.0},
    "MI300X": {"bf16": 1307.4, "fp16": 1307.4, "fp8": 2614.9, "tf32": 653.7, "fp32": 163.4},
    "L40S": {"bf16": 362.05, "fp16": 362.05, "fp8": 733.0, "tf32": 183.0, "fp32": 91.6},
    "V100": {"fp16": 125.0, "fp32": 15.7},
    "TPU-v4": {"bf16": 275.0},
}

# (pattern over the squashed lower-case name, canonical key); first match wins, so specific first.
_ALIASES: tuple[tuple[str, str], ...] = (
    (r"a100.*40", "A100-40GB"),
    (r"a100", "A100-80GB"),
    (r"h100.*pcie", "H100-PCIe"),
    (r"h100", "H100-SXM"),
    (r"gh200|h200", "H200"),
    (r"b200", "B200"),
    (r"mi300x", "MI300X"),
    (r"l40s", "L40S"),
    (r"v100", "V100"),
    (r"tpuv4", "TPU-v4"),
)

# Mixed-precision names used by trainers: ``amp_bf16`` computes in bf16, ``amp_fp8`` in fp8.
_PRECISION_ALIASES: dict[str, str] = {
    "amp_bf16": "bf16", "bfloat16": "bf16", "amp_fp16": "fp16", "float16": "fp16", "half": "fp16",
    "amp_fp8": "fp8", "float32": "fp32", "float": "fp32",
}


def canonical_model(name: str) -> str | None:
    """A built-in table key for a GPU model name as inventories, DCGM ``modelName`` and trainers
    write it (``H100-SXM``, ``NVIDIA H100 80GB HBM3``, ``a100_40gb``); None when unknown."""
    squashed = re.sub(r"[^a-z0-9]", "", name.lower())
    if name in PEAK_TFLOPS:
        return name
    for pattern, key in _ALIASES:
        if re.search(pattern, squashed):
            return key
    return None


def normalise_precision(precision: str) -> str:
    """``amp_bf16`` -> ``bf16``; known names pass through lower-cased."""
    p = precision.strip().lower()
    return _PRECISION_ALIASES.get(p, p)


def peak_flops_per_s(model: str, precision: str,
                     overrides: Mapping[str, GpuModelSpec] | None = None) -> float:
    """Peak dense FLOP/s of one accelerator of ``model`` at ``precision``.

    The inventory's ``gpu_models`` entry (``overrides[model].tflops[precision]``) wins over the
    built-in table. Raises InputError naming the model and precision when neither knows it.
    """
    prec = normalise_precision(precision)
    if overrides and model in overrides:
        tflops = overrides[model].tflops
        for key in (prec, precision):
            if key in tflops:
                return float(tflops[key]) * 1e12
    table_key = canonical_model(model)
    if table_key is not None and prec in PEAK_TFLOPS[table_key]:
        return PEAK_TFLOPS[table_key][prec] * 1e12
    raise InputError(f"no peak FLOP/s for GPU model {model!r} at precision {precision!r}: "
                     "add it under gpu_models (e.g. bf16_tflops)", key=f"gpu_models.{model}")
