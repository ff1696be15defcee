"""Incident and remediation history in a real DuckDB file: idempotent, survives reopening."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from suanli.store.duck import DuckStore
from suanli.store.history import (
    IncidentRecord,
    RemediationRecord,
    ensure_history,
    load_history,
    record_incident,
    record_remediation,
)

T = 1_770_000_000.0


def test_tables_are_created_once_and_survive_reopen(tmp_path: Path) -> None:
    path = tmp_path / "h.duckdb"
    con = duckdb.connect(str(path))
    ensure_history(con)
    ensure_history(con)
    record_incident(con, IncidentRecord("inc-a", "gpu", "node-001/gpu0", "gpu_thermal", T, None, None,
                                        "node-001", ("llama", "gpt")))
    assert record_remediation(con, RemediationRecord("gpu", "node-001/gpu0", "reset_gpu", T + 60, "node-001",
                                                     "inc-a", "gpu_thermal"))
    con.close()
    con = duckdb.connect(str(path))
    ensure_history(con)                                   # reopening and re-ensuring keeps the rows
    h = load_history(con, T - 1)
    assert [i.incident_id for i in h.incidents] == ["inc-a"]
    assert h.incidents[0].jobs == ("llama", "gpt") and h.incidents[0].end_s is None
    assert [(r.kind, r.time_s, r.incident_id) for r in h.remediations] == [("reset_gpu", T + 60, "inc-a")]
    con.close()


def test_an_incident_recorded_again_is_updated_and_a_remediation_again_is_ignored(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "h.duckdb"))
    rec = IncidentRecord("inc-a", "gpu", "node-001/gpu0", "gpu_lost", T, None, "xid:79", "node-001")
    record_incident(con, rec)
    record_incident(con, IncidentRecord(**{**rec.__dict__, "end_s": T + 900}))
    rem = RemediationRecord("node", "node-001", "reboot_node", T + 100)
    assert record_remediation(con, rem) is True
    assert record_remediation(con, rem) is False
    h = load_history(con, 0.0)
    assert [(i.incident_id, i.end_s, i.code) for i in h.incidents] == [("inc-a", T + 900, "xid:79")]
    assert len(h.remediations) == 1
    assert con.execute("SELECT count(*) FROM history_remediations").fetchone() == (1,)


def test_load_filters_by_time_and_category(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "h.duckdb"))
    for i, (cat, t) in enumerate([("gpu_thermal", T - 40 * 86400), ("gpu_thermal", T), ("oom", T + 10)]):
        record_incident(con, IncidentRecord(f"inc-{i}", "gpu", "node-001/gpu0", cat, t))
    record_remediation(con, RemediationRecord("gpu", "node-001/gpu0", "reset_gpu", T - 40 * 86400))
    h = load_history(con, T - 30 * 86400, categories=["gpu_thermal"])
    assert [i.incident_id for i in h.incidents] == ["inc-1"]
    assert h.remediations == ()
    assert [i.incident_id for i in load_history(con, 0.0, T).incidents] == ["inc-0", "inc-1"]


def test_history_lives_beside_the_stores_own_tables(tmp_path: Path) -> None:
    path = tmp_path / "suanli.duckdb"
    store = DuckStore(path)
    record_incident(store.con, IncidentRecord("inc-a", "nic", "node-002/mlx5_0", "nic_down", T))
    store.close()
    store = DuckStore(path)
    assert [i.entity_id for i in load_history(store.con, 0.0).incidents] == ["node-002/mlx5_0"]
    assert store.time_range() is None                     # history rows are not telemetry
    store.close()


def test_a_non_finite_time_is_refused(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "h.duckdb"))
    with pytest.raises(ValueError, match="finite"):
        record_incident(con, IncidentRecord("inc-a", "gpu", "g", "oom", float("nan")))
    with pytest.raises(ValueError, match="finite"):
        record_remediation(con, RemediationRecord("gpu", "g", "reset_gpu", float("inf")))
