"""A Hugging Face ``Trainer`` callback: one ``train_step`` per optimizer step with its phases.

``Trainer(..., callbacks=[SuanliTrainerCallback(probe)])``. The Trainer has no forward/backward
events, so the callback hooks the model itself when training begins: ``forward`` runs from the
model's forward pre-hook to its forward hook, ``backward`` from there to the next forward (gradient
accumulation) or to ``on_pre_optimizer_step``, ``optimizer`` from there to the step's end.
``train.tokens`` is the number of non-padding tokens when the Trainer counts them
(``state.num_input_tokens_seen`` with ``include_num_input_tokens_seen``), else ``tokens_per_step``.
"""

from __future__ import annotations

from typing import Any

from transformers import TrainerCallback

from suanli.probe.core import Probe
from suanli.probe.torch._phases import PhaseTracker

__all__ = ["SuanliTrainerCallback"]


class SuanliTrainerCallback(TrainerCallback):  # type: ignore[misc]
    """Step and phase spans from Trainer events and model hooks; never raises into the Trainer."""

    def __init__(self, probe: Probe, tokens_per_step: float | None = None) -> None:
        self.probe = probe
        self.tokens_per_step = tokens_per_step
        self._track = PhaseTracker(probe)
        self._hooks: list[Any] = []
        self._seen = 0

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any) -> None:
        if model is not None and not self._hooks:
            self._hooks = [model.register_forward_pre_hook(self._fwd_start),
                           model.register_forward_hook(self._fwd_end)]
        self._seen = int(getattr(state, "num_input_tokens_seen", 0) or 0)

    def _fwd_start(self, *_: Any) -> None:
        if self._track.in_step:
            self._track.switch("forward")

    def _fwd_end(self, *_: Any) -> None:
        if self._track.in_step:
            self._track.switch("backward")

    def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self._track.begin_step(int(state.global_step), None)

    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self._track.switch("optimizer")

    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        seen = int(getattr(state, "num_input_tokens_seen", 0) or 0)
        tokens = seen - self._seen if seen > self._seen else self.tokens_per_step
        self._seen = seen
        self.probe.annotate(tokens=tokens)
        self._track.end_step()

    def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self._track.end_step()
        for h in self._hooks:
            h.remove()
        self._hooks = []
        self.probe.flush()
