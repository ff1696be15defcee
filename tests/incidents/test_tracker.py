"""Incidents open, update and resolve over successive correlation passes."""

from __future__ import annotations

from suanli.incidents.model import Incident, Signal
from suanli.incidents.tracker import IncidentTracker, TrackerConfig


def _inc(start: float, root: str = "leaf-01/p3", cat: str = "switch_port_errors") -> Incident:
    return Incident(cat, "switch_port", root, 0.9, start, start + 30, None)


def test_open_update_resolve_reopen() -> None:
    tr = IncidentTracker(TrackerConfig(resolve_after_s=300, reopen_grace_s=600))
    assert [c for c, _ in tr.update(1000, [_inc(990)])] == ["opened"]
    assert [c for c, _ in tr.update(1060, [_inc(995)])] == ["updated"]
    assert len(tr.incidents()) == 1 and tr.incidents()[0].start == 990     # the earliest start stays
    assert tr.update(1200, []) == []                                       # 140 s unseen: still open
    changes = tr.update(1360, [])                                          # 300 s unseen: resolved
    assert [c for c, _ in changes] == ["resolved"]
    assert tr.incidents()[0].end == 1060 and tr.incidents()[0].state == "resolved"
    assert [c for c, _ in tr.update(1500, [_inc(1490)])] == ["reopened"]   # within 600 s of the end
    assert [h for _, h in tr.history("leaf-01/p3")] == ["opened", "updated", "resolved", "reopened"]


def test_a_new_fault_elsewhere_is_a_new_incident() -> None:
    tr = IncidentTracker()
    tr.update(1000, [_inc(990)])
    changes = tr.update(1010, [_inc(990), _inc(1000, root="node-003/gpu1", cat="gpu_thermal")])
    assert sorted(c for c, _ in changes) == ["opened", "updated"]
    assert len(tr.incidents()) == 2


def test_an_onset_placed_earlier_keeps_the_incident_and_its_id() -> None:
    """A later pass with more data places the onset 15 s earlier (the live twin's gpu_thermal run
    did: 11:01:31, then 11:01:16): still one incident, under the id it opened with."""
    tr = IncidentTracker()
    first = tr.update(1000, [_inc(990)])[0][1]
    opened_id = first.id
    what, again = tr.update(1030, [_inc(975)])[0]
    assert what == "updated" and again.id == opened_id and again.start == 975
    assert _inc(975).id != opened_id          # what an unpinned incident with that start would be called
    assert [i.id for i in tr.incidents()] == [opened_id]


def _weak(start: float, conf: float = 0.5) -> Incident:
    return Incident("switch_port_errors", "link", "leaf-04/p33~spine-01/p13", conf, start, start + 30, None)


def test_a_weak_incident_that_does_not_hold_never_opens() -> None:
    """The live demo's false alarm: latency alone named an uplink (confidence 0.5) 75 s before the
    port's counters crossed their bar; the next passes reported the port instead."""
    tr = IncidentTracker(TrackerConfig(confirm_below=0.6, confirm_s=120))
    assert tr.update(1000, [_weak(990)]) == []
    assert tr.update(1050, [_weak(990)]) == []            # 50 s of 120: still pending
    assert tr.update(1075, [_inc(1040, root="leaf-04/p36")])[0][0] == "opened"
    assert [i.root_id for i in tr.incidents()] == ["leaf-04/p36"]
    assert tr.history("leaf-04/p33~spine-01/p13") == []
    assert [c for c, _ in tr.update(1400, [])] == ["resolved"]       # only the port's, later


def test_a_weak_incident_that_holds_opens_with_its_first_start_and_id() -> None:
    tr = IncidentTracker(TrackerConfig(confirm_below=0.6, confirm_s=120))
    first_id = _weak(990).id
    tr.update(1000, [_weak(990)])
    tr.update(1060, [_weak(995)])
    (what, inc), = tr.update(1120, [_weak(985)])         # 120 s after it was first reported
    assert (what, inc.id, inc.start) == ("opened", first_id, 985)
    assert tr.history(inc.root_id) == [(1120, "opened")]


def test_a_weak_incident_that_grows_confident_opens_at_once() -> None:
    tr = IncidentTracker(TrackerConfig(confirm_below=0.6, confirm_s=120))
    tr.update(1000, [_weak(990)])
    assert [c for c, _ in tr.update(1010, [_weak(990, conf=0.9)])] == ["opened"]


def test_an_alert_on_the_root_opens_a_weak_incident_at_once() -> None:
    """An Alertmanager alert (which served its own `for`) is not an inference to confirm."""
    tr = IncidentTracker(TrackerConfig(confirm_below=0.6, confirm_s=120))
    inc = Incident("gpu_thermal", "gpu", "node-004/gpu1", 0.5, 990, 1000, None,
                   signals=[Signal("alertmanager", "GPUOverTemperature", "gpu", "node-004/gpu1", 990)])
    assert [c for c, _ in tr.update(1000, [inc])] == ["opened"]
