"""Hostile input at 3 a.m.: every bad file or flag is exit 2 with one stderr line naming where, or
exit 0 keeping the good records where the format allows partial loading. Never a traceback."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from suanli.store.duck import DuckStore
from tests.cli.helpers import (
    GPU0_LABELS,
    T0,
    UUID1,
    assert_one_line_error,
    invoke,
    make_folder,
    otlp_line,
    run,
    temp_line,
)

XID79 = "NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, GPU has fallen off the bus."


def _db_series(db: Path) -> dict[tuple[tuple[str, str], ...], tuple[list[float], list[float]]]:
    store = DuckStore(db)
    try:
        return {s.key.labels: (s.ts.tolist(), s.values.tolist()) for s in store.series("DCGM_FI_DEV_GPU_TEMP")}
    finally:
        store.close()


# ------------------------------------------------------------------------------- inventory

def test_folder_without_inventory_is_exit_2_for_diagnose(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, "noinv", inventory=None, files={"metrics.om": temp_line("50", T0) + "\n# EOF\n"})
    res = invoke("diagnose", folder, "--json")
    assert_one_line_error(res.exit_code, res.stderr, "inventory.yaml", "missing")
    assert res.stdout == ""


def test_folder_without_inventory_ingests_unresolved(tmp_path: Path) -> None:
    # ingest may load a folder before its inventory: the series is kept and counted unresolved
    folder = make_folder(tmp_path, "noinv", inventory=None, files={"metrics.om": temp_line("50", T0) + "\n# EOF\n"})
    db = tmp_path / "x.duckdb"
    res = invoke("ingest", folder, "--db", db)
    assert res.exit_code == 0, res.stderr
    assert "no inventory" in res.stderr and "unresolved" in res.stderr  # a warning, not silence
    store = DuckStore(db)
    try:
        assert len(store.unresolved_series()) == 1
    finally:
        store.close()


BAD_INVENTORIES = {
    "not_yaml": ("cluster: [unclosed\n  racks: {\n", ("inventory.yaml:", "YAML")),
    "empty": ("", ("inventory.yaml", "empty")),
    "a_list": ("- a\n- b\n", ("inventory.yaml:1", "mapping")),
    "no_cluster": ("racks: []\n", ("inventory.yaml", "cluster", "missing")),
    "gpu_without_uuid": (
        "cluster: c\nracks:\n  - id: rack-01\n    nodes:\n      - id: node-001\n        gpus:\n"
        "          - {index: 0, model: H100-SXM}\n",
        ("inventory.yaml:7", "racks[0].nodes[0].gpus[0].uuid", "missing")),
    "python_tag": ("cluster: !!python/object/apply:os.system ['true']\n", ("inventory.yaml:1", "YAML")),
}


@pytest.mark.parametrize("verb", ["diagnose", "ingest"])
@pytest.mark.parametrize("case", sorted(BAD_INVENTORIES))
def test_bad_inventory_is_one_line_naming_the_key(tmp_path: Path, case: str, verb: str) -> None:
    text, needles = BAD_INVENTORIES[case]
    folder = make_folder(tmp_path, case, inventory=text, files={"metrics.om": temp_line("50", T0) + "\n# EOF\n"})
    db = tmp_path / "x.duckdb"
    res = invoke("diagnose", folder, "--json") if verb == "diagnose" else invoke("ingest", folder, "--db", db)
    assert_one_line_error(res.exit_code, res.stderr, *needles)
    assert not db.exists(), "a failed ingest must not leave a half-made database behind"


def test_inventory_that_is_a_folder(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, "invdir", inventory=None)
    (folder / "inventory.yaml").mkdir()
    res = invoke("diagnose", folder)
    assert_one_line_error(res.exit_code, res.stderr, "inventory.yaml")


def test_inventory_with_invalid_utf8(tmp_path: Path) -> None:
    from tests.cli.helpers import INVENTORY

    folder = make_folder(tmp_path, "inv8", inventory=INVENTORY.encode() + b"notes: caf\xe9 \xff\n")
    res = invoke("diagnose", folder, "--json")
    assert_one_line_error(res.exit_code, res.stderr, "inventory.yaml")


# --------------------------------------------------------------------------------- metrics

def test_garbage_and_truncated_metrics_keep_the_good_samples(tmp_path: Path) -> None:
    good = [temp_line(str(50 + i), T0 + 15 * i) for i in range(10)]
    lines = ["# TYPE DCGM_FI_DEV_GPU_TEMP gauge", *good[:3], "this is garbage", *good[3:5],
             'DCGM_FI_DEV_GPU_TEMP{gpu="0" 12 13', *good[5:7], "\x00\x01\x02 binary", *good[7:]]
    # line numbers (1-based): garbage 5, broken labels 8, binary 11; the cut line is 15, without EOF
    text = "\n".join(lines) + '\nDCGM_FI_DEV_GPU_TEMP{gpu="0",UU'
    folder = make_folder(tmp_path, "om", files={"metrics.om": text})
    db = tmp_path / "x.duckdb"
    res = invoke("ingest", folder, "--db", db)
    assert res.exit_code == 0, res.stderr
    for lineno in (5, 8, 11, 15):
        assert f"metrics.om:{lineno}:" in res.stdout, lineno
    series = _db_series(db)
    assert len(series) == 1
    ts, values = next(iter(series.values()))
    # 10 good lines written, 4 bad: exactly the 10 good samples survive, in order
    assert ts == [T0 + 15 * i for i in range(10)]
    assert values == [50.0 + i for i in range(10)]


def test_nan_inf_and_a_100kb_label_value(tmp_path: Path) -> None:
    big = "x" * 100_000
    lines = ["# TYPE DCGM_FI_DEV_GPU_TEMP gauge", temp_line("NaN", T0), temp_line("+Inf", T0 + 15),
             temp_line("-Inf", T0 + 30), temp_line("55", T0 + 45),
             temp_line("56", T0 + 60, labels=f'{GPU0_LABELS},note="{big}"'), "# EOF", ""]
    folder = make_folder(tmp_path, "nan", files={"metrics.om": "\n".join(lines)})
    db = tmp_path / "x.duckdb"
    res = invoke("ingest", folder, "--db", db)
    assert res.exit_code == 0, res.stderr
    series = _db_series(db)
    plain = series[(("Hostname", "node-001"), ("UUID", "GPU-00000000-0000-0000-0000-000000000001"), ("gpu", "0"))]
    assert plain[0] == [T0, T0 + 15, T0 + 30, T0 + 45]
    assert not np.isfinite(plain[1][:3]).any() and plain[1][3] == 55.0
    assert sum(len(t) for t, _ in series.values()) == 5  # the big-label sample is kept too
    diag = invoke("diagnose", "--db", db, "--json")
    assert diag.exit_code == 0, diag.stderr
    assert json.loads(diag.stdout)["incidents"] == []


def test_unknown_gpu_uuid_is_kept_and_counted_unresolved(tmp_path: Path) -> None:
    stray = 'gpu="0",UUID="GPU-deadbeef-0000-0000-0000-000000000009",Hostname="node-999"'
    text = "\n".join([temp_line("50", T0), temp_line("57", T0, labels=stray), "# EOF", ""])
    folder = make_folder(tmp_path, "stray", files={"metrics.om": text})
    db = tmp_path / "x.duckdb"
    assert invoke("ingest", folder, "--db", db).exit_code == 0
    store = DuckStore(db)
    try:
        unresolved = store.unresolved_series()
    finally:
        store.close()
    assert [dict(k.labels)["UUID"] for k in unresolved] == ["GPU-deadbeef-0000-0000-0000-000000000009"]
    check = invoke("check", "--db", db)
    assert check.exit_code == 3, check.stderr      # spec/cli.md: check exits 3 when it found problems
    assert "GPU-deadbeef-0000-0000-0000-000000000009" in check.stdout or "node-999" in check.stdout


def test_last_line_cut_in_the_timestamp_is_not_loaded(tmp_path: Path) -> None:
    text = "\n".join(temp_line(str(50 + i), T0 + 15 * i) for i in range(4)) + f"\n{temp_line('59', T0 + 60)[:-5]}"
    folder = make_folder(tmp_path, "cut", files={"metrics.om": text})
    db = tmp_path / "x.duckdb"
    assert invoke("ingest", folder, "--db", db).exit_code == 0
    ts, _ = next(iter(_db_series(db).values()))
    assert ts == [T0 + 15 * i for i in range(4)]


def test_one_stray_1970_sample_is_rejected_and_does_not_stretch_the_window(tmp_path: Path) -> None:
    # a sample at t=17734 s (1970: an exporter without a clock) is rejected on ingest, so it cannot
    # stretch the window to 56 years: diagnose analyses the good samples' window at once
    text = "\n".join([temp_line("50", 17734), temp_line("51", T0), temp_line("52", T0 + 15), "# EOF", ""])
    folder = make_folder(tmp_path, "stray", files={"metrics.om": text})
    proc = run("diagnose", folder, "--json", timeout_s=60)
    assert proc.returncode == 0, proc.stderr
    window = json.loads(proc.stdout)["window"]
    assert window == {"start": "2026-03-13T11:06:40Z", "end": "2026-03-13T11:06:55Z"}
    res = invoke("diagnose", folder, "--json", "--start", "2026-03-13T11:00:00Z", "--end", "2026-03-13T11:10:00Z")
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["window"] == {"start": "2026-03-13T11:00:00Z", "end": "2026-03-13T11:10:00Z"}


def test_a_sample_at_t_1e300_does_not_overflow_diagnose(tmp_path: Path) -> None:
    text = "\n".join([temp_line("50", T0), f"DCGM_FI_DEV_GPU_TEMP{{{GPU0_LABELS}}} 51 1e300", "# EOF", ""])
    folder = make_folder(tmp_path, "far", files={"metrics.om": text})
    res = invoke("diagnose", folder, "--json")
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["window"]["start"] == "2026-03-13T11:06:40Z"


def test_a_sample_at_t_1e300_is_rejected_on_ingest(tmp_path: Path) -> None:
    text = "\n".join([temp_line("50", T0), f"DCGM_FI_DEV_GPU_TEMP{{{GPU0_LABELS}}} 51 1e300", "# EOF", ""])
    folder = make_folder(tmp_path, "far", files={"metrics.om": text})
    db = tmp_path / "x.duckdb"
    res = invoke("ingest", folder, "--db", db)
    assert res.exit_code == 0, res.stderr
    assert "metrics.om:2:" in res.stdout
    assert next(iter(_db_series(db).values()))[0] == [T0]


def test_corrupt_gzip_metrics(tmp_path: Path) -> None:
    kernel = f"2026-03-13T11:06:41.000000+00:00 node-001 kernel: {XID79}\n"
    folder = make_folder(tmp_path, "gz", files={"metrics.om.gz": gzip.compress(b"x" * 100)[:20],
                                                "kernel.log": kernel})
    db = tmp_path / "x.duckdb"
    res = invoke("ingest", folder, "--db", db)
    assert "Traceback" not in res.stderr
    # docs/ingest.md: a cut .gz is one reject naming it; the other files load: exit 0, not 2
    assert res.exit_code == 0, res.stderr
    assert "metrics.om.gz:1: unreadable" in res.stdout + res.stderr
    store = DuckStore(db)
    try:
        assert [e.code for e in store.events() if e.kind == "xid"] == [79]
    finally:
        store.close()
    assert "metrics.om.gz" in (res.stdout + res.stderr)


# ----------------------------------------------------------------------------- traces, logs

@pytest.fixture(scope="module")
def spans_and_logs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, str]]:
    """A folder with 6 OTLP lines (2 ranks x 3 steps, 2 spans each) around a line of binary junk,
    and a kernel.log whose middle line is not UTF-8; ingested into a database."""
    root = tmp_path_factory.mktemp("tl")
    lines = [otlp_line(rank, step, T0 + 10 * step).encode() for step in range(3) for rank in range(2)]
    junk = bytes(range(256)).replace(b"\n", b"")
    traces = b"\n".join([*lines[:3], junk, *lines[3:]]) + b"\n"
    kernel = (f"2026-03-13T11:06:41.000000+00:00 node-001 kernel: {XID79}\n".encode()
              + b"2026-03-13T11:06:42.000000+00:00 node-001 kernel: bad \xff\xfe\xc3 bytes\n"
              + b"2026-03-13T11:06:43.000000+00:00 node-001 kernel: eth0: link up\n")
    folder = make_folder(root, "tl", files={"traces.otlp.jsonl": traces, "kernel.log": kernel})
    db = root / "tl.duckdb"
    res = invoke("ingest", folder, "--db", db)
    assert res.exit_code == 0, res.stderr
    yield folder, db, res.stdout


def test_binary_line_in_traces_keeps_the_other_spans(spans_and_logs: tuple[Path, Path, str]) -> None:
    _, db, stdout = spans_and_logs
    assert "traces.otlp.jsonl:4:" in stdout  # the junk is line 4
    store = DuckStore(db)
    try:
        assert len(store.spans()) == 12  # 6 lines x 2 spans
    finally:
        store.close()


def test_kernel_log_with_invalid_utf8(spans_and_logs: tuple[Path, Path, str]) -> None:
    _, db, _ = spans_and_logs
    store = DuckStore(db)
    try:
        events = store.events()
    finally:
        store.close()
    assert len(events) == 3
    diag = invoke("diagnose", "--db", db, "--json")
    assert diag.exit_code == 0, diag.stderr
    # Xid 79 at PCI 0000:18:00 = node-001/gpu0 in the inventory -> gpu_lost there (taxonomy)
    found = {(i["category"], i["root_cause"]["id"]) for i in json.loads(diag.stdout)["incidents"]}
    assert found == {("gpu_lost", "node-001/gpu0")}


def _counts(db: Path) -> tuple[int, int, int]:
    store = DuckStore(db)
    try:
        return len(store.spans()), len(store.events()), sum(len(s.ts) for s in store.series("DCGM_FI_DEV_GPU_TEMP"))
    finally:
        store.close()


def test_reingesting_the_same_samples_stores_them_once(spans_and_logs: tuple[Path, Path, str], tmp_path: Path) -> None:
    folder, _, _ = spans_and_logs
    extra = make_folder(tmp_path, "m", inventory=None, files={"metrics.om": temp_line("50", T0) + "\n# EOF\n"})
    db = tmp_path / "twice.duckdb"
    for _ in range(2):
        res = invoke("ingest", folder, extra / "metrics.om", "--db", db)
        assert res.exit_code == 0, res.stderr
    assert _counts(db)[2] == 1  # spec: the last write for a (series, timestamp) wins


def test_reingesting_the_same_spans_stores_them_once(spans_and_logs: tuple[Path, Path, str], tmp_path: Path) -> None:
    folder, _, _ = spans_and_logs
    db = tmp_path / "twice.duckdb"
    for _ in range(2):
        assert invoke("ingest", folder, "--db", db).exit_code == 0
    assert _counts(db)[0] == 12


def test_reingesting_the_same_log_stores_its_events_once(spans_and_logs: tuple[Path, Path, str],
                                                         tmp_path: Path) -> None:
    folder, _, _ = spans_and_logs
    db = tmp_path / "twice.duckdb"
    for _ in range(2):
        assert invoke("ingest", folder, "--db", db).exit_code == 0
    assert _counts(db)[1] == 3


# ------------------------------------------------------------------------------- flags, ids

@pytest.mark.parametrize(("flags", "needles"), [
    (["--start", "yesterday"], ("--start", "yesterday")),
    (["--end", "2026-13-45T00:00:00Z"], ("--end", "2026-13-45")),
    (["--start", "nan"], ("--start", "nan")),
    (["--start", "2026-03-13T11:07:10Z", "--end", "2026-03-13T11:06:40Z"], ("--start", "after", "--end")),
])
def test_bad_window_flags(spans_and_logs: tuple[Path, Path, str], flags: list[str], needles: tuple[str, ...]) -> None:
    _, db, _ = spans_and_logs
    res = invoke("diagnose", "--db", db, "--json", *flags)
    assert_one_line_error(res.exit_code, res.stderr, *needles)


def test_rca_bad_start(spans_and_logs: tuple[Path, Path, str], tmp_path: Path) -> None:
    _, db, _ = spans_and_logs
    res = invoke("rca", "--job", "tiny-job", "--start", "soon", "--end", "2026-03-13T11:07:10Z",
                 "--out", tmp_path / "r.html", "--db", db)
    assert_one_line_error(res.exit_code, res.stderr, "--start", "soon")


@pytest.mark.parametrize("verb", [["diagnose", "--json"], ["check"],
                                  ["gpu-override", "node-001/gpu0", "--state", "retired", "--reason", "x"]])
def test_db_that_does_not_exist(tmp_path: Path, verb: list[str]) -> None:
    db = tmp_path / "nope.duckdb"
    res = invoke(*verb, "--db", db)
    assert_one_line_error(res.exit_code, res.stderr, str(db), "no such database")
    assert not db.exists()


@pytest.mark.parametrize("verb", [["diagnose", "--json"], ["check"], ["ingest"]])
def test_db_that_is_not_a_database(tmp_path: Path, spans_and_logs: tuple[Path, Path, str], verb: list[str]) -> None:
    db = tmp_path / "notes.duckdb"
    db.write_text("hello\n")
    args = [*verb, spans_and_logs[0]] if verb == ["ingest"] else verb
    res = invoke(*args, "--db", db)
    assert_one_line_error(res.exit_code, res.stderr, str(db))
    assert db.read_text() == "hello\n"  # not overwritten


def test_db_in_a_folder_that_does_not_exist(tmp_path: Path, spans_and_logs: tuple[Path, Path, str]) -> None:
    db = tmp_path / "no" / "such" / "x.duckdb"
    res = invoke("ingest", spans_and_logs[0], "--db", db)
    assert_one_line_error(res.exit_code, res.stderr, str(db), "does not exist")


def test_db_that_is_a_folder(tmp_path: Path) -> None:
    res = invoke("diagnose", "--db", tmp_path)
    assert_one_line_error(res.exit_code, res.stderr, str(tmp_path), "folder")


def test_ingest_a_path_that_does_not_exist(tmp_path: Path) -> None:
    res = invoke("ingest", tmp_path / "nope", "--db", tmp_path / "x.duckdb")
    assert_one_line_error(res.exit_code, res.stderr, "nope")
    assert not (tmp_path / "x.duckdb").exists()


def test_simulate_unknown_scenario_lists_the_valid_ones(tmp_path: Path) -> None:
    res = invoke("simulate", "--scenario", "nope", "--out", tmp_path / "out")
    line = assert_one_line_error(res.exit_code, res.stderr, "nope")
    for name in ("healthy", "switch_port_errors", "pcie_riser"):  # the spec's public scenario names
        assert name in line
    assert not (tmp_path / "out").exists()


def test_simulate_out_is_a_file(tmp_path: Path) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("keep me\n")
    res = invoke("simulate", "--scenario", "healthy", "--out", target, "--nodes", "2", "--minutes", "1")
    assert_one_line_error(res.exit_code, res.stderr, str(target), "--out")
    assert target.read_text() == "keep me\n"


def test_ingest_an_explicit_file_of_unknown_kind(tmp_path: Path) -> None:
    path = tmp_path / "notes.csv"
    path.write_text("a,b\n1,2\n")
    res = invoke("ingest", path, "--db", tmp_path / "x.duckdb")
    assert_one_line_error(res.exit_code, res.stderr, "notes.csv")


def test_rules_export_unknown_format() -> None:
    res = invoke("rules", "export", "--format", "nope")
    assert_one_line_error(res.exit_code, res.stderr, "--format", "nope", "prometheus", "alertmanager")
    assert res.stdout == ""


def test_rca_unknown_job(spans_and_logs: tuple[Path, Path, str], tmp_path: Path) -> None:
    _, db, _ = spans_and_logs
    out = tmp_path / "r.html"
    res = invoke("rca", "--job", "unknown", "--start", "2026-03-13T11:06:40Z", "--end", "2026-03-13T11:07:10Z",
                 "--out", out, "--db", db)
    assert_one_line_error(res.exit_code, res.stderr, "unknown", "tiny-job")
    assert not out.exists()


@pytest.mark.parametrize(("gpu", "state", "needles"), [
    ("node-009/gpu3", "retired", ("node-009/gpu3", "no such GPU")),
    ("GPU-ffffffff-0000-0000-0000-000000000000", "retired", ("GPU-ffffffff",)),
    ("node-001/gpu1", "broken", ("--state", "broken")),
])
def test_gpu_override_bad_input(tmp_path: Path, spans_and_logs: tuple[Path, Path, str], gpu: str, state: str,
                                needles: tuple[str, ...]) -> None:
    _, db, _ = spans_and_logs
    log = db.with_suffix(".overrides.jsonl")
    before = log.read_text() if log.exists() else None
    res = invoke("gpu-override", gpu, "--state", state, "--reason", "test", "--db", db)
    assert_one_line_error(res.exit_code, res.stderr, *needles)
    assert (log.read_text() if log.exists() else None) == before  # nothing appended


def test_gpu_override_by_uuid_is_audited(tmp_path: Path, spans_and_logs: tuple[Path, Path, str]) -> None:
    folder, _, _ = spans_and_logs
    db = tmp_path / "o.duckdb"
    assert invoke("ingest", folder, "--db", db).exit_code == 0
    res = invoke("gpu-override", UUID1, "--state", "retired", "--reason", "riser reseated", "--who", "sre", "--db", db)
    assert res.exit_code == 0, res.stderr
    entries = [json.loads(ln) for ln in db.with_suffix(".overrides.jsonl").read_text().splitlines()]
    assert [(e["gpu_id"], e["state"], e["reason"], e["who"]) for e in entries] == [
        ("node-001/gpu1", "retired", "riser reseated", "sre")]


def test_diagnose_with_a_rule_file_that_does_not_exist(spans_and_logs: tuple[Path, Path, str], tmp_path: Path) -> None:
    _, db, _ = spans_and_logs
    res = invoke("diagnose", "--db", db, "--json", "--rules", tmp_path / "nope.yaml")
    assert_one_line_error(res.exit_code, res.stderr, "nope.yaml")
    assert res.stdout == ""


# --------------------------------------------------------------------------- internal errors

def test_internal_error_is_one_line_and_traceback_only_with_debug(monkeypatch: pytest.MonkeyPatch) -> None:
    import suanli.cli.rules

    def boom(*_: object) -> int:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(suanli.cli.rules, "rules_check_cmd", boom)
    res = invoke("rules", "check")
    lines = res.stderr.strip().splitlines()
    assert res.exit_code == 1
    assert len(lines) == 1 and "disk on fire" in lines[0] and "--debug" in lines[0]
    assert "Traceback" not in res.stderr
    debug = invoke("--debug", "rules", "check")
    assert debug.exit_code == 1
    assert "Traceback" in debug.stderr and "disk on fire" in debug.stderr


def test_subprocess_errors_have_no_traceback(tmp_path: Path) -> None:
    """The same through the real console script (the process's own stderr)."""
    folder = make_folder(tmp_path, "noinv", inventory=None)
    proc = run("diagnose", folder, "--json")
    assert_one_line_error(proc.returncode, proc.stderr, "inventory.yaml")
    assert proc.stdout == ""
    env_db = tmp_path / "nope.duckdb"
    proc = run("check", "--db", env_db)
    assert_one_line_error(proc.returncode, proc.stderr, str(env_db))
    assert os.listdir(tmp_path) == ["noinv"]
