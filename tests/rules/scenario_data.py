"""Loading a public scenario's metrics into the in-memory store (through the real OpenMetrics parser)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from suanli.ingest.openmetrics_file import read_openmetrics
from suanli.ingest.records import IngestReport
from suanli.inventory import load_inventory
from suanli.timefmt import parse_time
from tests.rules.fakes import FakeStore


def load_scenario(folder: Path) -> tuple[Any, FakeStore, dict[str, Any], float, float]:
    inv = load_inventory(folder / "inventory.yaml")
    store = FakeStore()
    report = IngestReport()
    for key, ts, vs in read_openmetrics(folder / "metrics.om", inv.resolver, report):
        store.add_samples(key, ts, vs)
    truth = json.loads((folder / "truth.json").read_text(encoding="utf-8"))
    return inv, store, truth, parse_time(truth["window"]["start"]), parse_time(truth["window"]["end"])
