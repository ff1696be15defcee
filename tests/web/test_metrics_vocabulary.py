"""One vocabulary for suanli's derived series: ``serve``'s ``/metrics`` exposes exactly the series
``diagnose --remote-write`` writes (names, labels, values), so one dashboard reads either."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from suanli.cli.diagnose import open_diagnosis
from suanli.report.json_doc import diagnosis_json
from suanli.store.remote_write.derived import DERIVED, diagnosis_series
from suanli.web.metrics import derived_metrics
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
