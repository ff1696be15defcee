"""``GET /metrics``: suanli's derived series and its own health, in the Prometheus exposition format.

Written with prometheus_client from the last analysis step (nothing is computed on a scrape):

* per job (label ``job_id``; ``job`` is the scraper's): ``suanli_job_mfu_ratio``,
  ``suanli_job_goodput_ratio``, ``suanli_job_time_split_ratio{phase}``,
  ``suanli_job_cost_per_effective_pflop_dollars``, ``suanli_job_lost_cost_dollars{cause}``;
* per GPU: ``suanli_gpu_health_score`` and ``suanli_gpu_dbe_probability{horizon_days}``, with
  dcgm-exporter's own labels (``gpu``, ``UUID``, ``Hostname``) and the canonical id ``gpu_id``;
* ``suanli_incidents_open{category}``;
* suanli itself: ``suanli_scrape_target_up{target}``, ``suanli_ingested_records_total{kind}``,
  ``suanli_receiver_queue_pending{receiver}``, ``suanli_receiver_refused_total{receiver,reason}``,
  ``suanli_analysis_steps_total``, ``suanli_analysis_step_errors_total``,
  ``suanli_analysis_step_duration_seconds``, ``suanli_analysis_last_step_timestamp_seconds``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from suanli.analysis.categories import POLICIES

if TYPE_CHECKING:
    from suanli.web.service import Service

__all__ = ["SuanliCollector", "metrics_router"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _gauge(name: str, doc: str, labels: list[str], rows: list[tuple[list[str], float | None]]) -> GaugeMetricFamily:
    fam = GaugeMetricFamily(name, doc, labels=labels)
    for values, v in rows:
        if v is not None:
            fam.add_metric(values, float(v))
    return fam


def _job_metrics(jobs: list[dict[str, Any]]) -> Iterator[Metric]:
    yield _gauge("suanli_job_mfu_ratio", "Model FLOPs utilisation of the job over the window (0..1).",
                 ["job_id"], [([j["id"]], j.get("mfu")) for j in jobs])
    yield _gauge("suanli_job_goodput_ratio", "Goodput: useful share of the job's GPU time (0..1).",
                 ["job_id"], [([j["id"]], j.get("goodput")) for j in jobs])
    yield _gauge("suanli_job_time_split_ratio", "Share of the job's time per phase (0..1).", ["job_id", "phase"],
                 [([j["id"], k], v) for j in jobs for k, v in (j.get("time_split") or {}).items()])
    yield _gauge("suanli_job_cost_per_effective_pflop_dollars", "Dollars per effective PFLOP of the job.",
                 ["job_id"], [([j["id"]], j.get("cost_per_effective_pflop")) for j in jobs])
    yield _gauge("suanli_job_lost_cost_dollars", "Dollars of the job's GPU time lost, by cause.", ["job_id", "cause"],
                 [([j["id"], k], v) for j in jobs for k, v in (j.get("lost_cost") or {}).items()])


class SuanliCollector(Collector):
    """Reads ``svc`` at every scrape."""

    def __init__(self, svc: Service) -> None:
        self.svc = svc

    def collect(self) -> Iterator[Metric]:
        diag = self.svc.stepper.stats.diagnosis
        yield from _job_metrics(diag.get("efficiency", {}).get("jobs", []))
        yield from self._gpu_metrics(diag.get("predictions", []))
        yield self._open_incidents()
        yield from self._own()

    def _gpu_metrics(self, preds: list[dict[str, Any]]) -> Iterator[Metric]:
        gpus = self.svc.inventory.gpus
        labels = ["gpu_id", "gpu", "UUID", "Hostname"]

        def ids(gid: str) -> list[str]:
            g = gpus.get(gid)
            return [gid, "" if g is None else str(g.index), (g.uuid or "") if g else "", g.node if g else ""]

        yield _gauge("suanli_gpu_health_score", "Health score of the GPU (1 healthy .. 0).", labels,
                     [(ids(p["id"]), p.get("health_score")) for p in preds])
        yield _gauge("suanli_gpu_dbe_probability", "Probability of a double-bit ECC error within the horizon.",
                     [*labels, "horizon_days"],
                     [([*ids(p["id"]), str(p.get("horizon_days"))], p.get("probability")) for p in preds])

    def _open_incidents(self) -> Metric:
        counts = Counter(k.incident.category for k in self.svc.stepper.incidents("open"))
        cats = sorted(set(POLICIES) | set(counts))
        return _gauge("suanli_incidents_open", "Open incidents by category.", ["category"],
                      [([c], float(counts.get(c, 0))) for c in cats])

    def _own(self) -> Iterator[Metric]:
        svc, s = self.svc, self.svc.stepper.stats
        health = svc.scraper.health() if svc.scraper is not None else {}
        yield _gauge("suanli_scrape_target_up", "1 when the target's last scrape succeeded.", ["target"],
                     [([name], float(h.up)) for name, h in health.items()])
        ingested = CounterMetricFamily("suanli_ingested_records", "Records committed to the store.", labels=["kind"])
        for kind, n in sorted(svc.sinks.counts.items()):
            ingested.add_metric([kind], float(n))
        yield ingested
        queues = svc.app.state.receivers.all() if hasattr(svc, "app") else ()
        stats = [(q.name, q.stats()) for q in queues]
        yield _gauge("suanli_receiver_queue_pending", "Records accepted and not yet stored.", ["receiver"],
                     [([n], float(st.pending)) for n, st in stats])
        refused = CounterMetricFamily("suanli_receiver_refused", "Records refused (429 full, 503 closed).",
                                      labels=["receiver", "reason"])
        for n, st in stats:
            refused.add_metric([n, "full"], float(st.refused_full))
            refused.add_metric([n, "closed"], float(st.refused_closed))
        yield refused
        yield CounterMetricFamily("suanli_analysis_steps", "Analysis steps run.", value=float(s.steps))
        yield CounterMetricFamily("suanli_analysis_step_errors", "Analysis steps that failed.", value=float(s.errors))
        yield GaugeMetricFamily("suanli_analysis_step_duration_seconds", "Duration of the last analysis step.",
                                value=s.last_duration_s)
        if s.last_finished_s is not None:
            yield GaugeMetricFamily("suanli_analysis_last_step_timestamp_seconds",
                                    "When the last analysis step finished (Unix time).", value=s.last_finished_s)


def metrics_router(svc: Service) -> APIRouter:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SuanliCollector(svc))
    router = APIRouter()

    @router.get("/metrics", dependencies=[Depends(svc.auth.require_read)], summary="Prometheus exposition",
                response_class=Response)
    def metrics(_request: Request) -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE)

    return router
