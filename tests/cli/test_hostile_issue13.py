"""Issue 13's reproducers, each through the real console or verb: unbounded numbers in every log
format and in OTLP (both the bulk and the Python reader), year 10000, hostile ``--alerts``
payloads, foreign and newer databases, a database busy with an ingest, times that would poison the
window, a failing analysis, and files that are empty, folders or link loops."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from suanli.store.duck import DuckStore
from suanli.store.duck.schema import DDL
from suanli.store.duck.version import SCHEMA_VERSION
from tests.cli.helpers import T0, assert_one_line_error, invoke, make_folder, otlp_line, temp_line

XID79 = "NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, GPU has fallen off the bus."
XID48 = "NVRM: Xid (PCI:0000:2a:00): 48, pid=1234, name=python, An uncorrectable double bit error"
BIG = "9" * 4301
HEAD = "2026-03-13T11:06:4{s}.000000+00:00 node-001 kernel: "


def run(*args: str | Path, timeout_s: float = 0.0) -> subprocess.CompletedProcess[str]:
    """A verb run in-process (the console script's error handling; faster than a subprocess)."""
    res = invoke(*args)
    return subprocess.CompletedProcess([str(a) for a in args], res.exit_code, res.stdout, res.stderr)


def _kernel(bad: str) -> str:
    """A good Xid 79 line, the bad line, a good Xid 48 (lines 1, 2, 3)."""
    return f"{HEAD.format(s=1)}{XID79}\n{bad}\n{HEAD.format(s=3)}{XID48}\n"


def _metrics() -> str:
    return "\n".join(temp_line("50", T0 + 15 * i) for i in range(5)) + "\n# EOF\n"


def _events(db: Path) -> list[Any]:
    store = DuckStore(db, read_only=True)
    try:
        return store.events()
    finally:
        store.close()


# ------------------------------------------------------------------------ bounded numbers: logs

BAD_LOG_LINES = {
    "xid_2_63": HEAD.format(s=2) + "NVRM: Xid (PCI:0000:18:00): 9223372036854775808, pid=1, GPU gone",
    "xid_4301_digits": HEAD.format(s=2) + f"NVRM: Xid (PCI:0000:18:00): {BIG}, pid=1",
    "sxid": HEAD.format(s=2) + "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 99999999999999999999, Fatal",
    "aer_suppressed": HEAD.format(s=2) + "pcieport 0000:00:01.0: AER: " + "9" * 400 + " Correctable errors suppressed",
    "nccl_rank": "2026-03-13T11:06:42.000000+00:00 node-001 python[1]: [Rank " + "9" * 30 + "] NCCL WARN x",
    "nccl_seq": ("2026-03-13T11:06:42.000000+00:00 node-001 python[1]: ProcessGroupNCCL detected by watchdog at "
                 "work: " + "9" * 25 + ", last enqueued NCCL work: 1, last completed NCCL work: 1"),
    "checkpoint": "2026-03-13T11:06:42.000000+00:00 node-001 python[1]: saving checkpoint at iteration " + BIG,
    "iteration": "2026-03-13T11:06:42.000000+00:00 node-001 python[1]:  iteration " + "9" * 40 + "/ 10 | loss: 1",
    "oom_bytes": ("2026-03-13T11:06:42.000000+00:00 node-001 python[1]: torch.OutOfMemoryError: CUDA out of "
                  "memory. Tried to allocate " + "9" * 400 + " MiB. GPU 0 has a total capacity of 79 GiB"),
    "kmsg": "6," + "9" * 400 + "," + "9" * 400 + ",-;hello",
    "glog_pid": "[" + "9" * 30 + "] [rank0]:[E313 11:06:42.000000 ProcessGroupNCCL.cpp:616] x",
    "journal_pid": "2026-03-13T11:06:42.000000+00:00 node-001 python[" + BIG + "]: hello",
}


@pytest.mark.parametrize("case", sorted(BAD_LOG_LINES))
def test_a_huge_number_in_a_log_line_is_one_reject_and_the_rest_is_kept(tmp_path: Path, case: str) -> None:
    folder = make_folder(tmp_path, "f", files={"kernel.log": _kernel(BAD_LOG_LINES[case])})
    db = tmp_path / "s.duckdb"
    res = run("ingest", folder, "--db", db)
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr and "rejected: kernel.log:2: " in res.stdout, res.stdout
    xids = [e for e in _events(db) if e.kind == "xid"]
    assert [(e.code, e.source) for e in xids] == [(79, "kernel.log:1"), (48, "kernel.log:3")]


def test_year_10000_does_not_crash_and_does_not_stretch_the_window(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, "f", files={"metrics.om": _metrics(),
                                               "kernel.log": _kernel("9999-12-31T23:59:59+00:00 node-001 kernel: hello")})
    res = run("diagnose", folder, "--json")
    assert res.returncode == 0, res.stderr
    window = json.loads(res.stdout)["window"]
    assert window["start"] == "2026-03-13T11:06:40Z" and window["end"] == "2026-03-13T11:07:40Z"


# ------------------------------------------------------------------------ bounded numbers: OTLP

def _step_line(value: dict[str, Any]) -> str:
    doc = json.loads(otlp_line(0, 5, T0 + 50))
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"] = [{"key": "train.step", "value": value}]
    return json.dumps(doc)


OTLP_BAD = {
    "int_2_63": ({"intValue": str(2**63)}, "9223372036854775808"),
    "double_2_63": ({"doubleValue": 2.0**63}, "train.step"),
    "double_infinity": ({"doubleValue": "Infinity"}, "train.step inf"),
    "int_1e400": ({"intValue": "__1e400__"}, "intValue inf"),
}


@pytest.mark.parametrize("gz", [False, True], ids=["bulk-then-python", "python"])
@pytest.mark.parametrize("case", sorted(OTLP_BAD))
def test_an_otlp_step_no_int64_holds_is_one_reject(tmp_path: Path, case: str, gz: bool) -> None:
    import gzip

    value, needle = OTLP_BAD[case]
    good = [otlp_line(r, s, T0 + 10 * s) for s in range(2) for r in range(2)]
    text = "\n".join([*good[:2], _step_line(value).replace('"__1e400__"', "1e400"), *good[2:]]) + "\n"
    name = "traces.otlp.jsonl" + (".gz" if gz else "")
    folder = make_folder(tmp_path, "f", files={name: gzip.compress(text.encode()) if gz else text})
    db = tmp_path / "s.duckdb"
    res = run("ingest", folder, "--db", db)
    assert res.returncode == 0, res.stderr
    assert f"rejected: {name}:3: " in res.stdout and needle in res.stdout, res.stdout
    store = DuckStore(db, read_only=True)
    try:
        spans = store.spans()
    finally:
        store.close()
    assert len(spans) == 4 * 2 + 1          # 4 good lines of 2 spans, and the bad line's forward child
    assert sorted(set(spans.step.tolist())) == [-1, 0, 1]     # the child's step span is gone: no step (-1)


# ------------------------------------------------------------------------------------ --alerts

ALERTS_BAD = {
    "starts_at_not_a_time": (json.dumps({"alerts": [{"labels": {"a": "b"}, "startsAt": "yesterday"}]}).encode(),
                             ("alerts.json", "payload 0.alerts[0].startsAt", "not a time")),
    "starts_at_year_1e6": (json.dumps({"alerts": [{"startsAt": 1e300}]}).encode(), ("startsAt", "not a time")),
    "labels_a_list": (json.dumps({"alerts": [{"labels": ["a", "b"]}]}).encode(), ("alerts[0].labels",)),
    "alert_a_string": (json.dumps({"alerts": ["x"]}).encode(), ("alerts[0]", "object")),
    "not_utf8": (b'{"alerts": [{"labels": {"a": "\xff\xfe"}}]}', ("alerts.json:1", "not UTF-8")),
    "json_lines_bad_second": (b'{"alerts": []}\n{"alerts": [{"endsAt": "soon"}]}\n', ("alerts.json:2", "endsAt")),
}


@pytest.mark.parametrize("case", sorted(ALERTS_BAD))
def test_hostile_alert_payloads_are_one_line(tmp_path: Path, case: str) -> None:
    data, needles = ALERTS_BAD[case]
    folder = make_folder(tmp_path, "f", files={"metrics.om": _metrics()})
    alerts = tmp_path / "alerts.json"
    alerts.write_bytes(data)
    res = run("diagnose", folder, "--json", "--alerts", alerts)
    assert_one_line_error(res.returncode, res.stderr, *needles)


# ----------------------------------------------------------------------------------- databases

def _tables(db: Path) -> list[str]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return sorted(str(r[0]) for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall())
    finally:
        con.close()


def test_a_foreign_duckdb_file_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    db = tmp_path / "theirs.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE samples (sensor INTEGER, reading VARCHAR)")
    con.execute("INSERT INTO samples VALUES (1, 'x')")
    con.close()
    folder = make_folder(tmp_path, "f", files={"metrics.om": _metrics()})
    for verb in (["ingest", folder], ["diagnose"], ["check"]):
        res = run(*verb, "--db", db)
        assert_one_line_error(res.returncode, res.stderr, str(db), "not a suanli store", "samples")
    assert _tables(db) == ["samples"]                        # nothing of suanli's was created in it


