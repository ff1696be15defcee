"""Incidents open, update and resolve over successive correlation passes."""

from __future__ import annotations

from suanli.incidents.model import Incident
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
