"""Store and loader against hostile input: bad inventory bytes, unknown files, corrupt gzip,
repeated and overlapping loads, a fresh store's first flush."""

from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from suanli.errors import InputError
from suanli.ingest.load import load_paths
from suanli.ingest.plan import fingerprint, plan_paths
from suanli.ingest.records import Event, IngestReport, SeriesKey, Span
from suanli.store.duck import DuckStore
from tests.cli.helpers import GPU0_LABELS, INVENTORY, T0, make_folder, otlp_line, temp_line

KEY = SeriesKey("DCGM_FI_DEV_GPU_TEMP", (("UUID", "GPU-a"),), "gpu", "node-001/gpu0")
XID79 = "NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, GPU has fallen off the bus."


def _kernel_log() -> str:
    """Two events: an Xid 79 and a link-up line."""
    return (f"2026-03-13T11:06:41.000000+00:00 node-001 kernel: {XID79}\n"
            "2026-03-13T11:06:43.000000+00:00 node-001 kernel: eth0: link up\n")


def _folder(root: Path, name: str = "f", inventory: str | None = INVENTORY) -> Path:
    """4 OTLP lines (2 ranks x 2 steps, 2 spans each: 8 spans), a 2-line kernel.log, 3 samples."""
    traces = "\n".join(otlp_line(rank, step, T0 + 10 * step) for step in range(2) for rank in range(2)) + "\n"
    metrics = "\n".join(temp_line(str(50 + i), T0 + 15 * i) for i in range(3)) + "\n# EOF\n"
    return make_folder(root, name, inventory=inventory,
                       files={"traces.otlp.jsonl": traces, "kernel.log": _kernel_log(), "metrics.om": metrics})


def _counts(store: DuckStore) -> tuple[int, int, int]:
    return (len(store.spans()), len(store.events()),
            sum(len(s.ts) for s in store.series("DCGM_FI_DEV_GPU_TEMP")))


# -- a fresh store's first writes (regression: _max_seq once left its query result open) ----------

def test_fresh_store_first_flush_of_each_kind() -> None:
    store = DuckStore(None)
    store.add_samples(KEY, np.array([T0]), np.array([50.0]))
    store.flush()
    store.add_spans([Span("t", "s", None, "train_step", T0, T0 + 1, "j", 0, 1, None, None)])
    store.flush()
    store.add_events([Event(T0, "node-001", "node", "node-001", "xid", "Xid 79")])
    store.flush()
    store.add_report("x", IngestReport())
    assert store.stats() == {"series": 1, "samples": 1, "spans": 1, "events": 1}
    store.close()


def test_write_sequence_continues_after_reopening(tmp_path: Path) -> None:
    with DuckStore(tmp_path / "s.duckdb") as store:
        store.add_spans([Span("t", f"s{i}", None, "n", T0, T0 + 1, "j", 0, i, None, None) for i in range(3)])
    store = DuckStore(tmp_path / "s.duckdb")
    assert store.seq == 3                              # 3 spans got seq 1, 2, 3
    store.add_spans([Span("t", "s0", None, "n", T0, T0 + 5, "j", 0, 0, None, None)])   # a later write of s0
    spans = store.spans()
    assert sorted(spans.span_id.tolist()) == ["s0", "s1", "s2"]
    assert spans.end_s[spans.span_id.tolist().index("s0")] == T0 + 5      # the last write wins
    store.close()


# -- inventory bytes --------------------------------------------------------------------------------

def test_inventory_that_is_not_utf8_names_file_and_line(tmp_path: Path) -> None:
    # INVENTORY has 22 lines; the bad byte 0xe9 is on line 23
    assert INVENTORY.count("\n") == 22
    folder = make_folder(tmp_path, "inv", inventory=INVENTORY.encode() + b"notes: caf\xe9\n")
    with pytest.raises(InputError) as err:
        load_paths([folder], DuckStore(None))
    assert str(err.value).startswith(f"{folder / 'inventory.yaml'}:23: not UTF-8")
    assert "0xe9" in str(err.value)


# -- files of no known kind -------------------------------------------------------------------------

def test_an_explicit_file_of_unknown_kind_alone_is_an_input_error(tmp_path: Path) -> None:
    notes = tmp_path / "notes.csv"
    notes.write_text("a,b\n")
    with pytest.raises(InputError) as err:
        plan_paths([notes])
    assert str(err.value) == f"{notes}: not a recognised inventory, metrics, traces or log file"


