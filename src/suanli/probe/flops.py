"""Model FLOPs per token for the probe, by the ledger's own formula (suanli.analysis.ledger.flops)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from suanli.analysis.ledger.flops import FlopsFormula

__all__ = ["flops_per_token_of_shape"]


def flops_per_token_of_shape(params: float, layers: int | None = None, hidden: int | None = None,
                             seq_len: int | None = None, vocab: int | None = None,
                             formula: FlopsFormula = "palm") -> float | None:
    """``6N + 12·L·hidden·T`` (PaLM) with the full shape, ``6N`` with only the parameter count;
    ``megatron`` needs layers, hidden, seq_len and vocab. The same function the ledger uses."""
    from suanli.analysis.ledger.flops import flops_per_token
    from suanli.inventory.model import ModelShape

    shape = ModelShape(params=params, layers=layers, hidden=hidden, seq_len=seq_len, vocab=vocab)
    return flops_per_token(shape, formula)
