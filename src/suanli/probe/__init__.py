"""suanli.probe: training-step spans (spec/telemetry.md) and MFU from inside a PyTorch loop.

Importing it needs neither torch nor a GPU; ``suanli.probe.torch`` holds the PyTorch parts.
Three lines (docs/probe.md)::

    probe = Probe(job_id="llama-70b-pretrain")
    with probe.step(step, tokens=n):
        with probe.phase("forward"): ...
"""

from suanli.probe.config import ProbeConfig, is_off
from suanli.probe.core import NOOP, Probe
from suanli.probe.flops import flops_per_token_of_shape
from suanli.probe.ids import collective_span_id, step_trace_id
from suanli.probe.metrics import mfu_of_step

__all__ = [
    "NOOP", "Probe", "ProbeConfig", "collective_span_id", "flops_per_token_of_shape",
    "is_off", "mfu_of_step", "step_trace_id",
]
