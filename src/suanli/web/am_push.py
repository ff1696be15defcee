"""Incidents pushed to Alertmanager's v2 API (``POST /api/v2/alerts``), as Prometheus pushes alerts.

Each open incident is sent after every step with ``endsAt`` a few intervals ahead (so Alertmanager
resolves it by itself should ``serve`` stop), and a resolved one with its end: Alertmanager then
marks it resolved. Labels hold the canonical ids and the category; annotations a summary with
values and units, the evidence, the console link and a runbook URL. A push that fails is counted
and retried on the next step; it never stops the analysis.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from suanli.timefmt import to_rfc3339
from suanli.web.incident_log import KeptIncident
from suanli.web.settings import Destination

__all__ = ["ALERTNAME", "AlertPusher", "alert_of"]

log = logging.getLogger("suanli.serve")

ALERTNAME = "SuanliIncident"


def _summary(k: KeptIncident) -> str:
    inc, imp = k.incident, k.incident.impact
    parts = [f"{inc.category} at {inc.root_kind} {inc.root_id} (confidence {inc.confidence:.2f})"]
    if imp.gpus:
        parts.append(f"{imp.gpus} GPUs behind it")
    if imp.jobs:
        parts.append("jobs " + ", ".join(imp.jobs))
    if imp.lost_gpu_hours is not None:
        parts.append(f"{imp.lost_gpu_hours:.2f} GPU-hours lost")
    if imp.lost_cost is not None:
        parts.append(f"${imp.lost_cost:,.2f} lost")
    return "; ".join(parts)


def alert_of(k: KeptIncident, console_url: str, ends_at: float) -> dict[str, Any]:
    """The v2 ``postableAlert`` of one incident (``ends_at`` for an open one)."""
    inc = k.incident
    labels = {"alertname": ALERTNAME, "incident_id": inc.id, "category": inc.category,
              "root_kind": inc.root_kind, "root_id": inc.root_id, "source": "suanli"}
    if inc.impact.jobs:
        labels["job_id"] = ",".join(inc.impact.jobs)
    end = inc.end if inc.state == "resolved" and inc.end is not None else ends_at
    return {
        "labels": labels,
        "annotations": {"summary": _summary(k), "evidence": "\n".join(inc.evidence[:10]),
                        "console_url": f"{console_url}/console/incidents/{inc.id}",
                        "runbook_url": f"{console_url}/console/runbooks/{inc.category}"},
        "startsAt": to_rfc3339(inc.start),
        "endsAt": to_rfc3339(end),
        "generatorURL": f"{console_url}/console/incidents/{inc.id}",
    }


@dataclass
class PushStats:
    pushes: int = 0
    alerts: int = 0
    failures: int = 0
    last_error: str | None = None


@dataclass
class AlertPusher:
    """Pushes to every configured Alertmanager; ``hold_s`` is how far ahead an open alert ends."""

    destinations: Sequence[Destination]
    console_url: str
    hold_s: float = 300.0
    stats: PushStats = field(default_factory=PushStats)

    def push(self, incidents: Sequence[KeptIncident]) -> None:
        """One POST per destination; an open incident ends ``hold_s`` from now (wall clock)."""
        if not self.destinations or not incidents:
            return
        ends = time.time() + self.hold_s
        body = [alert_of(k, self.console_url, ends) for k in incidents]
        for dest in self.destinations:
            self._send(dest, body)

    def _send(self, dest: Destination, body: list[dict[str, Any]]) -> None:
        headers = {}
        if dest.token_file is not None:
            headers["Authorization"] = f"Bearer {Path(dest.token_file).read_text().strip()}"
        try:
            resp = httpx.post(dest.url.rstrip("/") + "/api/v2/alerts", json=body, headers=headers,
                              timeout=dest.timeout_s)
            resp.raise_for_status()
        except (httpx.HTTPError, OSError) as exc:
            self.stats.failures += 1
            self.stats.last_error = f"{dest.url}: {type(exc).__name__}: {exc}"[:300]
            log.warning("alertmanager push failed: %s", self.stats.last_error)
            return
        self.stats.pushes += 1
        self.stats.alerts += len(body)
