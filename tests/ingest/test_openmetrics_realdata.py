"""Real dcgm-exporter output (shared/realdata/dcgm) parses and resolves to GPUs."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from suanli.ingest.openmetrics_file import read_openmetrics
from suanli.ingest.records import IngestReport, SeriesKey
from suanli.inventory import parse_inventory
from tests.conftest import shared_path

ISSUE_FILES = ["issue250-v100x4-excerpt.prom", "issue317-a30-mig-excerpt.prom",
               "issue512-h100-mig-excerpt.prom", "issue736-ada-a30-mixed-excerpt.prom"]
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def _inventory_for(path: Path) -> tuple[str, set[str]]:
    """An inventory.yaml built from the file's own labels: one node per host, one GPU per UUID."""
    gpus: dict[str, dict[str, tuple[int, str | None]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("DCGM_"):
            continue
        labels = dict(_LABEL.findall(line))
        host = labels.get("Hostname") or labels.get("hostname") or "host-0"
        gpus.setdefault(host, {})[labels["UUID"]] = (int(labels["gpu"]), labels.get("pci_bus_id"))
    lines = ["cluster: real", "racks:", "  - id: rack-01", "    nodes:"]
    for host, by_uuid in gpus.items():
        lines += [f"      - id: {host}", "        gpus:"]
        for uuid, (index, bus) in by_uuid.items():
            bus_text = f', pci_bus_id: "{bus}"' if bus else ""
            lines.append(f"          - {{index: {index}, uuid: {uuid}{bus_text}}}")
    uuids = {u for by in gpus.values() for u in by}
    return "\n".join(lines) + "\n", uuids


def _load(path: Path) -> tuple[list[tuple[SeriesKey, list[float]]], IngestReport, set[str]]:
    text, uuids = _inventory_for(path)
    inv = parse_inventory(text, source=f"{path.name}-inventory")
    rep = IngestReport()
    got = [(k, v.tolist()) for k, _, v in read_openmetrics(path, inv.resolver, rep, arrival_ts=1.0)]
    return got, rep, uuids


@pytest.mark.parametrize("name", ISSUE_FILES)
def test_real_dcgm_exporter_output_resolves_to_gpus(name: str) -> None:
    path = shared_path("realdata", "dcgm", name)
    got, rep, uuids = _load(path)
    assert rep.rejected == 0, rep.reasons
    n_lines = sum(1 for ln in path.read_text(encoding="utf-8").splitlines() if ln.startswith("DCGM_"))
    assert sum(len(v) for _, v in got) == n_lines
    assert all(k.entity_kind == "gpu" for k, _ in got)
    # each distinct UUID of the file is one GPU of the inventory built from it
    assert len({k.entity_id for k, _ in got}) == len(uuids)


def test_issue250_values_are_read_as_printed() -> None:
    got, _, _ = _load(shared_path("realdata", "dcgm", "issue250-v100x4-excerpt.prom"))
    by = {(k.metric, k.label("gpu")): v for k, v in got}
    assert by[("DCGM_FI_DEV_SM_CLOCK", "0")] == [135.0]
    assert by[("DCGM_FI_DEV_POWER_MGMT_LIMIT", "2")] == [300.0]     # printed "300.000000"


def test_readme_snippet_sentinel_is_nan_and_prose_is_rejected() -> None:
    path = shared_path("realdata", "dcgm", "readme-metrics-snippet.prom")
    rep = IngestReport()
    got = {k.metric: v.tolist() for k, _, v in read_openmetrics(path, None, rep, arrival_ts=1.0)}
    # MEMORY_TEMP 9223372036854775794 is DCGM's int64 blank: no reading, not a temperature
    assert math.isnan(got["DCGM_FI_DEV_MEMORY_TEMP"][0])
    assert got["DCGM_FI_DEV_SM_CLOCK"] == [139.0]
    assert got["DCGM_FI_DEV_MEM_CLOCK"] == [405.0]
    # the README's prose, shell and "..." lines are not metrics: counted, never fatal
    assert rep.rejected > 0
