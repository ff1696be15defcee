"""One vocabulary for suanli's derived series: ``serve``'s ``/metrics`` exposes exactly the series
``diagnose --remote-write`` writes (names, labels, values), so one dashboard reads either."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from suanli.cli.diagnose import open_diagnosis
from suanli.inventory import load_inventory
from suanli.report.json_doc import diagnosis_json
from suanli.store.remote_write.derived import DERIVED, diagnosis_series, info_series
from suanli.web.metrics import JOINED_INFO, derived_metrics, info_metrics
from tests.conftest import shared_path


def test_serve_exposes_what_remote_write_writes() -> None:
    diag, store, inv = open_diagnosis(shared_path("scenarios", "pcie_riser"), None, None, None, None)
    store.close()
    doc = diagnosis_json(diag)

    class Derived(Collector):
        def collect(self):  # type: ignore[no-untyped-def]
            return derived_metrics(doc, inv)

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Derived())
    scraped = {(s.name, frozenset(s.labels.items())): s.value
               for fam in text_string_to_metric_families(generate_latest(registry).decode())
               for s in fam.samples}
    written = {(name, frozenset(labels.items())): value
               for name, labels, points in diagnosis_series(doc, 1.0, inv) for _, value in points}
    assert scraped == written
    assert {name for name, _ in written} <= set(DERIVED)
    # the numbers are the diagnosis's own: MFU per job, and dcgm-exporter's labels on the GPU's
    for job in doc["efficiency"]["jobs"]:
        assert written[("suanli_job_mfu_ratio", frozenset({("job_id", job["id"])}))] == job["mfu"]
    gpu = inv.gpus["node-002/gpu5"]
    health = [labels for name, labels in written if name == "suanli_gpu_health_score"
              and ("gpu_id", gpu.id) in labels]
    assert health == [frozenset({("gpu_id", gpu.id), ("node", "node-002"), ("Hostname", "node-002"),
                                 ("gpu", "5"), ("UUID", gpu.uuid)})]


def test_serve_exposes_the_info_series_the_exported_rules_join() -> None:
    """So a Prometheus scraping ``serve`` holds them fresh: as remote write writes them."""
    inv = load_inventory(shared_path("scenarios", "switch_port_errors", "inventory.yaml"))

    class Info(Collector):
        def collect(self):  # type: ignore[no-untyped-def]
            return info_metrics(inv)

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Info())
    scraped = {(s.name, frozenset(s.labels.items())): s.value
               for fam in text_string_to_metric_families(generate_latest(registry).decode())
               for s in fam.samples}
    written = {(name, frozenset(labels.items())): value for name, labels, points in info_series(inv, 1.0)
               for _, value in points if name in JOINED_INFO}
    assert scraped == written
    # read off inventory.yaml: 8 nodes of 8 GPUs and 4 NICs, one job
    counts = {n: sum(1 for name, _ in scraped if name == n) for n in JOINED_INFO}
    assert counts["suanli_nic_info"] == 32 and counts["suanli_job_info"] == 1
    # the job runs on 56 GPUs of 7 nodes (truth.json: world 56), so at least those GPUs and nodes
    assert counts["suanli_job_dependency_info"] >= 56 + 7
    assert set(scraped.values()) == {1.0}