def test_a_newer_schema_is_refused_and_an_old_store_is_migrated(tmp_path: Path) -> None:
    newer = tmp_path / "newer.duckdb"
    DuckStore(newer).close()
    con = duckdb.connect(str(newer))
    con.execute(f"UPDATE suanli_schema SET version = {SCHEMA_VERSION + 1}")
    con.close()
    res = run("check", "--db", newer)
    assert_one_line_error(res.returncode, res.stderr, "newer suanli", f"schema version {SCHEMA_VERSION + 1}")
    old = tmp_path / "v0.duckdb"                              # a store written before the mark existed
    con = duckdb.connect(str(old))
    con.execute(DDL)
    con.execute("INSERT INTO files VALUES ('fp', '/x/metrics.om', 1)")
    con.close()
    res = run("diagnose", "--db", old)                        # read-only: refused, says what to do
    assert_one_line_error(res.returncode, res.stderr, "schema version 0", "suanli ingest")
    store = DuckStore(old)
    try:
        assert store.schema_version == SCHEMA_VERSION and store.loaded_files() == ["/x/metrics.om"]
    finally:
        store.close()
    assert "suanli_schema" in _tables(old)


HOLD = """
import sys, time
from suanli.store.duck import DuckStore
s = DuckStore(sys.argv[1])
print("open", flush=True)
time.sleep(60)
"""