def test_an_explicit_file_of_unknown_kind_with_others_is_one_reject(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    notes = tmp_path / "notes.csv"
    notes.write_text("a,b\n")
    report = load_paths([folder, notes], DuckStore(None))
    assert report.rejected == 1
    assert report.reasons == [f"{notes}: not a recognised inventory, metrics, traces or log file"]
    assert report.loaded["spans"] == 8 and report.loaded["events"] == 2 and report.loaded["samples"] == 3


def test_other_files_in_a_folder_are_ignored(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    (folder / "README.md").write_text("hi\n")
    assert load_paths([folder], DuckStore(None)).rejected == 0


# -- unreadable files -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["metrics.om.gz", "traces.otlp.jsonl.gz", "kernel2.log.gz", "other.log.gz"])
def test_a_corrupt_gzip_is_one_reject_and_the_rest_loads(tmp_path: Path, name: str) -> None:
    folder = _folder(tmp_path)
    (folder / name).write_bytes(gzip.compress(b"x" * 1000)[:20])       # header, then cut
    store = DuckStore(None)
    report = load_paths([folder], store)
    assert report.rejected == 1, report.reasons
    assert name in report.reasons[0]
    assert _counts(store) == (8, 2, 3)


# -- repeated and overlapping loads -----------------------------------------------------------------

def test_loading_a_folder_twice_stores_everything_once(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    store = DuckStore(tmp_path / "s.duckdb")
    first = load_paths([folder], store)
    store.close()
    store = DuckStore(tmp_path / "s.duckdb")
    again = load_paths([folder], store)
    assert _counts(store) == (8, 2, 3)
    assert first.loaded["spans"] == 8 and "spans" not in again.loaded
    assert again.loaded["files_skipped"] == 3 and again.rejected == 0
    assert sorted(again.reasons) == [f"{n}: already loaded, skipped" for n in ("kernel.log", "metrics.om",
                                                                                 "traces.otlp.jsonl")]
    store.close()


def test_overlapping_copies_and_a_touched_file_do_not_double_count(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    store = DuckStore(None)
    load_paths([folder], store)
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("traces.otlp.jsonl", "kernel.log", "metrics.om"):
        shutil.copy(folder / name, copy / name)        # other paths: fingerprints differ, content does not
    os.utime(folder / "kernel.log", (T0, T0))          # same path, new mtime: loaded again
    report = load_paths([copy, folder / "kernel.log"], store)
    assert report.loaded["spans"] == 8 and report.loaded["events"] == 2 + 2
    assert _counts(store) == (8, 2, 3)                 # deduplicated: (trace, span) and event identity


def test_a_new_inventory_loads_the_same_files_again(tmp_path: Path) -> None:
    # first without inventory: the sample is unresolved; with the inventory it must resolve
    folder = make_folder(tmp_path, "m", inventory=None,
                         files={"metrics.om": temp_line("50", T0) + "\n# EOF\n"})
    store = DuckStore(None)
    load_paths([folder], store)
    assert [k.entity_id for k in store.series_keys()] == [None]
    inv = tmp_path / "inventory.yaml"
    inv.write_text(INVENTORY)
    report = load_paths([inv, folder / "metrics.om"], store)
    assert "files_skipped" not in report.loaded
    assert "node-001/gpu0" in {k.entity_id for k in store.series_keys()}


def test_events_that_differ_are_all_kept(tmp_path: Path) -> None:
    store = DuckStore(None)
    base = Event(T0, "node-001", "gpu", "node-001/gpu0", "xid", "Xid 79", code=79, source="kernel.log:1")
    store.add_events([base, base, Event(T0 + 1, "node-001", "gpu", "node-001/gpu0", "xid", "Xid 79",
                                        code=79, source="kernel.log:2")])
    assert [e.source for e in store.events()] == ["kernel.log:1", "kernel.log:2"]


def test_spans_without_ids_are_never_merged() -> None:
    store = DuckStore(None)
    store.add_spans([Span(None, None, None, "n", T0, T0 + 1, "j", 0, i, None, None) for i in range(3)])  # type: ignore[arg-type]
    assert len(store.spans()) == 3


def test_fingerprint_changes_with_content_and_inventory(tmp_path: Path) -> None:
    path = tmp_path / "m.om"
    path.write_text(temp_line("50", T0) + "\n")
    st = path.stat()
    a = fingerprint(path, "inv")
    path.write_text(temp_line("51", T0) + "\n")       # same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # and same mtime: only the hash differs
    assert fingerprint(path, "inv") != a
    assert fingerprint(path, "inv") != fingerprint(path, "other inv")
    assert fingerprint(path, "inv") == fingerprint(path, "inv")
    assert GPU0_LABELS in path.read_text()
