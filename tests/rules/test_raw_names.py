"""Rules may name a metric as its exporter stores it: the condition stands for the friendly name of
that metric, exports to the same PromQL and fires on the same entities at the same times (the
pcie_riser scenario, in a real DuckDB store, through the evaluator)."""

from __future__ import annotations

import dataclasses

import pytest

from suanli.ingest.load import load_paths
from suanli.inventory import load_inventory
from suanli.rules import EntityIndex, Evaluator
from suanli.rules.conditions import parse_condition
from suanli.rules.export import to_prometheus
from suanli.rules.language import parse_rules
from suanli.store.duck import DuckStore
from tests.conftest import shared_path

FRIENDLY = """
rules:
  - name: riser
    scope: gpu
    category: pcie_riser
    conditions:
      all:
        - gpu_temp > 85 for 5m
        - pcie_aer_errors > 100/min
        - sudden_increase(rdma_retransmits)
"""
RAW = (FRIENDLY.replace("gpu_temp >", "DCGM_FI_DEV_GPU_TEMP >")
       .replace("pcie_aer_errors >", "suanli_pcie_aer_errors_total >")
       .replace("(rdma_retransmits)", "(suanli_rdma_retransmits_total)"))


def _without_text(rs: object) -> list[object]:
    return [dataclasses.replace(c, text="") for r in rs.rules for c in r.conditions]  # type: ignore[attr-defined]


def test_raw_names_parse_to_the_friendly_conditions_and_export_alike() -> None:
    assert RAW != FRIENDLY
    friendly, raw = parse_rules(FRIENDLY), parse_rules(RAW)
    assert _without_text(raw) == _without_text(friendly)
    assert to_prometheus(raw)[0] == to_prometheus(friendly)[0]
    c = parse_condition("node_infiniband_symbol_error_total > 1/min for 2m")
    assert (c.kind, c.name, c.per_s, c.for_s) == ("rate", "symbol_errors", 60.0, 120.0)
    with pytest.raises(ValueError, match="unknown metric 'DCGM_FI_DEV_NO_SUCH'"):
        parse_condition("DCGM_FI_DEV_NO_SUCH > 1")
    with pytest.raises(ValueError, match="a gauge"):
        parse_condition("DCGM_FI_DEV_GPU_TEMP > 1/min")


@pytest.mark.slow
def test_raw_names_fire_as_the_friendly_ones() -> None:
    folder = shared_path("scenarios", "pcie_riser")
    store = DuckStore()
    load_paths([folder], store)
    store.flush()
    index = EntityIndex.from_inventory(load_inventory(folder / "inventory.yaml"))
    t0, t1 = store.time_range() or (0.0, 0.0)
    fired = []
    for text in (FRIENDLY, RAW):
        alerts = Evaluator(parse_rules(text), index).run(store, t0, t1, {})
        fired.append(sorted((a.entity_id, a.fired_at) for a in alerts if a.fired_at is not None))
    store.close()
    assert fired[0] == fired[1] and fired[0]
