"""DuckStore as the ingest sink: transactions with and without a file, abort, one at a time,
ids that producers choose (one that already names another series is remapped)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from suanli.ingest.records import Event, IngestReport, SeriesKey, Span
from suanli.ingest.sink import SAMPLE_SCHEMA, EventBatch, SampleBatch, SpanBatch
from suanli.store.duck import DuckStore

T = 1_700_000_000.0
A = SeriesKey("m", (("a", "1"),), None, None)
B = SeriesKey("m", (("a", "2"),), None, None)


def _rows(ids: list[int], ts: list[float], values: list[float]) -> pa.Table:
    return pa.Table.from_arrays([pa.array(ids, pa.uint64()), pa.array(ts), pa.array(values)], schema=SAMPLE_SCHEMA)


def test_a_file_transaction_commits_rows_mark_and_report_together(tmp_path: Path) -> None:
    store = DuckStore(tmp_path / "s.duckdb")
    with store.transaction("m.om", "fp-1") as txn:
        txn.append_samples(SampleBatch.from_series([(A, np.array([T, T + 1]), np.array([1.0, 2.0]))]))
        txn.append_spans(SpanBatch.from_spans([Span("t", "s", None, "train_step", T, T + 1, "j", 0, 1, None, None)]))
        txn.append_events(EventBatch.from_events([Event(T, "n", "node", "n", "xid", "Xid 79", code=79)]))
        assert not store.file_loaded("fp-1")                          # not before the commit
        txn.commit(IngestReport(loaded={"samples": 2}))
    store.close()
    store = DuckStore(tmp_path / "s.duckdb")
    assert store.file_loaded("fp-1") and store.loaded_files() == ["m.om"]
    assert store.stats() == {"series": 1, "samples": 2, "spans": 1, "events": 1}
    assert store.reports() == [("m.om", IngestReport(loaded={"samples": 2}))]


def test_an_aborted_transaction_leaves_nothing(tmp_path: Path) -> None:
    store = DuckStore(tmp_path / "s.duckdb")
    with pytest.raises(RuntimeError, match="parser broke"), store.transaction("m.om", "fp-1") as txn:
        txn.append_samples(SampleBatch.from_series([(A, np.array([T]), np.array([1.0]))]))
        raise RuntimeError("parser broke")
    with store.transaction("m.om", "fp-2") as txn:                   # left without commit: aborted
        txn.append_samples(SampleBatch.from_series([(B, np.array([T]), np.array([1.0]))]))
    assert store.stats() == {"series": 0, "samples": 0, "spans": 0, "events": 0}
    assert store.series_keys() == [] and not store.file_loaded("fp-1") and not store.file_loaded("fp-2")
    assert store.seq == 0                                            # no sequence numbers used up


def test_a_live_batch_belongs_to_no_file() -> None:
    store = DuckStore(None)
    with store.transaction("scrape http://node-001:9400/metrics") as txn:
        txn.append_samples(SampleBatch.from_series([(A, np.array([T]), np.array([5.0]))]))
        txn.commit()                                                 # no report, no mark
    assert store.loaded_files() == [] and store.reports() == []
    assert [s.values.tolist() for s in store.series("m")] == [[5.0]]


def test_one_transaction_at_a_time() -> None:
    store = DuckStore(None)
    with store.transaction("a") as txn:
        with pytest.raises(RuntimeError, match="open already"):
            store.transaction("b")
        txn.commit()
    with pytest.raises(RuntimeError, match="closed"):
        txn.append_samples(SampleBatch.from_series([(A, np.array([T]), np.array([1.0]))]))


def test_a_producer_id_that_names_another_series_is_remapped() -> None:
    store = DuckStore(None)
    with store.transaction("one") as txn:
        txn.append_samples(SampleBatch({7: A}, _rows([7, 7], [T, T + 1], [1.0, 2.0])))
        txn.commit()
    with store.transaction("two") as txn:                            # id 7 again, for another series
        txn.append_samples(SampleBatch({7: B}, _rows([7], [T], [9.0])))
        reader = pa.RecordBatchReader.from_batches(SAMPLE_SCHEMA, _rows([7], [T + 1], [8.0]).to_batches())
        txn.append_samples(SampleBatch({7: B}, reader))
        txn.commit()
    got = {s.key: s.values.tolist() for s in store.series("m")}
    assert got == {A: [1.0, 2.0], B: [9.0, 8.0]}
    assert store.ids_of(A) == 7 and store.ids_of(B) == 8                # the next free id


def test_a_key_written_under_two_ids_reads_as_one_series_last_write_winning() -> None:
    store = DuckStore(None)
    with store.transaction("one") as txn:
        txn.append_samples(SampleBatch({1: A}, _rows([1, 1], [T, T + 1], [1.0, 2.0])))
        txn.append_samples(SampleBatch({2: A}, _rows([2], [T + 1], [3.0])))   # the same key, another id
        txn.commit()
    (s,) = store.series("m")
    assert s.ts.tolist() == [T, T + 1] and s.values.tolist() == [1.0, 3.0]


def test_keys_that_differ_only_in_their_entity_stay_apart() -> None:
    # analyses and tests write keys without labels; the entity is what tells them apart
    store = DuckStore(None)
    one = SeriesKey("suanli_switch_port_crc_errors_total", (), "switch_port", "leaf-01/p1")
    two = SeriesKey("suanli_switch_port_crc_errors_total", (), "switch_port", "leaf-01/p2")
    store.add_samples(one, np.array([T]), np.array([1.0]))
    store.add_samples(two, np.array([T]), np.array([2.0]))
    assert {s.key.entity_id: s.values.tolist() for s in store.series(one.metric)} == \
        {"leaf-01/p1": [1.0], "leaf-01/p2": [2.0]}


def test_a_batch_keeps_two_keys_apart_even_when_their_ids_collide(monkeypatch: pytest.MonkeyPatch) -> None:
    import suanli.ingest.sink as sink

    monkeypatch.setattr(sink, "series_id", lambda key: 5)            # every key hashes alike
    batch = SampleBatch.from_series([(A, np.array([T]), np.array([1.0])), (B, np.array([T]), np.array([2.0])),
                                     (A, np.array([T + 1]), np.array([3.0]))])
    assert batch.series == {5: A, 6: B}
    assert batch.rows.column("series_id").to_pylist() == [5, 6, 5]
