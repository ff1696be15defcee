"""The terminal report read as a person reads it: at 80 and 120 columns, with hostile text from
telemetry, an empty window, and alerts no incident explains (issue 14)."""

from __future__ import annotations

import dataclasses

import pytest
from rich.console import Console

from suanli.incidents.model import Incident, Signal
from suanli.pipeline import Diagnosis, diagnose_folder
from suanli.report.terminal import cost_per_eflop, print_diagnosis
from tests.conftest import shared_path


@pytest.fixture(scope="module")
def switch_port() -> Diagnosis:
    return diagnose_folder(shared_path("scenarios", "switch_port_errors"))


def _render(diag: Diagnosis, width: int) -> str:
    # a default Console: markup and emoji on, as any caller's might be
    con = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    print_diagnosis(con, diag)
    return con.export_text()


@pytest.mark.parametrize("width", [80, 120])
def test_no_cell_is_cut_and_evidence_comes_first(switch_port: Diagnosis, width: int) -> None:
    text = _render(switch_port, width)
    assert "…" not in text
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines if not line.startswith("    ")), \
        [line for line in lines if len(line) > width]
    head = lines.index(next(line for line in lines if line.startswith("inc-")))
    # the first line under the incident's name is its evidence, then where and what it cost
    assert "leaf-02/p16 CRC error ratio" in lines[head + 1]
    assert any(line.strip() == "root cause  switch_port leaf-02/p16" for line in lines[head:])
    assert "llama-34b-continual" in text


def test_cost_reads_in_dollars_per_eflop() -> None:
    # $0.002869 per PFLOP = $2.869 per EFLOP (1 EFLOP = 1,000 PFLOP)
    assert cost_per_eflop(0.002869) == "$2.87"
    assert cost_per_eflop(None) == "-"
    assert cost_per_eflop(float("nan")) == "-"


def test_text_from_telemetry_is_never_markup_or_emoji(switch_port: Diagnosis) -> None:
    hostile = "node-[red]x[/red]/gpu0 :fire: 00000000:AB:00.0"
    inc = dataclasses.replace(switch_port.incidents[0], evidence=[hostile])
    sig = Signal("rule", "[bold]gpu_hot[/bold]", "gpu", "node-:AB:/gpu1", switch_port.window.start)
    diag = dataclasses.replace(switch_port, incidents=[inc], unexplained=[sig])
    text = _render(diag, 120)
    assert hostile in text
    assert "[bold]gpu_hot[/bold] on node-:AB:/gpu1" in text
    assert "🔥" not in text and "🆎" not in text


def test_an_empty_window_says_no_data_not_nothing_broken() -> None:
    # data of 2026 looked at in a 2020 window
    from suanli.analysis.window import Window as W
    from suanli.config import Config
    from suanli.pipeline import open_folder, stored_inventory
    from suanli.pipeline.batch import diagnose

    store = open_folder(shared_path("scenarios", "pcie_riser"), Config())
    try:
        diag = diagnose(store, stored_inventory(store), W(1577836800.0, 1577840400.0))
    finally:
        store.close()
    assert not diag.has_data
    text = _render(diag, 120)
    assert "no data in this window" in text
    assert "nothing is broken" not in text and "MFU" not in text


def test_unexplained_alerts_are_counted_and_named(switch_port: Diagnosis) -> None:
    t = switch_port.window.start
    loose = [Signal("rule", "gpu_over_temperature", "gpu", f"node-001/gpu{i}", t + i) for i in range(3)]
    loose.append(Signal("rule", "nic_link_flap", "nic", "node-002/mlx5_0", t))
    diag = dataclasses.replace(switch_port, unexplained=loose)
    text = _render(diag, 120)
    folded = sum(i.alert_count for i in switch_port.incidents)
    assert f"alerts: {folded + 4} in all; {folded} folded into 1 incident(s), 4 that no incident explains" in text
    assert "unexplained: gpu_over_temperature on 3 gpus, first node-001/gpu0" in text
    assert "unexplained: nic_link_flap on node-002/mlx5_0" in text


def test_an_incident_without_jobs_or_evidence_still_reads(switch_port: Diagnosis) -> None:
    bare = Incident("gpu_thermal", "gpu", "node-003/gpu2", 0.4, switch_port.window.start, None, None)
    diag = dataclasses.replace(switch_port, incidents=[bare], unexplained=[])
    text = _render(diag, 80)
    assert "gpu_thermal" in text and "root cause  gpu node-003/gpu2" in text and "jobs        -" in text

