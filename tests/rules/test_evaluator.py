"""The evaluator against hand-worked timelines (eval every 15 s, samples on the eval times)."""

from __future__ import annotations

import numpy as np
import pytest

from suanli.ingest.records import Event
from suanli.rules import EntityIndex, Evaluator, parse_rules
from suanli.rules.alerts import alerts_timeline
from suanli.rules.evaluator import aligned_times
from tests.rules.fakes import FakeStore

GPU = "node-a/gpu0"
TEMP = "DCGM_FI_DEV_GPU_TEMP"


def _index() -> EntityIndex:
    return EntityIndex(gpus=[GPU, "node-a/gpu1"], nodes=["node-a"], nics=["node-a/mlx5_0"],
                       jobs=["job-1"], gpu_node={GPU: "node-a", "node-a/gpu1": "node-a"},
                       gpu_nic={GPU: "node-a/mlx5_0"}, nic_node={"node-a/mlx5_0": "node-a"},
                       job_gpus={"job-1": [GPU, "node-a/gpu1"]})


def _rules(conds: list[str], mode: str = "all", scope: str = "gpu", extra: str = "") -> str:
    lines = "\n".join(f"        - {c}" for c in conds)
    return (f"rules:\n  - name: r\n    scope: {scope}\n{extra}    conditions:\n      {mode}:\n{lines}\n"
            f"    actions: [drain_node, reschedule_job]\n")


def _run(text: str, store: FakeStore, start: float, end: float, values: dict[str, dict[str, float]] | None = None
         ) -> tuple[Evaluator, list]:
    ev = Evaluator(parse_rules(text), _index())
    return ev, ev.run(store, start, end, values)


def _temps(ts: list[float], vs: list[float]) -> FakeStore:
    s = FakeStore()
    s.add(TEMP, "gpu", GPU, ts, vs)
    return s


def test_for_pending_firing_resolved() -> None:
    # 80 at 0..45, 90 at 60..165, 80 from 180: pending at 60, 60 s later firing (120), resolved at 180
    ts = list(range(0, 301, 15))
    s = _temps(ts, [90.0 if 60 <= t <= 165 else 80.0 for t in ts])
    _, alerts = _run(_rules(["gpu_temp > 85 for 1m"]), s, 0, 300)
    assert [(a.active_at, a.fired_at, a.resolved_at, a.state) for a in alerts] == [(60, 120, 180, "resolved")]
    assert alerts[0].value == 90 and alerts[0].labels["gpu"] == GPU and alerts[0].labels["node"] == "node-a"
    assert [(p.action, p.target) for p in alerts[0].actions] == [("drain_node", "node-a"),
                                                                  ("reschedule_job", "job-1")]


def test_short_gap_holds_long_gap_breaks() -> None:
    # samples 90 at 0..60 then nothing until 600: the last sample counts while t - 60 < 300 (lookback),
    # so firing from 60 (for 1m) and resolved at 360, the first eval where 60 <= 360 - 300
    ts = [0, 15, 30, 45, 60, 600]
    _, alerts = _run(_rules(["gpu_temp > 85 for 1m"]), _temps(ts, [90] * 6), 0, 600)
    # the 600 sample starts a new alert, pending at the end (its 'for' is not served yet)
    assert [(a.active_at, a.fired_at, a.resolved_at, a.state) for a in alerts] == \
        [(0, 60, 360, "resolved"), (600, None, None, "pending")]


def test_nan_breaks_a_pending_alert() -> None:
    # 90 at 0..240 except NaN at 75: pending at 0 dropped at 75 (for 2m not served); new pending at 90
    # fires at 210 (90 + 120)
    ts = list(range(0, 241, 15))
    ev, alerts = _run(_rules(["gpu_temp > 85 for 2m"]), _temps(ts, [float("nan") if t == 75 else 90 for t in ts]), 0, 240)
    assert [(a.active_at, a.fired_at, a.state) for a in alerts] == [(90, 210, "firing")]
    assert ev.dropped_pending == 1


