"""History-based escalation, attribution, deduplication and the posteriors, by hand."""

from __future__ import annotations

import math

import pytest

from suanli.analysis.decisions import (
    AllowedAction,
    Capacity,
    DecisionConfig,
    IncidentFacts,
    JobFacts,
    Plan,
    Suspect,
    decide,
    merge_resets,
    supersede,
)
from suanli.analysis.decisions.posterior import beta_mean, survived
from suanli.store.history import History, IncidentRecord, RemediationRecord

GPU = "node-007/gpu3"
HOUR = 3600.0
DAY = 86400.0
NOW = 1_800_000_000.0
ALLOWED = (AllowedAction("retire_gpu", GPU), AllowedAction("reschedule_job", "llama"),
           AllowedAction("open_ticket", GPU))


def _facts(history: History, category: str = "gpu_memory_failure", code: str | None = "xid:48",
           asks: bool = True, allowed: tuple[AllowedAction, ...] = ALLOWED) -> IncidentFacts:
    job = JobFacts("llama", 64, 2.0, 1.0, 1.0, False, 300.0, 1800.0, 300.0, False, 8)
    return IncidentFacts("inc-now", category, "gpu", GPU, NOW - 60, NOW, allowed, (job,),
                         Suspect(GPU, "GPU-1", (), ("node-007",), 8), Capacity(spare_gpus=8), code, asks, "USD",
                         history)


def _inc(i: int, t: float, entity: str = GPU, category: str = "gpu_memory_failure", code: str | None = "xid:48",
         end: float | None = None) -> IncidentRecord:
    return IncidentRecord(f"inc-{i}", "gpu", entity, category, t, end, code, entity.split("/")[0], ("llama",))


def test_the_third_failure_within_24_h_escalates_to_retirement() -> None:
    hist = History((_inc(1, NOW - 20 * HOUR), _inc(2, NOW - 5 * HOUR)))
    d = decide(_facts(hist))
    assert d.escalation is not None and d.escalation.level == "retire" and d.escalation.points_at == "gpu"
    assert d.chosen is not None and d.chosen.allowed.action == "retire_gpu" and d.chosen.escalated
    assert d.ranked[0].allowed.action == "retire_gpu"
    assert any(line.startswith(f"history: {GPU} had 2 earlier incident(s) within 24 h") for line in d.evidence)
    assert any(line.startswith("escalation:") and "3 times within 24 h" in line for line in d.evidence)


def test_the_second_failure_does_not_escalate() -> None:
    d = decide(_facts(History((_inc(1, NOW - 5 * HOUR),))))
    assert d.escalation is None


def test_repeats_spread_over_a_month_do_not_escalate() -> None:
    hist = History((_inc(1, NOW - 29 * DAY), _inc(2, NOW - 19 * DAY), _inc(3, NOW - 9 * DAY)))
    d = decide(_facts(hist))
    assert d.escalation is None
    assert not any(line.startswith(f"history: {GPU} had") for line in d.evidence)


def test_a_reset_asking_xid_after_two_reboots_goes_to_hardware_inspection() -> None:
    # Xid 48 asks for a GPU reset (NVIDIA's catalogue). Two resets already: a node reboot and, later, a GPU reset.
    rems = (RemediationRecord("node", "node-007", "reboot_node", NOW - 3 * DAY),
            RemediationRecord("gpu", GPU, "reset_gpu", NOW - 1 * DAY, node="node-007"))
    d = decide(_facts(History((), rems)))
    assert d.escalation is not None and d.escalation.level == "inspect"
    assert any("history: 2 reset(s)/reboot(s)" in line for line in d.evidence)
    one = decide(_facts(History((), rems[1:])))
    assert one.escalation is None


def test_a_reboot_and_a_reset_minutes_apart_count_once() -> None:
    # The reset at t and the reboot of its node 5 min later are one remediation (10 min merge); a dry run is none.
    rems = (RemediationRecord("gpu", GPU, "reset_gpu", NOW - DAY, node="node-007"),
            RemediationRecord("node", "node-007", "reboot_node", NOW - DAY + 300),
            RemediationRecord("gpu", GPU, "reset_gpu", NOW - HOUR, executed=False))
    merged = merge_resets(rems, GPU, 600.0)
    assert [r.kind for r in merged] == ["reboot_node"]
    assert decide(_facts(History((), rems))).escalation is None


