"""Job-level faults read from log records: CUDA out-of-memory and collective hangs; and the
per-step timing of a job's spans they (and the incident impact) use."""

from suanli.analysis.jobs.adapter import JobEventsResult, analyze
from suanli.analysis.jobs.events import JobEventsConfig, job_findings
from suanli.analysis.jobs.steps import stall_time, step_times

__all__ = ["JobEventsConfig", "JobEventsResult", "analyze", "job_findings", "stall_time", "step_times"]
