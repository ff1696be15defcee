"""Model FLOPs per token from a torch module (the ledger's formula, suanli.analysis.ledger.flops)."""

from __future__ import annotations

from typing import Any

from suanli.probe.flops import flops_per_token_of_shape

__all__ = ["count_params", "model_flops_per_token"]


def count_params(module: Any) -> int:
    """Trainable parameters (``requires_grad``), each shared tensor once."""
    seen: set[int] = set()
    total = 0
    for p in module.parameters():
        if p.requires_grad and id(p) not in seen:
            seen.add(id(p))
            total += int(p.numel())
    return total


def _config_shape(module: Any) -> tuple[int | None, int | None, int | None]:
    """(layers, hidden, vocab) from a Hugging Face style ``module.config``, when it has one."""
    cfg = getattr(module, "config", None)

    def pick(*names: str) -> int | None:
        for n in names:
            v = getattr(cfg, n, None)
            if isinstance(v, int) and not isinstance(v, bool):
                return v
        return None

    return (pick("num_hidden_layers", "n_layer", "num_layers"), pick("hidden_size", "n_embd", "d_model"),
            pick("vocab_size"))


def model_flops_per_token(module: Any, seq_len: int | None = None, layers: int | None = None,
                          hidden: int | None = None, vocab: int | None = None,
                          formula: str = "palm") -> float | None:
    """``6N + 12·L·hidden·T`` when the shape is known (given, or from ``module.config``), else ``6N``."""
    c_layers, c_hidden, c_vocab = _config_shape(module)
    return flops_per_token_of_shape(
        float(count_params(module)), layers if layers is not None else c_layers,
        hidden if hidden is not None else c_hidden, seq_len, vocab if vocab is not None else c_vocab,
        "megatron" if formula == "megatron" else "palm")
