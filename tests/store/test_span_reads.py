"""Span reads against a plain-Python model of the store: rows written in pieces, each piece in an
order of its own (the bulk readers' ``pos``), come back in write order whatever order DuckDB's scan
returns them in; names asked for come back as text and as one-byte codes that agree; ``name_in``
and ``take`` agree with the text; ``span_numbers`` lines up with ``spans`` row for row."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from suanli.ingest.records import Span
from suanli.ingest.sink import POS_FIELD, SpanBatch
from suanli.store.duck import DuckStore

NAMES = ("train_step", "forward", "backward", "allreduce", "data_load", "init")

pieces = st.lists(st.lists(st.tuples(st.sampled_from(NAMES), st.integers(0, 3), st.booleans()),
                           min_size=1, max_size=25), min_size=1, max_size=4)


@settings(max_examples=40, deadline=None)
@given(pieces=pieces, wanted=st.lists(st.sampled_from(NAMES), min_size=1, max_size=4),
       shuffle=st.randoms(use_true_random=False), batch=st.sampled_from([1, 3, 1 << 20]))
def test_spans_by_name_in_write_order(pieces: list[list[tuple[str, int, bool]]], wanted: list[str],
                                      shuffle: object, batch: int) -> None:
    import suanli.store.duck.reads as reads
    old = reads._SPAN_BATCH
    reads._SPAN_BATCH = batch
    try:
        store = DuckStore(None)
        model: list[tuple[str, str, int, float, int]] = []     # (span id, name, rank, flops, i) in write order
        for p, piece in enumerate(pieces):
            spans = [Span("t", f"s{p}-{i}", None, name, float(i), i + 0.5, "j" if in_job else "other", rank, i,
                          None, None, {"train.model_flops": 10.0 * p + i})
                     for i, (name, rank, in_job) in enumerate(piece)]
            model += [(s.span_id, s.name, int(s.rank or 0), float(s.attrs["train.model_flops"]), int(s.start_s))
                      for s in spans if s.job_id == "j"]
            order = list(range(len(spans)))
            shuffle.shuffle(order)                           # type: ignore[attr-defined]
            table = SpanBatch.from_spans(spans).rows
            table = table.append_column(POS_FIELD, pa.array(range(len(spans)), pa.int64())).take(order)
            with store.transaction(f"piece {p}") as txn:
                txn.append_spans(SpanBatch(table))
                txn.commit()
        want = [m for m in model if m[1] in wanted]
        f = store.spans("j", wanted)
        assert f.span_id.tolist() == [m[0] for m in want]
        assert f.name.tolist() == [m[1] for m in want] and f.rank.tolist() == [m[2] for m in want]
        assert f.name_codes is not None
        codes, names = f.name_codes
        assert [names[c] for c in codes.tolist()] == f.name.tolist()
        for probe in (wanted[:1], ["forward", "allreduce"], ["absent"]):
            assert f.name_in(probe).tolist() == [n in probe for n in f.name.tolist()]
        keep = f.rank >= 2
        sub = f.take(keep)
        assert sub.span_id.tolist() == [m[0] for m in want if m[2] >= 2]
        assert sub.name_in(["forward"]).tolist() == [n == "forward" for n in sub.name.tolist()]
        every = store.spans("j")                             # no names: text only, the same rows
        assert every.name_codes is None and every.span_id.tolist() == [m[0] for m in model]
        assert every.name_in(wanted).tolist() == [m[1] in wanted for m in model]
        if len(set(wanted)) == 1:
            flops = store.span_numbers("j", wanted[0], ["train.model_flops"])["train.model_flops"]
            assert flops.tolist() == [m[3] for m in want]
            lo, hi = 2.7, 9.0                           # spans i of [i, i + 0.5]: those of i in 3..9
            inside = store.spans("j", wanted[:1], start=lo, end=hi)
            numbers = store.span_numbers("j", wanted[0], ["train.model_flops"], start=lo, end=hi)
            assert numbers["train.model_flops"].tolist() == [m[3] for m in want if 3 <= m[4] <= 9]
            assert inside.span_id.tolist() == [m[0] for m in want if 3 <= m[4] <= 9]
    finally:
        reads._SPAN_BATCH = old


def test_more_names_than_a_byte_holds_are_read_as_text() -> None:
    store = DuckStore(None)
    store.add_spans([Span("t", f"s{i}", None, f"n{i}", float(i), i + 1.0, "j", 0, i, None, None) for i in range(300)])
    many = [f"n{i}" for i in range(299, -1, -1)]
    f = store.spans("j", many)
    assert f.name_codes is None and f.name.tolist() == [f"n{i}" for i in range(300)]
    few = store.spans("j", ["n7", "n3", "n7"])                      # repeated: one code each
    assert few.name.tolist() == ["n3", "n7"] and few.name_codes is not None
    assert few.name_codes[1] == ("n7", "n3")


@pytest.mark.parametrize("names", [None, ["forward"]])
def test_an_empty_read_is_empty(names: list[str] | None) -> None:
    f = DuckStore(None).spans("j", names)
    assert len(f) == 0 and f.name_in(["forward"]).tolist() == [] and len(f.take(np.zeros(0, dtype=bool))) == 0
