"""The job-events unit: hang and out-of-memory findings over a window."""

from __future__ import annotations

from dataclasses import dataclass, field

from suanli.analysis.findings import Finding
from suanli.analysis.jobs.events import JobEventsConfig, job_findings
from suanli.analysis.jobs.gpu_fall import fallen_together
from suanli.analysis.jobs.steps import stall_time, step_times
from suanli.analysis.result import EntityValues
from suanli.analysis.window import Window, resolve_window
from suanli.inventory import Inventory
from suanli.store.api import Store

__all__ = ["JobEventsResult", "analyze"]


@dataclass
class JobEventsResult:
    findings: list[Finding] = field(default_factory=list)

    def values(self) -> EntityValues:
        """No per-entity values: the records only raise findings."""
        return {}


def analyze(store: Store, inventory: Inventory, window: Window | None = None,
            config: JobEventsConfig | None = None) -> JobEventsResult:
    """Hang and out-of-memory findings from the records in ``window`` (None: the data's extent)."""
    cfg = config if config is not None else JobEventsConfig()
    win = resolve_window(store, window)
    if win is None:
        return JobEventsResult()
    events = store.events(kinds=["cuda_oom", "nccl_timeout"], start=win.start, end=win.end)

    def stalled_at(job: str, before_ts: float) -> float | None:
        ends, durs = step_times(store, job, win)
        return stall_time(ends, durs, before_ts, cfg.stall_steps) if len(ends) else None

    def fell(job: str, from_s: float, to_s: float) -> str | None:
        gpus = sorted({r.gpu for r in inventory.jobs[job].ranks})
        return fallen_together(store, job, gpus, win.start, from_s, to_s if to_s > from_s else win.end)

    return JobEventsResult(job_findings(events, inventory, cfg, stalled_at, fell))