def test_rate_survives_a_counter_reset() -> None:
    # AER counter 0 until 60, +50 per 15 s from 75 (200/min), a restart at 150 (250 -> 50), +50 per 15 s on.
    # rate(x[1m])*60 at 90 = 100 (not > 100; the zero point stops extrapolation), at 105 = 150 -> fires at
    # 105; at 150 the reset adds 250 back: 50 - 150 + 250 = 150 over 45 s -> 200/min, still firing.
    ts = list(range(0, 241, 15))
    vals, v = [], 0.0
    for t in ts:
        if t == 150:
            v = 50.0
        elif t >= 75:
            v += 50
        vals.append(v)
    s = FakeStore()
    s.add("suanli_pcie_aer_errors_total", "gpu", GPU, ts, vals)
    _, alerts = _run(_rules(["pcie_aer_errors > 100/min"]), s, 0, 240)
    assert [(a.active_at, a.fired_at, a.resolved_at) for a in alerts] == [(105, 105, None)]


def test_keep_firing_for() -> None:
    # true 0..60 (for 0: firing at 0), false from 75: kept firing until 75 + 60 = 135, resolved there
    ts = list(range(0, 241, 15))
    text = _rules(["gpu_temp > 85"], extra="    keep_firing_for: 1m\n")
    _, alerts = _run(text, _temps(ts, [90 if t <= 60 else 80 for t in ts]), 0, 240)
    assert [(a.fired_at, a.resolved_at) for a in alerts] == [(0, 135)]


def test_per_condition_for_and_nic_metric_through_the_gpus_nic() -> None:
    # temp > 85 since 0 (held from 60); retransmits jump at 90 on the GPU's NIC: all true at 90 ->
    # pending and, both held, firing at 90 (a rule-level 'for: 1m' would fire at 150)
    ts = list(range(0, 241, 15))
    s = _temps(ts, [90] * len(ts))
    s.add("suanli_rdma_retransmits_total", "nic", "node-a/mlx5_0", ts, [0 if t < 90 else 1000.0 * (t - 75) for t in ts])
    _, alerts = _run(_rules(["gpu_temp > 85 for 1m", "rdma_retransmits > 10/s"]), s, 0, 240)
    assert [(a.entity_id, a.active_at, a.fired_at) for a in alerts] == [(GPU, 90, 90)]


def test_events_and_analysis_values() -> None:
    s = FakeStore()
    s.add_events([Event(ts=100.0, host="node-a", entity_kind="gpu", entity_id=GPU, kind="xid", message="79",
                        code=79),
                  Event(ts=100.0, host="node-a", entity_kind="gpu", entity_id=GPU, kind="xid", message="13",
                        code=13)])
    # xid(79) counts in (t - 1h, t]: first eval after 100 is 105, last one seeing it 3690; resolved 3705
    _, alerts = _run(_rules(["xid(79)"]), s, 0, 3720)
    assert [(a.entity_id, a.fired_at, a.resolved_at) for a in alerts] == [(GPU, 105, 3705)]
    _, node_alerts = _run(_rules(["xid(79) >= 1 within 10m"], scope="node"), s, 0, 120)
    assert [(a.entity_id, a.fired_at) for a in node_alerts] == [("node-a", 105)]
    _, none = _run(_rules(["xid(79) >= 2 within 10m"]), s, 0, 120)
    assert none == []
    _, hs = _run(_rules(["health_score < 0.6"]), FakeStore(), 0, 30, {"node-a/gpu1": {"health_score": 0.5},
                                                                      GPU: {"health_score": 0.9}})
    assert [(a.entity_id, a.fired_at) for a in hs] == [("node-a/gpu1", 0)]


def test_step_matches_batch_run() -> None:
    ts = list(range(0, 301, 15))
    s = _temps(ts, [90.0 if 60 <= t <= 165 else 80.0 for t in ts])
    text = _rules(["gpu_temp > 85 for 1m"])
    live = Evaluator(parse_rules(text), _index())
    for t in ts:
        live.step(float(t), s)
    _, batch = _run(text, s, 0, 300)
    assert [(a.active_at, a.fired_at, a.resolved_at) for a in live.alerts()] == \
        [(a.active_at, a.fired_at, a.resolved_at) for a in batch] == [(60, 120, 180)]
    rows = alerts_timeline(batch)
    assert rows[0]["entity_id"] == GPU and rows[0]["fired_at"] == 120


