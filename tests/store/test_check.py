"""``suanli check``: problems found and maturity levels."""

from __future__ import annotations

import numpy as np

from suanli.ingest.load import load_paths
from suanli.ingest.records import Event, SeriesKey, Span
from suanli.inventory import load_inventory, parse_inventory
from suanli.store.check import check
from suanli.store.duck import DuckStore
from tests.conftest import shared_path

INV = """
cluster: t
racks:
  - id: rack-01
    nodes:
      - id: node-001
        gpus:
          - {index: 0, uuid: GPU-11111111-2222-3333-4444-555555555555, pci_bus_id: "00000000:18:00.0"}
"""


def _store_with_problems() -> DuckStore:
    store = DuckStore(None)
    one = np.array([1.0])
    store.add_samples(SeriesKey("DCGM_FI_DEV_GPU_TEMP", (("UUID", "GPU-11111111-2222-3333-4444-555555555555"),),
                                "gpu", "node-001/gpu0"), one, one)
    store.add_samples(SeriesKey("DCGM_FI_DEV_GPU_TEMP", (("Hostname", "node-001.example.com"), ("UUID", "bogus")),
                                None, None), one, one)
    store.add_samples(SeriesKey("DCGM_FI_DEV_POWER_USAGE", (("pci_bus_id", "zz"),), None, None), one, one)
    store.add_spans([Span("t", "a", None, "train_step", 0.0, 1.0, None, None, 3, None, None),
                     Span("t", "b", None, "train_step", 0.0, 1.0, "job", 0, 3, None, None)])
    store.add_events([Event(1.0, "node-009", None, None, "xid", "Xid 79", code=79, source="kernel.log:4")])
    return store


def test_problems_are_named_with_counts_and_examples() -> None:
    report = check(_store_with_problems(), parse_inventory(INV))
    text = "\n".join(report.problems)
    assert not report.ok
    assert "1 series of DCGM_FI_DEV_GPU_TEMP resolve to no entity" in text
    assert "1 series of DCGM_FI_DEV_POWER_USAGE resolve to no entity" in text
    assert "1 DCGM series have neither UUID nor Hostname+gpu" in text       # the POWER_USAGE one
    assert "Hostname=node-001.example.com" in text                           # FQDN, not a node id
    assert "GPU UUIDs are not of the form" in text and "bogus" in text
    assert "pci_bus_id values are not PCI addresses: zz" in text
    assert "1 of 2 spans lack job.id or rank" in text
    assert "1 train_step spans cannot be joined" in text
    assert "1 train_step spans name no inventory GPU" in text                # span b: job and rank, no GPU
    assert "1 of 1 hardware events name no inventory device" in text
    # 1 of 3 series resolve (33 % < 50 %): correlation L1
    assert report.maturity["correlation"][0] == 1


def test_decision_levels_follow_rules_and_inhibitions() -> None:
    store = _store_with_problems()
    inv = parse_inventory(INV)
    assert check(store, inv).maturity["decision"][0] == 1
    assert check(store, inv, rules_loaded=2).maturity["decision"][0] == 2
    assert check(store, inv, rules_loaded=5).maturity["decision"][0] == 3
    # inhibitions but correlation L1: L4, not L5
    assert check(store, inv, rules_loaded=5, inhibitions=2).maturity["decision"][0] == 4


def test_public_scenario_is_clean_and_fully_covered() -> None:
    folder = shared_path("scenarios", "switch_port_errors")
    store = DuckStore(None)
    load_paths([folder], store)
    report = check(store, load_inventory(folder / "inventory.yaml"), rules_loaded=10, inhibitions=3)
    assert report.ok, report.problems
    # GPU, fabric, spans, logs and the SLA metric are all present: coverage L5
    assert report.maturity["coverage"][0] == 5
    assert report.maturity["correlation"][0] == 5
    assert report.maturity["decision"][0] == 5
    assert report.counts["series"] == report.counts["series_resolved"] > 0


def test_records_dated_far_outside_the_data_are_counted_and_named() -> None:
    # samples 1e9 .. 1e9+600 s; a log line dated 2099-01-01 (4,070,908,800) and a span from 1970 (t=5 s) are
    # stray clocks: the window stays on the samples, and check names both
    store = DuckStore(None)
    store.put_inventory(INV, "inventory.yaml")
    t = np.arange(1e9, 1e9 + 601, 60.0)
    store.add_samples(SeriesKey("DCGM_FI_DEV_GPU_TEMP", (("UUID", "GPU-11111111-2222-3333-4444-555555555555"),),
                                "gpu", "node-001/gpu0"), t, np.full(len(t), 50.0))
    store.add_events([Event(4070908800.0, "node-001", None, None, "xid", "Xid 13 far ahead", code=13,
                            source="kernel.log:7"),
                      Event(1e9 + 30, "node-001", None, None, "xid", "Xid 13 in the window", code=13,
                            source="kernel.log:3")])
    store.add_spans([Span("t", "s", None, "train_step", 5.0, 6.0, "job-a", 0, 1, None, None)])
    store.flush()
    assert store.time_range() == (1e9, 1e9 + 600)
    report = check(store, parse_inventory(INV))
    (line,) = [p for p in report.problems if "dated outside" in p]
    assert line.startswith("2 record(s) dated outside the data's window 2001-09-09T01:46:40Z .. 2001-09-09T01:56:40Z")
    assert "kernel.log:7 2099-01-01T00:00:00Z" in line and "span train_step of job-a at 1970-01-01T00:00:05Z" in line
    assert "in the window" not in line
