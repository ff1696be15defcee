"""Model FLOPs per token from the model's shape, and MFU / HFU from throughput.

Two published conventions, selectable (``FlopsFormula``):

* ``palm`` (Chowdhery et al. 2022, appendix B; also llm-foundry's benchmark README):
  model FLOPs per token = ``6·N + 12·L·H·Q·T`` (N parameters, L layers, H heads, Q head
  dimension, T sequence length; ``H·Q`` is the hidden size). With full activation recomputation
  the hardware does one more forward pass: ``8·N + 16·L·H·Q·T`` (llm-foundry's HFU, factor 4
  instead of 3). Selective recomputation (Korthikanti et al. 2022) redoes only the attention
  core: ``6·N + 16·L·H·Q·T``.
* ``megatron`` (Narayanan et al. 2021, eq. 3): FLOPs per iteration with activation
  recomputation ``96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h))``; per token that is
  ``96·l·h²·(1 + s/(6h)) + 6·h·V``, and without recomputation the transformer term is ``72``
  instead of ``96`` (the logit layer ``6·h·V`` is never recomputed).

MoE: pass the parameters active per token as ``n_params`` (``ModelShape.active_params``).
"""

from __future__ import annotations

from typing import Literal

from suanli.inventory.model import ModelShape

__all__ = [
    "FlopsFormula",
    "flops_per_token",
    "megatron_flops_per_iteration",
    "megatron_flops_per_token",
    "mfu",
    "palm_flops_per_token",
]

FlopsFormula = Literal["palm", "megatron"]
Recompute = Literal["none", "full", "selective"]


def palm_flops_per_token(n_params: float, layers: int, hidden: int, seq_len: int,
                         recompute: Recompute = "none") -> float:
    """``6N + 12·L·(H·Q)·T`` (PaLM appendix B), ``hidden`` = H·Q.

    recompute ``full``: ``8N + 16·L·hidden·T`` (hardware FLOPs, llm-foundry HFU);
    ``selective``: ``6N + 16·L·hidden·T``.
    """
    dense_factor = 8.0 if recompute == "full" else 6.0
    attn_factor = 12.0 if recompute == "none" else 16.0
    return dense_factor * n_params + attn_factor * layers * hidden * seq_len


def megatron_flops_per_token(layers: int, hidden: int, seq_len: int, vocab: int,
                             recompute: bool = True) -> float:
    """Narayanan et al. 2021 eq. 3 per token: ``96·l·h²·(1 + s/6h) + 6·h·V`` with full
    recomputation, ``72·l·h²·(1 + s/6h) + 6·h·V`` without."""
    factor = 96.0 if recompute else 72.0
    h = float(hidden)
    return factor * layers * h * h * (1.0 + seq_len / (6.0 * h)) + 6.0 * h * vocab


def megatron_flops_per_iteration(batch: int, seq_len: int, layers: int, hidden: int,
                                 vocab: int) -> float:
    """``96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h))``, verbatim from the paper (with recomputation)."""
    h = float(hidden)
    return (96.0 * batch * seq_len * layers * h * h
            * (1.0 + seq_len / (6.0 * h) + vocab / (16.0 * layers * h)))


def flops_per_token(shape: ModelShape, formula: FlopsFormula = "palm",
                    recompute: Recompute = "none") -> float | None:
    """FLOPs per trained token of a model; None when the shape does not determine it.

    ``shape.flops_per_token`` wins (it is the model FLOPs; recompute cannot be added to it).
    MoE models count ``active_params``. ``recompute`` gives hardware FLOPs (HFU) instead of
    model FLOPs (MFU).
    """
    if shape.flops_per_token is not None:
        return float(shape.flops_per_token)
    n = shape.active_params if shape.active_params is not None else shape.params
    if formula == "megatron" and None not in (shape.layers, shape.hidden, shape.seq_len, shape.vocab):
        assert shape.layers and shape.hidden and shape.seq_len and shape.vocab is not None
        return megatron_flops_per_token(shape.layers, shape.hidden, shape.seq_len, shape.vocab,
                                        recompute=recompute != "none")
    if n is None:
        return None
    if shape.layers is None or shape.hidden is None or shape.seq_len is None:
        return (8.0 if recompute == "full" else 6.0) * n
    return palm_flops_per_token(n, shape.layers, shape.hidden, shape.seq_len, recompute)


def mfu(flops_per_s: float, n_devices: int, peak_flops_per_s: float) -> float:
    """Achieved FLOP/s over the devices' combined peak."""
    return flops_per_s / (n_devices * peak_flops_per_s)
