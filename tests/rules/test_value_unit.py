"""Every rule alert's value carries the unit a person reads it in (issue 14: evidence units)."""

from __future__ import annotations

import pytest

from suanli.incidents.signals import signals_from_alerts
from suanli.rules.alerts import Alert
from suanli.rules.conditions import parse_condition, value_unit


@pytest.mark.parametrize(("cond", "unit"), [
    ("gpu_temp > 85 for 5m", "°C"),
    ("DCGM_FI_DEV_GPU_TEMP > 85", "°C"),              # a raw metric name reads the same unit
    ("storage_latency > 0.02 for 5m", "s"),
    ("pcie_aer_errors > 100/min for 2m", "errors/min"),
    ("pcie_replay > 10/h", "replays/h"),
    ("sudden_increase(crc_errors)", "errors/s"),      # the recent rate, per second
    ("crc_ratio > 1e-6", "errors/packet"),
    ("xid(79) >= 1", "events"),
    ("health_score < 0.5", ""),                       # a score in [0, 1] has no unit
])
def test_value_unit(cond: str, unit: str) -> None:
    assert value_unit(parse_condition(cond)) == unit


def test_alert_evidence_line_names_the_unit() -> None:
    a = Alert(name="gpu_over_temperature", rule="gpu_over_temperature", scope="gpu", entity_kind="gpu",
              entity_id="node-002/gpu5", labels={}, state="firing", active_at=0.0, fired_at=300.0,
              value=90.0, unit="°C")
    (sig,) = signals_from_alerts([a])
    assert sig.evidence == ("rule gpu_over_temperature fired on node-002/gpu5 at 1970-01-01T00:05:00Z "
                            "(value 90 °C)",)
