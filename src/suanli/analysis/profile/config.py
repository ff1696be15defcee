"""What ``suanli profile`` counts: the Kineto reading rules and HTA's trace-loading choices."""

from __future__ import annotations

from dataclasses import dataclass, field

from suanli.ingest.kineto import KinetoConfig

__all__ = ["ProfileConfig"]


@dataclass(frozen=True)
class ProfileConfig:
    """Thresholds and switches of the profile breakdown, with HTA-compatible defaults."""

    kineto: KinetoConfig = field(default_factory=KinetoConfig)
    """Device categories and kernel-kind patterns (communication, memory, other, wait)."""
    drop_last_step: bool = True
    """Leave out the device work launched from the last ``ProfilerStep#N`` on, as HTA's
    ``load_traces(include_last_profiler_step=False)`` does (the profiler usually stops inside that
    step). Only where the trace has two or more distinct steps; device work then counts only if its
    launch is in the trace."""
    round_to_us: bool = True
    """Where a trace's timestamps are fractional microseconds (JSON floats), round each event's
    start up and end down to a whole microsecond first, as HTA's parser does (its
    ``round_down_time_stamps``, for pytorch/pytorch#122425: float timestamps made back-to-back
    kernels overlap). A sub-microsecond event may round to nothing."""
    max_problems: int = 10
    """Problems listed per trace (bad events, truncation) before the rest are summed up in one line."""