def test_diagnose_opens_read_only_and_says_plainly_when_an_ingest_holds_the_file(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, "f", files={"metrics.om": _metrics()})
    db = tmp_path / "s.duckdb"
    assert run("ingest", folder, "--db", db).returncode == 0
    before = (db.read_bytes(), db.stat().st_mtime_ns)
    res = run("diagnose", "--db", db, "--json")
    assert res.returncode == 0, res.stderr
    assert (db.read_bytes(), db.stat().st_mtime_ns) == before     # read-only: not one byte written
    writer = subprocess.Popen([sys.executable, "-c", HOLD, str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "open"
        for verb in (["diagnose", "--db", db], ["check", "--db", db]):
            busy = run(*verb)
            assert_one_line_error(busy.returncode, busy.stderr, str(db), "busy", "another process")
    finally:
        writer.kill()
        writer.wait()


# ---------------------------------------------------------------------------------------- times

def _window(res: subprocess.CompletedProcess[str]) -> tuple[str, str]:
    assert res.returncode == 0, res.stderr
    w = json.loads(res.stdout)["window"]
    return w["start"], w["end"]


def test_a_log_starting_without_a_time_does_not_poison_the_window(tmp_path: Path) -> None:
    # issue 13: the first record got a NaN time, the window end became NaN ("end": null)
    kernel = f"NVRM: a line without a timestamp, as after rotation\n{HEAD.format(s=3)}{XID79}\n"
    folder = make_folder(tmp_path, "f", files={"metrics.om": _metrics(), "kernel.log": kernel})
    assert _window(run("diagnose", folder, "--json")) == ("2026-03-13T11:06:40Z", "2026-03-13T11:07:40Z")
    doc = json.loads(run("diagnose", folder, "--json").stdout)
    assert {(i["category"], i["root_cause"]["id"]) for i in doc["incidents"]} == {("gpu_lost", "node-001/gpu0")}


def test_one_stray_time_does_not_refuse_the_folder(tmp_path: Path) -> None:
    # issue 13: one span in 1970 or 2300, or one log line in 2099, made diagnose refuse all (exit 2)
    spans = [otlp_line(0, 0, T0 + 5), otlp_line(0, 1, 0.5), otlp_line(0, 2, 10_413_792_000.0)]   # 2026, 1970, 2300
    kernel = f"{HEAD.format(s=1)}{XID79}\n2099-01-01T00:00:00.000000+00:00 node-001 kernel: clock jumped\n"
    folder = make_folder(tmp_path, "f", files={"metrics.om": _metrics(), "kernel.log": kernel,
                                               "traces.otlp.jsonl": "\n".join(spans) + "\n"})
    assert _window(run("diagnose", folder, "--json")) == ("2026-03-13T11:06:40Z", "2026-03-13T11:07:40Z")


# --------------------------------------------------------------------------------- analyses

def test_a_failing_analysis_is_exit_1_and_the_others_are_reported(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from suanli.analysis import fabric

    def broken(*_: object, **__: object) -> None:
        raise ZeroDivisionError("division by zero in a detector")

    monkeypatch.setattr(fabric, "analyze", broken)              # a bug in one analysis
    folder = make_folder(tmp_path, "f", files={"metrics.om": _metrics(), "kernel.log": f"{HEAD.format(s=1)}{XID79}\n"})
    res = invoke("diagnose", folder, "--json")
    assert res.exit_code == 1
    doc = json.loads(res.stdout)                                 # the other analyses' results are there
    assert {(i["category"], i["root_cause"]["id"]) for i in doc["incidents"]} == {("gpu_lost", "node-001/gpu0")}
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert lines == ["analysis error: fabric: ZeroDivisionError: division by zero in a detector (run with --debug "
                     "for a traceback)"]
    assert "Traceback" not in res.stderr


def test_serve_once_says_a_failing_analysis_as_diagnose_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from suanli.analysis import fabric

    def broken(*_: object, **__: object) -> None:
        raise ZeroDivisionError("division by zero in a detector")

    folder = make_folder(tmp_path, "f", files={"metrics.om": _metrics(), "kernel.log": f"{HEAD.format(s=1)}{XID79}\n"})
    db = tmp_path / "s.duckdb"
    assert invoke("ingest", folder, "--db", db).exit_code == 0
    monkeypatch.setattr(fabric, "analyze", broken)
    res = invoke("serve", "--db", db, "--once", "--json")
    assert res.exit_code == 1
    doc = json.loads(res.stdout)
    assert [(i["category"], i["root_cause"]["id"]) for i in doc["incidents"]] == [("gpu_lost", "node-001/gpu0")]
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("analysis error")]
    assert errors == ["analysis error: fabric: ZeroDivisionError: division by zero in a detector (run with --debug "
                      "for a traceback)"]


# ------------------------------------------------------------------------ empty, folder, loop

def test_empty_files_folders_and_link_loops_are_warnings_not_silence_or_a_hang(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, "f", files={"metrics.om": _metrics(), "trainer.log": ""})
    (folder / "traces.otlp.jsonl").mkdir()
    (folder / "kernel.log").symlink_to(folder / "kernel.log")
    (folder / "a.log").symlink_to(folder / "b.log")
    (folder / "b.log").symlink_to(folder / "a.log")
    t0 = time.monotonic()
    res = run("diagnose", folder, "--json")
    assert res.returncode == 0, res.stderr
    warnings = sorted(ln for ln in res.stderr.splitlines() if ln.startswith("warning: "))
    assert warnings == [
        f"warning: {folder}/a.log: a symbolic link that leads nowhere (a loop or a missing target), skipped",
        f"warning: {folder}/b.log: a symbolic link that leads nowhere (a loop or a missing target), skipped",
        f"warning: {folder}/kernel.log: a symbolic link that leads nowhere (a loop or a missing target), skipped",
        f"warning: {folder}/traces.otlp.jsonl: a folder, not a file, skipped",
        f"warning: {folder}/trainer.log: empty, skipped"]
    db = tmp_path / "s.duckdb"
    ing = run("ingest", folder, "--db", db)
    assert ing.returncode == 0 and ing.stdout.count("skipped: ") == 5, ing.stdout
    assert time.monotonic() - t0 < 120 and math.isfinite(t0)
    loop = run("ingest", folder / "kernel.log", "--db", db)
    assert_one_line_error(loop.returncode, loop.stderr, "kernel.log", "a symbolic link that leads nowhere")


def test_a_crash_keeps_a_new_database_that_holds_good_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 13: with a new database, a crash deleted the file, and the good records of the whole run
    from suanli.ingest import load

    def crash(*_: object, **__: object) -> None:
        raise RuntimeError("a bug in the log reader")

    monkeypatch.setattr(load, "read_log", crash)                  # metrics load first, then the log crashes
    folder = make_folder(tmp_path, "f", files={"metrics.om": _metrics(), "kernel.log": f"{HEAD.format(s=1)}{XID79}\n"})
    db = tmp_path / "new.duckdb"
    res = run("ingest", folder, "--db", db)
    assert res.returncode == 1 and "RuntimeError: a bug in the log reader" in res.stderr
    store = DuckStore(db, read_only=True)
    try:
        assert [Path(p).name for p in store.loaded_files()] == ["metrics.om"]
        assert sum(len(s.ts) for s in store.series("DCGM_FI_DEV_GPU_TEMP")) == 5
    finally:
        store.close()
    empty = tmp_path / "empty.duckdb"                              # nothing committed: no file left behind
    bad = make_folder(tmp_path, "g", files={"kernel.log": f"{HEAD.format(s=1)}{XID79}\n"})
    assert run("ingest", bad, "--db", empty).returncode == 1
    assert not empty.exists()
