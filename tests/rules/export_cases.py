"""The rule set both export-equivalence tests run (promtool's rule tests in tests/rules/test_export.py,
vmalert's replay over a backfilled Prometheus in tests/backends/test_rules_replay.py): one threshold
with ``for``, a conjunction, a rate and a sudden increase, each over one metric."""

from __future__ import annotations

from suanli.rules import RulesConfig

RULES = """rules:
  - name: gpu_hot
    scope: gpu
    severity: warning
    conditions:
      all:
        - gpu_temp > 87 for 2m
  - name: gpu_hot_and_busy
    scope: gpu
    conditions:
      all:
        - gpu_temp > 80 for 1m
        - gpu_util > 50 for 1m
  - name: aer_storm
    scope: gpu
    conditions:
      all:
        - pcie_aer_errors > 100/min for 1m
  - name: retx_jump
    scope: nic
    conditions:
      all:
        - sudden_increase(rdma_retransmits, 5)
"""
STEP_S = 15.0
"""The evaluation interval of both engines (the exported group's)."""
METRIC_OF = {"gpu_hot": "DCGM_FI_DEV_GPU_TEMP", "gpu_hot_and_busy": "DCGM_FI_DEV_GPU_TEMP",
             "aer_storm": "suanli_pcie_aer_errors_total", "retx_jump": "suanli_rdma_retransmits_total"}
"""The metric whose series names each rule's entity."""


def prometheus_2x_config() -> RulesConfig:
    """Prometheus 2.x range edges, and sudden-increase windows short enough for a 15 min window."""
    return RulesConfig(promql_v2=True, sudden_baseline_s=600, sudden_short_s=120)
