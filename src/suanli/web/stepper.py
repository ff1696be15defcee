"""The continuous analysis of ``serve``: one :meth:`Stepper.step` per evaluation interval.

A step runs the pipeline's incremental step (:class:`suanli.pipeline.live.Pipeline`) at ``now``,
folds its changes into the kept incidents, writes them to the store (:class:`IncidentLog`) and
only then announces them (``announce(change, incident)``: a printed line, an Alertmanager push),
so an incident announced as opened survives a crash. After a restart the kept incidents are
handed back to the pipeline's tracker, so the fault seen again keeps its incident and its id.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from suanli.pipeline.live import Pipeline, Step
from suanli.pipeline.model import Diagnosis
from suanli.report import diagnosis_json
from suanli.timefmt import to_rfc3339
from suanli.web.incident_log import IncidentLog, KeptIncident

__all__ = ["Announce", "StepStats", "Stepper"]

log = logging.getLogger("suanli.serve")

Announce = Callable[[str, KeptIncident], None]
"""``announce(opened | reopened | resolved, incident)``, called after the change was stored."""


@dataclass
class StepStats:
    """What the status page and ``/metrics`` say about the analysis."""

    steps: int = 0
    errors: int = 0
    last_error: str | None = None
    last_now: float | None = None
    last_duration_s: float = 0.0
    last_finished_s: float | None = None
    diagnosis: dict[str, Any] = field(default_factory=dict)
    """The last step's diagnosis JSON (spec/diagnosis.md)."""


class Stepper:
    """Steps ``pipeline`` and keeps its incidents in ``incident_log`` (restored from it at start)."""

    def __init__(self, pipeline: Pipeline, incident_log: IncidentLog, announce: Announce | None = None) -> None:
        self.log, self.announce = incident_log, announce
        self.kept: dict[str, KeptIncident] = {k.incident.id: k for k in incident_log.load()}
        self.stats = StepStats()
        self.last: Diagnosis | None = None
        """The last step's diagnosis (its fabric heatmap and port values feed the API's fabric lists)."""
        self._lock = threading.Lock()             # the kept incidents (readers wait only for a fold)
        self._stepping = threading.Lock()         # one step at a time
        self.pipeline = pipeline
        self.use(pipeline)

    def use(self, pipeline: Pipeline) -> None:
        """Step this pipeline from now on (a reloaded inventory or rule file), with the kept incidents."""
        with self._stepping, self._lock:
            for k in self.kept.values():
                pipeline.tracker.restore(k.incident, k.last_seen, k.history)
            self.pipeline = pipeline

    def incidents(self, state: str | None = None) -> list[KeptIncident]:
        with self._lock:
            items = sorted(self.kept.values(), key=lambda k: (k.incident.start, k.incident.root_id))
        return [k for k in items if state is None or k.incident.state == state]

    def step(self, now: float) -> list[tuple[str, KeptIncident]]:
        """One step at ``now``: the changes, stored, then announced (``updated`` is not announced)."""
        t0 = time.perf_counter()
        with self._stepping:
            step = self.pipeline.step(now)
            doc = diagnosis_json(step.diagnosis)
            with self._lock:
                changed = self._fold(step, doc)
                self.log.save([k for _, k in changed])
        s = self.stats
        s.steps, s.last_now, s.diagnosis = s.steps + 1, now, doc
        self.last = step.diagnosis
        s.last_duration_s, s.last_finished_s = time.perf_counter() - t0, time.time()
        if self.announce is not None:
            for what, k in changed:
                if what != "updated":
                    self.announce(what, k)
        return changed

    def safe_step(self, now: float) -> None:
        """:meth:`step`, an exception logged and counted (the loop goes on)."""
        try:
            self.step(now)
        except Exception as exc:
            self.stats.errors += 1
            self.stats.last_error = f"{type(exc).__name__}: {exc}"
            log.exception("analysis step at %s failed", to_rfc3339(now))

    def _fold(self, step: Step, doc: dict[str, Any]) -> list[tuple[str, KeptIncident]]:
        docs = {inc.id: d for inc, d in zip(step.diagnosis.incidents, doc["incidents"], strict=True)}
        out = []
        for what, inc in step.changes:
            prev = self.kept.get(inc.id)
            inc_doc = docs.get(inc.id) or {**(prev.doc if prev else {}), "end": to_rfc3339(inc.end)}
            history = list(prev.history) if prev else []
            if what != "updated":
                history.append((step.now, what))
            last_seen = prev.last_seen if (what == "resolved" and prev) else step.now
            kept = KeptIncident(inc, last_seen, history, inc_doc)
            self.kept[inc.id] = kept
            out.append((what, kept))
        return out