def test_any_mode_and_sudden_increase() -> None:
    # retransmits flat at 1/s for an hour, then 100/s: rate[5m] > 10 * rate[1h] offset 5m and > 1/s
    ts = np.arange(0, 4200.0, 15)
    vals = np.where(ts <= 3600, ts, 3600 + 100 * (ts - 3600))
    s = FakeStore()
    s.add("suanli_rdma_retransmits_total", "nic", "node-a/mlx5_0", ts, vals)
    _, alerts = _run(_rules(["sudden_increase(rdma_retransmits)", "gpu_temp > 200"], mode="any", scope="nic"),
                     s, 3495, 3630)
    # at 3615: rate[5m] over (3315, 3615]: increase 1500-... worked: samples 3330..3615, increase
    # (3600-3330) + 100*15 = 1770 over 285 s, extrapolated by 15 s -> 1770*300/285/300 = 6.2/s > 10*1, no;
    # at 3630: 3345..3630: 255 + 3000 = 3255 over 285 s -> 11.4/s > 10 * 1.0 and > 1: fires at 3630
    assert [(a.entity_id, a.fired_at) for a in alerts] == [("node-a/mlx5_0", 3630)]
    assert alerts[0].value == pytest.approx(3255 / 285, rel=1e-6)


def test_held_only_rules_leave_idle_spares_alone() -> None:
    # node-a/gpu0 is held by job-1, node-b/gpu0 is a spare; both read 0 % utilisation for 20 min.
    # A held_only rule fires on the held GPU only; the same rule without it fires on both.
    spare = "node-b/gpu0"
    index = EntityIndex(gpus=[GPU, spare], nodes=["node-a", "node-b"], jobs=["job-1"],
                        gpu_node={GPU: "node-a", spare: "node-b"}, job_gpus={"job-1": [GPU]})
    ts = list(range(0, 1201, 15))
    s = FakeStore()
    for g in (GPU, spare):
        s.add("DCGM_FI_DEV_GPU_UTIL", "gpu", g, ts, [0.0] * len(ts))
    held = _rules(["gpu_util < 10 for 10m"], extra="    held_only: true\n")
    assert {a.entity_id for a in Evaluator(parse_rules(held), index).run(s, 0, 1200) if a.fired_at} == {GPU}
    every = _rules(["gpu_util < 10 for 10m"])
    assert {a.entity_id for a in Evaluator(parse_rules(every), index).run(s, 0, 1200) if a.fired_at} == {GPU, spare}
    assert index.held("node") == ["node-a"]


@pytest.mark.parametrize(("scope", "value", "needle"), [("switch_port", "true", "applies to gpu and node"),
                                                        ("gpu", "yes", "true or false")])
def test_held_only_is_checked(scope: str, value: str, needle: str) -> None:
    with pytest.raises(Exception, match=needle):
        parse_rules(_rules(["gpu_util < 10 for 10m"], scope=scope, extra=f"    held_only: {value}\n"))


def test_evaluation_times_align_to_absolute_time() -> None:
    # Samples every 10 s from t=1003 (over 85 from 1063). Evaluated every 15 s on multiples of 15
    # since the epoch, the condition first holds at 1065 and the 1-minute 'for' is served at 1125,
    # whether the window opens at 1000, 1001 or 1007 (steps counted from the start would fire at
    # 1136 for 1001: pending at 1076; and 1127 for 1007: pending at 1067).
    ts = [1003.0 + 10 * k for k in range(30)]
    s = _temps(ts, [90.0 if t >= 1063 else 80.0 for t in ts])
    fired = set()
    for start in (1000.0, 1001.0, 1007.0):
        _, alerts = _run(_rules(["gpu_temp > 85 for 1m"]), s, start, 1300)
        fired |= {(a.active_at, a.fired_at) for a in alerts}
    assert fired == {(1065.0, 1125.0)}
    assert aligned_times(1001.0, 1046.0, 15.0).tolist() == [1005.0, 1020.0, 1035.0]
    assert aligned_times(1005.0, 1005.0, 15.0).tolist() == [1005.0]
