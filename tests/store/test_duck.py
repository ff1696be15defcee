"""DuckStore: persistence, last write wins, counter resets, order, special values, spans, events."""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from suanli.ingest.load import load_metrics
from suanli.ingest.records import Event, IngestReport, SeriesKey, Span
from suanli.ingest.sink import POS_FIELD, SpanBatch
from suanli.store.duck import DuckStore
from tests.conftest import examples

GPU0 = SeriesKey("DCGM_FI_DEV_GPU_TEMP", (("UUID", "GPU-a"),), "gpu", "node-001/gpu0")
CTR = SeriesKey("suanli_switch_port_crc_errors_total", (("port", "p1"), ("switch", "leaf-01")),
                "switch_port", "leaf-01/p1")


T = 1_700_000_000  # 2023-11-14T22:13:20Z: metrics files' timestamps must lie in 2000..2100


def a(*xs: float) -> np.ndarray:
    return np.array(xs, dtype=np.float64)


def test_reopening_the_file_finds_everything(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with DuckStore(path) as store:
        store.put_inventory("cluster: x\n", "inv.yaml")
        store.add_samples(GPU0, a(10, 20), a(50, 51))
        store.add_spans([Span("t1", "s1", None, "train_step", 5.0, 9.0, "job", 3, 7, "node-001/gpu0",
                              "node-001", {"train.tokens": 4096})])
        store.add_events([Event(12.0, "node-001", "gpu", "node-001/gpu0", "xid", "Xid 79", code=79)])
        store.add_report("m.om", IngestReport(loaded={"samples": 2}))
    store = DuckStore(path)
    assert store.inventory_text() == "cluster: x\n"
    (s,) = store.series("DCGM_FI_DEV_GPU_TEMP")
    assert s.key == GPU0 and s.ts.tolist() == [10.0, 20.0] and s.values.tolist() == [50.0, 51.0]
    spans = store.spans(job_id="job")
    assert spans.rank.tolist() == [3] and spans.step.tolist() == [7] and spans.parent_id.tolist() == [None]
    assert store.span_attrs("job", "train_step", ["train.tokens"])["train.tokens"].tolist() == [4096]
    (ev,) = store.events(entity_ids=["node-001/gpu0"], kinds=["xid"])
    assert ev.code == 79 and ev.message == "Xid 79"
    assert store.time_range() == (5.0, 20.0)
    assert store.reports()[0][1].loaded == {"samples": 2}
    # new series after reopening get fresh ids, old ones keep theirs
    store.add_samples(CTR, a(1), a(0))
    assert {k.metric for k in store.series_keys()} == {GPU0.metric, CTR.metric}
    store.close()


def test_duplicates_last_write_wins_and_out_of_order_is_sorted() -> None:
    store = DuckStore(None)
    store.add_samples(GPU0, a(30, 10, 20), a(3, 1, 2))
    store.flush()
    store.add_samples(GPU0, a(20, 40), a(22, 4))          # 20 written again: 22 replaces 2
    (s,) = store.series(GPU0.metric)
    assert s.ts.tolist() == [10, 20, 30, 40]
    assert s.values.tolist() == [1, 22, 3, 4]


def test_duplicates_in_one_file_later_line_wins(tmp_path: Path) -> None:
    path = tmp_path / "m.om"
    lines = [f'g{{a="1"}} {i} {T + i % 3}' for i in range(3000)] + ["# EOF"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    store = DuckStore(None)
    load_metrics(path, store, None, IngestReport())
    (s,) = store.series("g")
    # ts 0, 1, 2 were written 1000 times each; the last lines were 2997 (ts 0), 2998 (ts 1), 2999 (ts 2)
    assert s.ts.tolist() == [T, T + 1, T + 2] and s.values.tolist() == [2997, 2998, 2999]


def test_counter_reset_rate_and_increase() -> None:
    store = DuckStore(None)
    # a counter 100 -> 130 -> (exporter restart) 5 -> 25, 15 s apart.
    # true increase: 30 + 5 (restarted from 0) + 20 = 55; rates 30/15, 5/15, 20/15
    store.add_samples(CTR, a(0, 15, 30, 45), a(100, 130, 5, 25))
    (r,) = store.rate(CTR.metric)
    assert r.ts.tolist() == [15, 30, 45]
    assert r.values == pytest.approx([2.0, 1 / 3, 4 / 3])
    assert store.increase(CTR.metric) == {CTR: pytest.approx(55.0)}
    # a range that starts after the reset sees only 5 -> 25
    assert store.increase(CTR.metric, start=30) == {CTR: pytest.approx(20.0)}


def test_nan_and_inf_are_kept_and_counters_skip_them() -> None:
    store = DuckStore(None)
    store.add_samples(GPU0, a(1, 2, 3), a(math.nan, math.inf, -math.inf))
    (s,) = store.series(GPU0.metric)
    assert math.isnan(s.values[0]) and s.values[1] == math.inf and s.values[2] == -math.inf
    store.add_samples(CTR, a(1, 2, 3, 4), a(10, math.nan, 16, 19))
    # NaN sample skipped: 10 -> 16 -> 19 is an increase of 9
    assert store.increase(CTR.metric) == {CTR: pytest.approx(9.0)}


def test_filters_by_entity_and_time() -> None:
    store = DuckStore(None)
    other = SeriesKey(GPU0.metric, (("UUID", "GPU-b"),), "gpu", "node-001/gpu1")
    store.add_samples(GPU0, a(1, 2, 3), a(1, 2, 3))
    store.add_samples(other, a(1, 2, 3), a(7, 8, 9))
    (s,) = store.series(GPU0.metric, entity_ids=["node-001/gpu1"], start=2, end=3)
    assert s.key == other and s.values.tolist() == [8, 9]
    assert store.series(GPU0.metric, entity_ids=["nope"]) == []
    assert store.metrics() == [GPU0.metric]


def test_spans_filters_and_order() -> None:
    store = DuckStore(None)
    spans = [Span("t", f"s{i}", None, name, float(i), float(i) + 0.5, "j" if i < 4 else "k", i % 2, i // 2,
                  None, None) for i, name in enumerate(["train_step", "forward", "train_step", "forward", "train_step"])]
    store.add_spans(spans)
    f = store.spans(job_id="j", names=["train_step"])
    assert f.span_id.tolist() == ["s0", "s2"] and f.gpu_id.tolist() == f.node_id.tolist() == [None, None]
    assert f.name.tolist() == ["train_step"] * 2 and f.job_id.tolist() == ["j", "j"]
    assert store.spans(steps=(1, 2)).span_id.tolist() == ["s2", "s3", "s4"]
    assert store.spans(start=2.6, end=3.2).span_id.tolist() == ["s3"]   # overlaps [3, 3.5] only


@pytest.mark.parametrize("batch", [1, 2, 3, 1 << 20])
def test_spans_read_in_batches_are_the_same_frame(batch: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The frame is converted batch by batch (``_SPAN_BATCH`` rows): any size gives the rows of
    test_spans_filters_and_order, in write order, ids or not, and an empty read stays empty."""
    import suanli.store.duck.reads as reads
    monkeypatch.setattr(reads, "_SPAN_BATCH", batch)
    store = DuckStore(None)
    store.add_spans([Span("t", f"s{i}", "s0" if i else None, name, float(i), i + 0.5, "j" if i < 4 else "k",
                          i % 2, i // 2, f"n/gpu{i % 3}", "n")
                     for i, name in enumerate(["train_step", "forward", "train_step", "forward", "train_step"])])
    f = store.spans()
    assert f.span_id.tolist() == ["s0", "s1", "s2", "s3", "s4"] and f.job_id.tolist() == ["j"] * 4 + ["k"]
    assert f.gpu_id.tolist() == ["n/gpu0", "n/gpu1", "n/gpu2", "n/gpu0", "n/gpu1"]
    assert f.parent_id.tolist() == [None, "s0", "s0", "s0", "s0"] and f.step.tolist() == [0, 0, 1, 1, 2]
    lean = store.spans(job_id="j", ids=False)
    assert lean.job_id.tolist() == ["j"] * 4 and lean.span_id.tolist() == [None] * 4
    assert lean.start_s.tolist() == [0.0, 1.0, 2.0, 3.0] and lean.rank.dtype == np.int64
    empty = store.spans(job_id="nobody")
    assert len(empty) == 0 and len(empty.name) == len(empty.job_id) == 0 and empty.start_s.dtype == np.float64


def test_spans_come_in_write_order_when_written_out_of_it() -> None:
    """Rows appended with their read position (the bulk readers' ``pos``) in reverse: the frame
    follows the positions; without ids the three id columns are None and the rest is equal."""
    store = DuckStore(None)
    spans = [Span(f"t{i}", f"s{i}", None if i == 0 else "s0", "train_step", float(i), i + 0.5, "j", i, 10 + i,
                  f"n/gpu{i}", "n") for i in range(4)]
    table = SpanBatch.from_spans(spans).rows
    table = table.append_column(POS_FIELD, pa.array([0, 1, 2, 3], pa.int64())).take([3, 2, 1, 0])
    with store.transaction("x") as txn:
        txn.append_spans(SpanBatch(table))
        txn.commit()
    f = store.spans(job_id="j")
    assert f.span_id.tolist() == ["s0", "s1", "s2", "s3"] and f.step.tolist() == [10, 11, 12, 13]
    assert f.parent_id.tolist() == [None, "s0", "s0", "s0"] and f.gpu_id.tolist()[3] == "n/gpu3"
    lean = store.spans(job_id="j", ids=False)
    assert lean.trace_id.tolist() == lean.span_id.tolist() == lean.parent_id.tolist() == [None] * 4
    assert lean.start_s.tolist() == [0.0, 1.0, 2.0, 3.0] and lean.name.tolist() == ["train_step"] * 4
    assert lean.rank.tolist() == f.rank.tolist() and lean.gpu_id.tolist() == f.gpu_id.tolist()
    bare = store.spans(job_id="j", ids=False, places=False)
    assert bare.gpu_id.tolist() == bare.node_id.tolist() == bare.span_id.tolist() == [None] * 4
    assert bare.step.tolist() == f.step.tolist() and bare.end_s.tolist() == f.end_s.tolist()
    placed = store.spans(job_id="j", places=False)                    # ids read, places not
    assert placed.span_id.tolist() == f.span_id.tolist() and placed.node_id.tolist() == [None] * 4


def test_span_numbers_are_the_json_numbers_only() -> None:
    """Per span, in write order: an int or a float is itself, a bool, a string, a list, null or a
    missing key is NaN (what the ledger takes as a step's FLOPs or tokens)."""
    store = DuckStore(None)
    values: list[object] = [3, 2.5, True, "7", [1], None, -4, 12345678901234567890, 1e300]
    attrs = [{"train.tokens": v} for v in values] + [{}]
    store.add_spans([Span("t", f"s{i}", None, "train_step", float(i), i + 0.5, "j", 0, i, None, None, a)
                     for i, a in enumerate(attrs)])
    got = store.span_numbers("j", "train_step", ["train.tokens", "absent"])
    nan = math.nan
    assert got["train.tokens"].tolist() == pytest.approx([3.0, 2.5, nan, nan, nan, nan, -4.0, 1.2345678901234567e19,
                                                          1e300, nan], nan_ok=True)
    assert np.isnan(got["absent"]).all() and len(got["absent"]) == 10
    one = store.span_numbers("j", "train_step", ["train.tokens"])["train.tokens"]   # a list of one path
    assert one.tolist() == pytest.approx(got["train.tokens"].tolist(), nan_ok=True)
    assert store.span_numbers("j", "train_step", []) == {}
    assert store.span_numbers("j", "nothing", ["train.tokens"])["train.tokens"].tolist() == []


def test_bulk_buffering_flushes_in_batches() -> None:
    from suanli.store.duck import DuckStoreConfig

    store = DuckStore(None, DuckStoreConfig(flush_rows=1000))
    for i in range(30):
        store.add_samples(SeriesKey("m", (("i", str(i)),), None, None), np.arange(100.0), np.full(100, float(i)))
    assert store.stats()["samples"] == 3000
    assert len(store.unresolved_series()) == 30


def test_1024_gpu_temperatures_over_20_minutes_read_fast() -> None:
    store = DuckStore(None)
    ts = np.arange(0.0, 1200.0, 15.0)                    # 80 scrapes
    for g in range(1024):
        key = SeriesKey("DCGM_FI_DEV_GPU_TEMP", (("UUID", f"GPU-{g}"),), "gpu", f"node-{g // 8:03d}/gpu{g % 8}")
        store.add_samples(key, ts, np.full(80, 40.0 + g % 7))
        store.add_samples(SeriesKey("DCGM_FI_DEV_POWER_USAGE", key.labels, "gpu", key.entity_id), ts, ts)
    store.flush()
    t0 = time.perf_counter()
    got = store.series("DCGM_FI_DEV_GPU_TEMP", start=0, end=1200)
    elapsed = time.perf_counter() - t0
    assert len(got) == 1024 and all(len(s.ts) == 80 for s in got)
    assert got[9].values[0] == 40.0 + 9 % 7
    assert elapsed < 1.0, elapsed


def test_last_line_wins_in_a_file_read_in_parallel_chunks(tmp_path: Path) -> None:
    # ~16 MB: DuckDB's CSV reader splits it across threads; order must survive
    path = tmp_path / "big.om"
    body = [f'gauge_with_a_longer_name{{series="s{i % 100}",pad="xxxxxxxxxxxxxxxxxxxx"}} {i} {T + i // 100}'
            for i in range(200_000)]
    rewrite = [f'gauge_with_a_longer_name{{series="s{i}",pad="xxxxxxxxxxxxxxxxxxxx"}} -1 {T}' for i in range(100)]
    path.write_text("\n".join([*body, *rewrite, "# EOF"]) + "\n", encoding="utf-8")
    store = DuckStore(None)
    report = IngestReport()
    load_metrics(path, store, None, report)
    assert report.loaded["samples"] == 200_100 and report.rejected == 0
    got = store.series("gauge_with_a_longer_name")
    assert len(got) == 100
    # ts 0 of every series was first written by lines 0..99 (values 0..99), then rewritten as -1 at the end
    assert all(s.values[0] == -1 for s in got)
    # every other ts keeps its only value: series s7 at ts 5 is line 507
    s7 = next(s for s in got if s.key.label("series") == "s7")
    assert s7.ts[5] == T + 5 and s7.values[5] == 507


def test_a_file_that_is_not_a_store_is_a_clear_input_error(tmp_path: Path) -> None:
    from suanli.errors import InputError

    bad = tmp_path / "notes.duckdb"
    bad.write_text("this is not a database\n" * 100, encoding="utf-8")
    with pytest.raises(InputError) as err:
        DuckStore(bad)
    assert str(err.value).startswith(str(bad)) and "\n" not in str(err.value)


def test_same_series_written_with_labels_in_another_order_is_one_series(tmp_path: Path) -> None:
    first, second = tmp_path / "a.om", tmp_path / "b.om"
    first.write_text(f'm{{a="1",b="2"}} 10 {T + 1}\nm{{a="1",b="2"}} 20 {T + 2}\n# EOF\n', encoding="utf-8")
    second.write_text(f'm{{b="2",a="1"}} 99 {T + 2}\nm{{b="2",a="1"}} 30 {T + 3}\n# EOF\n', encoding="utf-8")
    store = DuckStore(tmp_path / "s.duckdb")
    for path in (first, second):
        load_metrics(path, store, None, IngestReport())
    store.add_samples(SeriesKey("m", (("a", "1"), ("b", "2")), None, None), a(T + 4), a(40))
    store.close()
    store = DuckStore(tmp_path / "s.duckdb")
    (s,) = store.series("m")
    # ts 2 was written 20 (first file), then 99 (second file): the later write wins
    assert s.ts.tolist() == [T + 1, T + 2, T + 3, T + 4] and s.values.tolist() == [10, 99, 30, 40]
    assert len(store.series_keys("m")) == 1


def _check_metrics(store: DuckStore, keys: list[SeriesKey], names: list[str]) -> None:
    for m, name in enumerate(names):
        got = store.series(name)
        assert [s.key for s in got] == keys[m::3]
        assert [s.values.tolist() for s in got] == [[float(n)] for n in range(m, len(keys), 3)]
        picked = store.series(name, entity_ids=[keys[m + 3].entity_id or "", "node-009/gpu0"])
        assert [s.key for s in picked] == [keys[m + 3]]
    assert store.series("m_none") == []


def test_each_metric_reads_its_own_series_in_the_order_they_came(tmp_path: Path) -> None:
    # series of three metrics written interleaved, over two commits: each read names its own
    # metric's series only, first-seen first, in the writing process and after reopening
    path = tmp_path / "s.duckdb"
    names = ["m_a", "m_b", "m_c"]
    keys = [SeriesKey(names[i % 3], (("gpu", str(i)),), "gpu", f"node-001/gpu{i}") for i in range(12)]
    store = DuckStore(path)
    for n, key in enumerate(keys):
        store.add_samples(key, a(T + n), a(float(n)))
        if n == 5:
            store.flush()
    _check_metrics(store, keys, names)
    store.close()
    store = DuckStore(path)
    _check_metrics(store, keys, names)
    late = SeriesKey("m_b", (("gpu", "99"),), None, None)
    store.add_samples(late, a(T + 50), a(7.0))
    assert [s.key for s in store.series("m_b")] == [*keys[1::3], late]       # a new id joins its metric, last
    store.close()


def test_keys_loaded_from_a_file_share_their_strings_and_pairs(tmp_path: Path) -> None:
    # 612,000 series at 10,240 GPUs: equal label pairs and names are one object each once loaded
    path = tmp_path / "s.duckdb"
    keys = [SeriesKey("DCGM_FI_DEV_GPU_TEMP", (("UUID", f"GPU-{i}"), ("modelName", "NVIDIA H100")), "gpu",
                      f"node-001/gpu{i}") for i in range(3)]
    with DuckStore(path) as store:
        for key in keys:
            store.add_samples(key, a(T), a(1.0))
    with DuckStore(path) as store:
        got = store.series_keys()
        assert got == keys
        assert got[0].labels[1] is got[1].labels[1] is got[2].labels[1]
        assert got[0].metric is got[2].metric and got[0].entity_kind is got[2].entity_kind
        assert got[0].labels[0] is not got[1].labels[0]


def test_a_file_opened_read_only_gets_the_read_memory_limit(tmp_path: Path) -> None:
    from suanli.store.duck import DuckStoreConfig

    path = tmp_path / "s.duckdb"

    def settings_of(store: DuckStore) -> tuple[object, ...]:
        row = store.con.execute("SELECT current_setting('memory_limit'), "
                                "current_setting('allocator_background_threads')").fetchall()[0]
        return tuple(row)

    with DuckStore(path) as store:
        store.add_samples(GPU0, a(T), a(1.0))
        assert settings_of(store) == ("1.8 GiB", True)                     # 2GB, as DuckDB prints it
    with DuckStore(path, read_only=True) as store:
        assert settings_of(store) == ("953.6 MiB", True)                   # 1GB
    with DuckStore(path, DuckStoreConfig(read_memory_limit="512MB", allocator_background_threads=False),
                   read_only=True) as store:
        assert settings_of(store) == ("488.2 MiB", False)


def _latest_by_sorting(rank: np.ndarray, start: np.ndarray, gpu: np.ndarray) -> dict[int, object]:
    """What fabric computed in Python before rank_gpus: spans in write order, the stable sort by
    start reversed, each rank's first row in it."""
    order = np.argsort(start, kind="stable")[::-1]
    ranks, first = np.unique(rank[order], return_index=True)
    return {int(r): gpu[order[i]] for r, i in zip(ranks, first, strict=True) if r >= 0}


@settings(max_examples=examples(60), deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(-1, 3), st.sampled_from([0.0, 1.0, 2.5, 9.0, 1e9]),
                          st.sampled_from(["n/gpu0", "n/gpu1", None]), st.sampled_from(["forward", "init"])),
                max_size=25))
def test_rank_gpus_are_each_ranks_latest_span(rows: list[tuple[int, float, str | None, str]]) -> None:
    """Ties in start (the last written wins), ranks -1 (none), a GPU-less latest span (None), a
    name filter and a window: the sort-based definition over what ``spans`` returns."""
    store = DuckStore(None)
    store.add_spans([Span("t", f"s{i}", None, name, t, t + 0.5, "j", None if r < 0 else r, 0, g, None)
                     for i, (r, t, g, name) in enumerate(rows)])
    for names, lo, hi in ((None, None, None), (["forward"], None, None), (None, 0.8, 5.0)):
        f = store.spans(job_id="j", names=names, start=lo, end=hi)
        assert store.rank_gpus("j", names, lo, hi) == _latest_by_sorting(f.rank, f.start_s, f.gpu_id)
    assert store.rank_gpus("nobody") == {}


def test_rank_gpus_by_hand() -> None:
    store = DuckStore(None)
    store.add_spans([Span("t", "a", None, "forward", 5.0, 6.0, "j", 0, 0, "n/gpu0", None),
                     Span("t", "b", None, "forward", 5.0, 6.0, "j", 0, 0, "n/gpu1", None),   # same start, later
                     Span("t", "c", None, "forward", 1.0, 2.0, "j", 0, 0, "n/gpu2", None),
                     Span("t", "d", None, "forward", 3.0, 4.0, "j", 1, 0, None, None),
                     Span("t", "e", None, "forward", 9.0, 9.5, "j", None, 0, "n/gpu3", None),
                     Span("t", "f", None, "forward", 1.0, 2.0, "j", 2, 0, "n/gpu4", None),
                     Span("t", "g", None, "forward", 4.0, 5.0, "j", 2, 0, None, None),      # latest has none
                     Span("t", "h", None, "forward", 7.0, 8.0, "j", 3, 0, "n/gpu5", None),
                     Span("t", "i", None, "forward", 7.0, 8.0, "j", 3, 0, None, None)])     # tied, written last
    assert store.rank_gpus("j") == {0: "n/gpu1", 1: None, 2: None, 3: None}
