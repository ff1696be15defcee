"""``GET /metrics``: suanli's derived series and its own health, in the Prometheus exposition format.

Written with prometheus_client from the last analysis step (nothing is computed on a scrape):

* the derived series of the last step's diagnosis, in the one vocabulary that remote write uses
  too (``store.remote_write.derived.DERIVED``): per job (label ``job_id``; ``job`` is the
  scraper's) MFU, goodput, time split, cost per effective PFLOP and lost cost; per GPU its health
  score and failure probability, with dcgm-exporter's own labels (``gpu``, ``UUID``,
  ``Hostname``) and the canonical id ``gpu_id``; per incident whether it is open, its cost and
  the chosen action's saving;
* the info series the exported alert rules join (:data:`JOINED_INFO`, as
  ``store.remote_write.derived.info_series`` writes them), so the Prometheus that scrapes ``serve``
  keeps them fresh (docs/rules.md, "Topology inhibitions in Alertmanager"). ``suanli_gpu_info``
  and ``suanli_port_info`` are left to remote write: the former carries dcgm-exporter's own
  camelCase label names, which ``promtool check metrics`` flags in an exposition;
* ``suanli_incidents_open{category}`` (the tracker's open incidents, every category);
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
from suanli.inventory import Inventory
from suanli.store.remote_write.derived import DERIVED, diagnosis_series, info_series

if TYPE_CHECKING:
    from suanli.web.service import Service

__all__ = ["JOINED_INFO", "SuanliCollector", "derived_metrics", "info_metrics", "metrics_router"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _gauge(name: str, doc: str, labels: list[str], rows: list[tuple[list[str], float | None]]) -> GaugeMetricFamily:
    fam = GaugeMetricFamily(name, doc, labels=labels)
    for values, v in rows:
        if v is not None:
            fam.add_metric(values, float(v))
    return fam


def derived_metrics(doc: dict[str, Any], inventory: Inventory) -> Iterator[Metric]:
    """The diagnosis's derived series as gauge families (no timestamps: the scrape's time)."""
    families: dict[str, Metric] = {}
    for name, labels, points in diagnosis_series(doc, 0.0, inventory):
        fam = families.get(name)
        if fam is None:
            fam = families[name] = Metric(name, DERIVED.get(name, name), "gauge")
        for _, value in points:
            fam.add_sample(name, dict(labels), value)
    yield from families.values()


INFO_HELP = "The inventory's topology (value 1), to join exporter series on canonical ids and relations."


JOINED_INFO = ("suanli_nic_info", "suanli_job_info", "suanli_job_dependency_info")
"""The info series the exported alert rules join (suanli.rules.export_topology)."""


def info_metrics(inventory: Inventory) -> list[Metric]:
    """The inventory's :data:`JOINED_INFO` series as gauge families (value 1)."""
    families: dict[str, Metric] = {}
    for name, labels, points in info_series(inventory, 0.0):
        if name not in JOINED_INFO:
            continue
        fam = families.setdefault(name, Metric(name, INFO_HELP, "gauge"))
        for _, value in points:
            fam.add_sample(name, dict(labels), value)
    return list(families.values())


class SuanliCollector(Collector):
    """Reads ``svc`` at every scrape (the info series once per inventory)."""

    def __init__(self, svc: Service) -> None:
        self.svc = svc
        self._info: tuple[Inventory, list[Metric]] | None = None

    def collect(self) -> Iterator[Metric]:
        yield from derived_metrics(self.svc.stepper.stats.diagnosis, self.svc.inventory)
        if self._info is None or self._info[0] is not self.svc.inventory:
            self._info = (self.svc.inventory, info_metrics(self.svc.inventory))
        yield from self._info[1]
        yield self._open_incidents()
        yield from self._own()

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
