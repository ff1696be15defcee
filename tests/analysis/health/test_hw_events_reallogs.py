"""Real Xid / AER kernel lines, through the log parser, land in the categories NVIDIA's catalogue
implies (catalogue descriptions read from realdata/xid-catalog, not from our table)."""

from __future__ import annotations

import csv

import pytest

from suanli.analysis.health.events import xid_category, xid_meaning
from suanli.ingest.records import IngestReport
from tests.conftest import shared_path


def _catalogue() -> dict[int, str]:
    path = shared_path("realdata", "xid-catalog", "nvidia-xid-catalog.csv")
    with path.open() as f:
        return {int(r["Code"]): r["Description"] for r in csv.DictReader(f) if r["Code"].isdigit()}


def _expected(description: str) -> str | None:
    d = description.lower()
    if "fallen off the bus" in d or d.startswith("gsp"):
        return "gpu_lost"
    if "nvlink" in d:
        return "nvlink_degradation"
    if "single-bit" in d:
        return "gpu_memory_degradation"
    if "double bit" in d or "memory" in d:
        return "gpu_memory_failure"
    return None


def _events(folder: str, name: str) -> list:  # type: ignore[type-arg]
    from suanli.ingest import logs

    return list(logs.read_log(shared_path("realdata", "logs", folder, name), None, IngestReport()))


@pytest.mark.parametrize(("folder", "name", "codes"), [
    ("kernel", "gpud-pr1174-kmsg-xid149-145-94.log", {149, 145, 94}),
    ("kernel", "nvsentinel-155-fallen-off-bus-no-xid.log", {79}),
    ("gpud", "components__accelerator__nvidia__xid__testdata__dmesg-with-xid-119.log", {119}),
    ("gpud", "sxid-README-xid79-sxid20034-example.log", {79}),
    ("kernel", "gpud-pr46-dmesg-xid13-xid109-peermem.log", {13, 109}),
])
def test_real_xid_lines_classified_per_catalogue(folder: str, name: str, codes: set[int]) -> None:
    cat = _catalogue()
    events = [e for e in _events(folder, name) if e.kind == "xid"]
    assert {e.code for e in events} == codes
    for e in events:
        assert xid_category(e.code) == _expected(cat[e.code]), (e.code, cat[e.code])
        assert xid_meaning(e.code).lower() == cat[e.code].lower()


@pytest.mark.parametrize("name", ["popos-3363-aer-correctable.log", "returnn-1500-aer-fatal-nvidia-gpu.log"])
def test_real_aer_lines_are_aer_events(name: str) -> None:
    aer = [e for e in _events("kernel", name) if e.kind == "aer"]
    assert aer, name
    assert all(xid_category(e.code or 0) is None for e in aer)
