"""A PyTorch Lightning callback: one ``train_step`` per training batch with its phases.

``Trainer(callbacks=[SuanliLightningCallback(probe)])``. Phases: ``forward`` from the batch start
to ``on_before_backward``, ``backward`` to ``on_after_backward``, ``optimizer`` from
``on_before_optimizer_step`` to the batch end. ``tokens_per_batch`` (a number, or a function of
the batch) fills ``train.tokens``. Works with the ``lightning`` package (or ``pytorch_lightning``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from suanli.probe.core import Probe
from suanli.probe.torch._phases import PhaseTracker

try:
    from lightning.pytorch.callbacks import Callback
except ImportError:  # the older package name
    from pytorch_lightning.callbacks import Callback

__all__ = ["SuanliLightningCallback"]


class SuanliLightningCallback(Callback):  # type: ignore[misc]
    """Step and phase spans from Lightning's training hooks; never raises into the trainer."""

    def __init__(self, probe: Probe, tokens_per_batch: float | Callable[[Any], float] | None = None) -> None:
        super().__init__()
        self.probe = probe
        self.tokens_per_batch = tokens_per_batch
        self._track = PhaseTracker(probe)

    def _tokens(self, batch: Any) -> Any:
        t = self.tokens_per_batch
        try:
            return t(batch) if callable(t) else t
        except Exception:
            return None

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        self._track.begin_step(int(trainer.global_step), self._tokens(batch))
        self._track.switch("forward")

    def on_before_backward(self, trainer: Any, pl_module: Any, loss: Any) -> None:
        self._track.switch("backward")

    def on_after_backward(self, trainer: Any, pl_module: Any) -> None:
        self._track.switch(None)

    def on_before_optimizer_step(self, trainer: Any, pl_module: Any, optimizer: Any) -> None:
        self._track.switch("optimizer")

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        self._track.end_step()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self._track.end_step(failed=True)
        self.probe.flush()

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self._track.end_step()
        self.probe.flush()
