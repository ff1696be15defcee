"""Xid evidence beyond the kernel's Xid lines (issue 12 item 4): dcgm-exporter's per-Xid series,
the last-code-only ``DCGM_FI_DEV_XID_ERRORS``, a linked Xid 45, and a fatal AER of the port above
a GPU as evidence that the GPU fell off the bus."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from suanli.analysis.health.events import XID_ACTIVE, XID_COUNT, XID_ERRORS, dcgm_xid_events, hw_event
from suanli.analysis.health.inputs import collect
from suanli.analysis.window import Window
from suanli.config import Config
from suanli.ingest.load import load_paths
from suanli.ingest.logs import LogConfig, read_log
from suanli.ingest.records import IngestReport
from suanli.inventory import load_inventory, parse_inventory
from suanli.pipeline.batch import diagnose
from suanli.pipeline.inputs import Inputs, load_rules
from suanli.report.json_doc import diagnosis_json
from suanli.store.duck import DuckStore
from tests.conftest import shared_path


def _labels(**kv: str):  # type: ignore[no-untyped-def]
    return kv.get


def test_last_code_series_counts_changes_only() -> None:
    # DCGM_FI_DEV_XID_ERRORS holds the last code: 31 already there at the first sample may be old;
    # 31 -> 13 is one new Xid 13, 13 -> 13 nothing, 13 -> 0 nothing
    ts = np.array([0.0, 15.0, 30.0, 45.0, 60.0])
    got = dcgm_xid_events(XID_ERRORS, _labels(), "n/gpu0", ts, np.array([31.0, 31.0, 13.0, 13.0, 0.0]))
    assert [(e.ts, e.code, e.count, e.source) for e in got] == [(30.0, 13, 1.0, "dcgm")]


def test_per_code_count_series_counts_each_rise() -> None:
    # DCGM_EXP_XID_ERRORS_COUNT{err_code="79"} over the exporter's window: 0, 2, 2, 3, 1 is 2 Xids
    # at 15 s and one more at 45 s (the drop to 1 is old ones leaving the window)
    ts = np.array([0.0, 15.0, 30.0, 45.0, 60.0])
    got = dcgm_xid_events(XID_COUNT, _labels(err_code="79", err_msg="GPU has fallen off the bus"), "n/gpu0", ts,
                          np.array([0.0, 2.0, 2.0, 3.0, 1.0]))
    assert [(e.ts, e.code, e.count, e.severity) for e in got] == [(15.0, 79, 2.0, "fatal"), (45.0, 79, 1.0, "fatal")]


def test_xid_errors_active_of_dcgm_exporter_pr239(tmp_path: Path) -> None:
    # the PR's output: DCGM_FI_DEV_XID_ERRORS_ACTIVE{...,Hostname="workstation",...,xid="42"} 1
    path = shared_path("realdata", "third-party", "metrics", "dcgm-pr239-xid-errors-active-t400.prom")
    uuid = re.search(r'UUID="([^"]+)"', path.read_text()).group(1)  # type: ignore[union-attr]
    inv_path = tmp_path / "inventory.yaml"
    inv_path.write_text(f"cluster: t\nracks:\n  - id: r\n    nodes:\n      - id: workstation\n        gpus:\n"
                        f"          - {{index: 0, uuid: {uuid}}}\n")
    store = DuckStore(None)
    load_paths([inv_path, path], store)
    extent = store.time_range()
    assert extent is not None
    data = collect(store, load_inventory(inv_path), Window(extent[0], extent[1]))
    xids = [(e.code, e.count, e.source) for e in data["workstation/gpu0"].events if e.kind == "xid"]
    assert xids == [(42, 1.0, "dcgm")]
    assert dcgm_xid_events(XID_ACTIVE, _labels(xid="42"), "g", np.array([0.0, 1.0, 2.0]),
                           np.array([1.0, 1.0, 0.0]))[0].count == 1.0     # stays 1: one Xid, not two


def test_linked_xid45_names_its_cause() -> None:
    inv = parse_inventory("cluster: t\nracks:\n  - id: r\n    nodes:\n      - id: h\n        gpus:\n"
                          "          - {index: 0, uuid: GPU-0, pci_bus_id: \"0000:dc:00.0\"}\n")
    path = shared_path("realdata", "third-party", "logs", "ogkm-1150-xid45-caused-by-xid149-145.log")
    evs = [e for e in read_log(path, inv.resolver, IngestReport(), LogConfig(default_host="h"))
           if e.entity_id == "h/gpu0"]
    assert len(evs) == 2                                  # the two dc:00 lines
    meaning = hw_event(evs[0], "h/gpu0").meaning
    # NVIDIA's catalogue (realdata/xid-catalog): 45 "Preemptive cleanup, due to previous errors ...",
    # 149 "NVLINK: NETIR Error"
    assert meaning.startswith("Preemptive cleanup, due to previous errors")
    assert meaning.endswith(", caused by previous Xid 149 (NVLINK: NETIR Error)")


def _stamped(lines: list[str], t0: str) -> str:
    """returnn-1500's lines with their ``[  +0.000844]`` deltas turned into short-iso stamps from ``t0``."""
    from datetime import datetime, timedelta

    at = datetime.fromisoformat(t0)
    out = []
    for line in lines:
        delta, msg = line.split("] ", 1)
        at += timedelta(seconds=float(delta.strip("[ +")))
        out.append(f"{at.isoformat(timespec='microseconds')} h kernel: {msg}")
    return "\n".join(out) + "\n"


def test_fatal_aer_before_xid79_is_evidence_of_the_lost_gpu(tmp_path: Path) -> None:
    # returnn-1500's real AER burst ([ 5] SDES = Surprise Down Error Status, [14] CmpltTO) from the
    # root port 0000:00:03.0 above the GPU at 0000:03:00.0, stamped in short-iso from 02:14:58;
    # then the spec's Xid 79 line for that GPU five seconds later. No public file has both.
    src = shared_path("realdata", "logs", "kernel", "returnn-1500-aer-fatal-nvidia-gpu.log").read_text().splitlines()
    log = _stamped(src, "2026-03-15T02:14:58.000000+00:00")
    log += ("2026-03-15T02:15:03.123456+00:00 h kernel: NVRM: Xid (PCI:0000:03:00): 79, pid=1234, name=python, "
            "GPU has fallen off the bus.\n")
    (tmp_path / "kernel.log").write_text(log)
    (tmp_path / "inventory.yaml").write_text(
        "cluster: t\nracks:\n  - id: r\n    nodes:\n      - id: h\n        gpus:\n"
        "          - {index: 0, uuid: GPU-0, pci_bus_id: \"00000000:03:00.0\"}\n")
    store = DuckStore(None)
    load_paths([tmp_path / "inventory.yaml", tmp_path / "kernel.log"], store)
    diag = diagnose(store, load_inventory(tmp_path / "inventory.yaml"), None, Config(), Inputs(load_rules(None)))
    incs = diagnosis_json(diag)["incidents"]
    assert [(i["category"], i["root_cause"]["id"]) for i in incs] == [("gpu_lost", "h/gpu0")]
    aer = [e for e in incs[0]["evidence"] if "fatal PCIe AER (SDES, CmpltTO)" in e]
    # the port's report is 0.000845 s after the first line: 5.12 s before the Xid 79
    assert len(aer) == 1 and " 5 s before it was lost" in aer[0]
