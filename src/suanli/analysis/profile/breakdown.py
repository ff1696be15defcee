"""One Kineto trace -> :class:`RankProfile`: HTA's temporal breakdown and comm/compute overlap.

What HTA 0.5 does (``hta/analyzers/breakdown_analysis.py``, ``communication_analysis.py``,
``hta/common/trace.py``), and so what this does with its own interval algebra:

1. Device events are those with a stream (``stream != -1``; suanli: and a device category). Where the trace has two or more
   ``ProfilerStep#N``, only work launched before the last step's start is kept: a device event
   counts if a host event with its correlation id starts before then (an event without a
   correlation id: if it starts before then); one whose launch is not in the trace is dropped.
2. Where timestamps are fractional microseconds, start times are rounded up and end times down.
3. ``kernel_time`` (our span) runs from the first kept event's start to the last one's end
   (zero-length events included, events that rounding turned inside out not);
   idle is the span minus the union of all events; compute is the union of compute kernels;
   ``non_compute`` is the rest of the busy time.
4. The comm/compute overlap is ``|comm ∩ compute| / |comm|`` over the unions of each kind.

suanli adds what HTA leaves implicit: communication (the comm union), exposed communication
(comm not under compute) and *other* (busy with neither), so that compute + exposed + other +
idle = 1; and it leaves out *wait* events (kinds.py), which HTA counts as work.
"""

from __future__ import annotations

import numpy as np

from suanli.analysis.profile.config import ProfileConfig
from suanli.analysis.profile.intervals import intersection_length, merge, union_length
from suanli.analysis.profile.result import RankProfile
from suanli.ingest.kineto import KINDS, KinetoTrace

__all__ = ["launched_before_last_step", "rank_profile"]

_CODE = {k: np.int8(i) for i, k in enumerate(KINDS)}


def _round(t: np.ndarray, up: bool, config: ProfileConfig, trace: KinetoTrace) -> np.ndarray:
    if not (config.round_to_us and trace.fractional_ts):
        return t
    out: np.ndarray = np.ceil(t) if up else np.floor(t)
    return out


def launched_before_last_step(trace: KinetoTrace, config: ProfileConfig) -> np.ndarray:
    """Per device event, whether HTA keeps it when it drops the last profiler step."""
    if not config.drop_last_step or len(np.unique(trace.step_no)) < 2:
        return np.ones(len(trace), dtype=bool)
    last = _round(trace.step_ts_us, True, config, trace).max()
    launch = _round(trace.launch_ts(), True, config, trace)
    own = _round(trace.ts_us, True, config, trace)
    with np.errstate(invalid="ignore"):
        keep: np.ndarray = np.where(trace.correlation < 0, own < last, launch < last)
    return keep


def _problems(trace: KinetoTrace, device: int, counted: int, dropped_step: int,
              config: ProfileConfig) -> tuple[str, ...]:
    out = list(trace.problems[: config.max_problems])
    if len(trace.problems) > config.max_problems:
        out.append(f"{trace.path}: {len(trace.problems) - config.max_problems} more problems")
    if device == 0:
        out.append(f"{trace.path}: no device activity in {trace.events} events "
                   "(no kernel, copy or fill on a device stream: a CPU-only trace?)")
    elif counted == 0 and dropped_step:
        out.append(f"{trace.path}: all {dropped_step} device events were launched in the last profiler "
                   "step, which is left out as HTA does (ProfileConfig.drop_last_step)")
    return tuple(out)


def rank_profile(trace: KinetoTrace, config: ProfileConfig | None = None) -> RankProfile:
    """The time split of one trace's device work (see the module's docstring)."""
    cfg = config or ProfileConfig()
    kind = cfg.kineto.kind_codes(trace.names)[trace.name_id]
    device = trace.device_mask(cfg.kineto)
    in_steps = launched_before_last_step(trace, cfg)
    keep = device & in_steps & (kind != _CODE["wait"])
    origin = np.floor(trace.ts_us.min()) if len(trace) else 0.0
    s = _round(trace.ts_us[keep], True, cfg, trace) - origin
    e = _round(trace.ts_us[keep] + trace.dur_us[keep], False, cfg, trace) - origin
    k = kind[keep]
    comp, comm = (s[k == _CODE["compute"]], e[k == _CODE["compute"]]), (s[k == _CODE["communication"]],
                                                                        e[k == _CODE["communication"]])
    busy_s, busy_e = merge(s, e)
    real = e >= s                   # a sub-microsecond event rounded to nothing has e < s
    span = float(e[real].max() - s[real].min()) if real.any() else 0.0
    steps = trace.launch_steps()[keep]
    return RankProfile(
        trace=trace.path, rank=trace.rank, rank_source=trace.rank_source, world_size=trace.world_size,
        device_events=int(keep.sum()), left_out_events=int(device.sum() - keep.sum()),
        steps=tuple(int(x) for x in np.unique(steps[steps >= 0])),
        span_s=span / 1e6, busy_s=float((busy_e - busy_s).sum()) / 1e6,
        compute_s=union_length(*comp) / 1e6, communication_s=union_length(*comm) / 1e6,
        overlap_s=intersection_length(comp, comm) / 1e6,
        memory_s=union_length(s[k == _CODE["memory"]], e[k == _CODE["memory"]]) / 1e6,
        problems=_problems(trace, int(device.sum()), int(keep.sum()), int((device & ~in_steps).sum()), cfg))