def test_the_same_code_on_many_gpus_points_at_software_and_moving_the_job_fixes_nothing() -> None:
    # Xid 13 on 3 different GPUs within the day, none twice: software. A restart elsewhere would meet it again,
    # so excluding the GPU is costed as fixing nothing and is not chosen over staying.
    hist = History(tuple(_inc(i, NOW - i * HOUR, f"node-00{i}/gpu0", "gpu_straggler", "xid:13") for i in (1, 2)))
    d = decide(_facts(hist, "gpu_straggler", "xid:13", asks=False))
    assert any("points at software" in line for line in d.evidence)
    retire = next(r for r in d.ranked if r.allowed.action == "retire_gpu")
    assert retire.best.expected_cost > d.stay_cost
    assert d.chosen is None


def test_an_escalation_the_pack_does_not_allow_is_said_not_invented() -> None:
    hist = History((_inc(1, NOW - 20 * HOUR), _inc(2, NOW - 5 * HOUR)))
    d = decide(_facts(hist, allowed=(AllowedAction("reschedule_job", "llama"),)))
    assert {r.allowed.action for r in d.ranked} == {"reschedule_job"}
    assert any("the rule pack allows none of retire_gpu, drain_node, open_ticket" in line for line in d.evidence)


def test_a_node_reboot_supersedes_a_gpu_reset_on_that_node() -> None:
    reset = Plan("reset_gpu", GPU, "node-007", GPU, "gpu")
    reboot = Plan("reboot_node", "node-007", "node-007")
    other = Plan("reset_gpu", "node-008/gpu0", "node-008", "node-008/gpu0", "gpu")
    retire = Plan("retire_gpu", "node-008/gpu0", "node-008", "node-008/gpu0", "gpu")
    kept, dropped = supersede([reset, reboot, reboot, other, retire])
    assert kept == [reboot, retire]
    assert dropped == [(reset, reboot), (other, retire)]


def test_beta_binomial_posterior_by_hand() -> None:
    # Prior Beta(3, 2), 1 success in 4: (3 + 1) / (3 + 2 + 4) = 4/9.
    assert beta_mean((3.0, 2.0), 1, 4) == pytest.approx(4 / 9)
    # P(clears) 0.6 a priori, 15 min already, mean episode 15 min: 0.6 e^-1 / (0.6 e^-1 + 0.4) = 0.3556.
    assert survived(0.6, 900.0, 900.0) == pytest.approx(0.6 * math.exp(-1) / (0.6 * math.exp(-1) + 0.4))


def test_clearing_is_learnt_from_the_clusters_own_incidents() -> None:
    # gpu_thermal prior Beta(3, 2). History: 4 ended thermal incidents, one cleared alone (10 min), three had a
    # drain during them: (3 + 1) / (5 + 4) = 0.444; the mean episode shrinks (900 + 600) / 2 = 750 s.
    incs = tuple(_inc(i, NOW - i * DAY, f"node-00{i}/gpu1", "gpu_thermal", None, NOW - i * DAY + 600)
                 for i in range(1, 5))
    rems = tuple(RemediationRecord("node", f"node-00{i}", "drain_node", NOW - i * DAY + 60) for i in range(2, 5))
    f = _facts(History(incs, rems), "gpu_thermal", None, False)
    d = decide(f, DecisionConfig())
    p = 4 / 9
    assert d.probabilities.clear_mean_s == pytest.approx(750.0)
    assert d.probabilities.clear == pytest.approx(survived(p, 60.0, 750.0))
    assert any("1 of 4 past gpu_thermal incidents cleared with no action" in line for line in d.evidence)


def test_resets_that_held_raise_the_reset_posterior() -> None:
    # gpu_memory_failure reset prior Beta(3, 2). Two resets more than a day ago, one followed by the same fault on
    # that GPU within 24 h: (3 + 1) / (5 + 2) = 4/7.
    incs = (_inc(1, NOW - 5 * DAY, "node-001/gpu0"), _inc(2, NOW - 3 * DAY, "node-002/gpu0"),
            _inc(3, NOW - 3 * DAY + 3 * HOUR, "node-002/gpu0"))
    rems = (RemediationRecord("gpu", "node-001/gpu0", "reset_gpu", NOW - 5 * DAY + 60, incident_id="inc-1"),
            RemediationRecord("gpu", "node-002/gpu0", "reset_gpu", NOW - 3 * DAY + 60, incident_id="inc-2"))
    d = decide(_facts(History(incs, rems), code=None, asks=False))
    assert d.probabilities.reset_fix == pytest.approx(4 / 7)
