"""The RCA's data comes from the pipeline (pipeline/rca.py) and the report only renders it; its
latency heatmap is the very figure ``diagnose --heatmap`` draws (latency / baseline)."""

from __future__ import annotations

import numpy as np

from suanli.report.heatmap import figure
from suanli.report.rca import plot_text, render_rca, script_json
from tests.report.rca_cases import scenario_rca


def test_the_riser_report_shows_the_suspect_and_the_same_heatmap() -> None:
    data, diag, _ = scenario_rca("pcie_riser")
    # the scenario's fault: one GPU hot, with PCIe AER errors and replays
    assert data.suspect is not None and (data.suspect.category, data.suspect.root_id) == ("pcie_riser", "node-002/gpu5")
    panels = {p.metric: p.per_second for p in data.hardware}
    assert panels["DCGM_FI_DEV_GPU_TEMP"] is False
    assert panels["suanli_pcie_aer_errors_total"] is True and panels["DCGM_FI_DEV_PCIE_REPLAY_COUNTER"] is True
    assert data.phases is not None and set(data.phases.phase_median_s) <= {"data_load", "forward", "backward",
                                                                         "allreduce", "optimizer"}
    assert diag.results.fabric is not None and data.heatmap is diag.results.fabric.heatmap
    html = render_rca(data)
    assert script_json(plot_text(figure(data.heatmap)[0])) in html   # the --heatmap figure, cell for cell
    assert "worst in window" not in html


def test_the_port_report_plots_the_symptom_on_the_nic_behind_it() -> None:
    # switch_port_errors: leaf-02/p16 corrupts frames; the NIC cabled to it (node-008/mlx5_3) retransmits
    data, _, inv = scenario_rca("switch_port_errors")
    assert data.suspect is not None and data.suspect.root_id == "leaf-02/p16"
    own = [p for p in data.hardware if not p.symptom]
    assert {p.metric for p in own} == {"suanli_switch_port_crc_errors_total", "suanli_port_pre_fec_ber"}
    (sym,) = [p for p in data.hardware if p.symptom]
    assert (sym.metric, sym.entity, sym.per_second) == ("suanli_rdma_retransmits_total",
                                                         "symptom on node-008/mlx5_3", True)
    assert inv.nics["node-008/mlx5_3"].switch_port == "leaf-02/p16"
    (line,) = sym.lines
    after = line.values[(line.ts >= data.suspect.start) & np.isfinite(line.values)]
    assert sym.band is not None and after.max() > 100 * max(sym.band[1], 1e-3)
    assert "symptom on node-008/mlx5_3: RDMA retransmits" in render_rca(data)
