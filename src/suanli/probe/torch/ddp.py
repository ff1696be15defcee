"""A DDP communication hook that times each gradient bucket's all-reduce, adding no synchronisation.

It does what DDP's default hook does (``default_hooks.allreduce_hook``: divide by the world size,
all-reduce asynchronously) and chains one callback onto the returned future: the callback marks
the end of the collective when it completes (on the communication thread for gloo; on the GPU
stream for NCCL, as a CUDA event). The bucket's start is marked when DDP hands it over, i.e. when
its gradients are ready; the last bucket also marks the end of backward compute, so time spent
after it waiting on the all-reduce is exposed communication.
"""

# No ``from __future__ import annotations``: DDP checks the hook's annotations at run time
# (``bucket: dist.GradBucket``, returning ``torch.futures.Future[torch.Tensor]``).
from typing import Any

from suanli.probe.core import Probe

__all__ = ["attach_ddp"]


class _HookState:
    __slots__ = ("probe", "process_group")

    def __init__(self, probe: Probe, process_group: Any) -> None:
        self.probe = probe
        self.process_group = process_group


def _timed_allreduce(state: _HookState, bucket: Any) -> Any:
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    probe = state.probe
    ph = None
    if probe.enabled:
        try:
            buf = bucket.buffer()
            if bucket.is_last():
                probe.grads_ready()
            ph = probe.comm_begin("allreduce", int(buf.numel()) * int(buf.element_size()), int(bucket.index()))
        except Exception:
            probe._fault()
    fut = default_hooks.allreduce_hook(state.process_group, bucket)
    if ph is None:
        return fut
    timer = probe.timer

    def done(f: Any) -> Any:
        try:
            probe.comm_end(ph, timer.mark())
        except Exception:
            probe._fault()
        return f.value()

    return fut.then(done)


def attach_ddp(probe: Probe, model: Any, process_group: Any = None) -> None:
    """Register the timing hook on a ``DistributedDataParallel`` model (once, before training)."""
    import torch
    import torch.distributed as dist

    def hook(state: _HookState, bucket: dist.GradBucket  # type: ignore[name-defined]
             ) -> torch.futures.Future[torch.Tensor]:
        fut: torch.futures.Future[torch.Tensor] = _timed_allreduce(state, bucket)
        return fut

    model.register_comm_hook(_HookState(probe, process_group), hook)
