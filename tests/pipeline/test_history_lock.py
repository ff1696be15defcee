"""The decision history is written under the store's lock, in a transaction of its own: serve's
receivers write on the same DuckDB connection from other threads, and a statement run while one
of their transactions is open lands inside it (a 10,240-GPU serve run ended with every step
failing on "Current transaction is aborted")."""

from __future__ import annotations

import threading
from pathlib import Path

from suanli.incidents.model import Incident
from suanli.pipeline.stages import _write_history, history_connection
from suanli.store.duck import DuckStore
from suanli.store.history import load_history


def test_history_waits_for_an_open_transaction_and_survives_its_rollback(tmp_path: Path) -> None:
    store = DuckStore(tmp_path / "h.duckdb")
    try:
        db = history_connection(store)
        assert db is not None
        inc = Incident("gpu_thermal", "gpu", "node-001/gpu3", 0.9, 1000.0, 1010.0, None)
        txn = store.transaction("scrape:node-001")      # another writer's transaction, open
        writer = threading.Thread(target=_write_history, args=(db[0], db[1], [inc], {}, 1100.0))
        writer.start()
        writer.join(0.5)
        assert writer.is_alive()                          # it waits for the lock ...
        txn.abort()                                       # ... which the other writer gives back rolled back
        writer.join(10)
        assert not writer.is_alive()
        with db[1]:
            past = load_history(db[0], 0.0)
        assert [(r.incident_id, r.entity_id) for r in past.incidents] == [(inc.id, "node-001/gpu3")]
        with store.transaction("after") as t:           # and the connection is clean for the next one
            t.commit()
    finally:
        store.close()
