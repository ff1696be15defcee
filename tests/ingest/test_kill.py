"""kill -9 a real ``suanli ingest`` at many points, run it again: exactly the rows of a clean run.

Each file goes into the database in one transaction with its "loaded" mark and its report, so
the database a killed ingest leaves holds, for each file, either all its rows and its mark or
neither, and running the same ingest again adds exactly what is missing. The deterministic kills
run the real CLI in a child process that sends itself SIGKILL at a chosen call (the n-th commit,
the n-th Arrow batch of a bulk insert, ...); the timed kills stop the installed console script
from outside at points spread over a clean run's duration.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from tests.cli.helpers import ENV, INVENTORY, T0, make_folder, otlp_line, suanli_argv, temp_line
from tests.conftest import shared_path

# The child: install a kill at the n-th call of one function, then run the real CLI.
_CHILD = r"""
import os, signal, sys
import suanli.ingest.bulk_om as bulk_om, suanli.ingest.bulk_otlp as bulk_otlp, suanli.ingest.load as load
from suanli.store.duck import txn
from suanli.store.duck.store import DuckStore

bulk_om.BATCH_ROWS = bulk_otlp.BATCH_ROWS = 8           # many Arrow batches per bulk insert
load.RECORDS_PER_BATCH = 4                              # many appends per streamed file
point, nth = sys.argv[1], int(sys.argv[2])
calls = [0]

def hit():
    calls[0] += 1
    if calls[0] == nth:
        os.kill(os.getpid(), signal.SIGKILL)

def wrap(cls, name, after):
    orig = getattr(cls, name)
    def wrapped(*args, **kwargs):
        if not after:
            hit()
        out = orig(*args, **kwargs)
        if after:
            hit()
        return out
    setattr(cls, name, wrapped)

where = {"commit": (txn.DuckTransaction, "commit", False), "committed": (txn.DuckTransaction, "commit", True),
         "before_COMMIT": (txn.DuckTransaction, "_dedupe", True), "inserted": (txn.DuckTransaction, "_insert", True),
         "batch": (DuckStore, "next_seq", False)}
if point != "none":
    wrap(*where[point])
from suanli.cli import main
sys.argv = ["suanli", *sys.argv[3:]]
main()
"""

POINTS = [
    ("commit", 1),          # the inventory's transaction, before its commit
    ("inserted", 1),        # metrics.om: the bulk insert done, nothing committed
    ("commit", 2),          # metrics.om: every row appended, before the commit
    ("before_COMMIT", 2),   # metrics.om: rows, mark and report written, COMMIT not reached
    ("committed", 2),       # metrics.om committed, traces not begun
    ("batch", 4),           # inside the bulk insert of the spans (batches of 8)
    ("inserted", 4),        # kernel.log: some event batches appended
    ("committed", 4),       # kernel.log committed, trainer.log not
]


def _folder(root: Path) -> Path:
    """200 samples of 2 GPUs, 20 OTLP lines (40 spans), 12 kernel events, 6 trainer iterations."""
    gpu1 = 'gpu="1",UUID="GPU-00000000-0000-0000-0000-000000000002",Hostname="node-001"'
    metrics = [temp_line(str(40 + i % 7), T0 + 15 * i) for i in range(100)]
    metrics += [temp_line(str(50 + i % 5), T0 + 15 * i, gpu1) for i in range(100)]
    traces = [otlp_line(rank, step, T0 + 10 * step) for step in range(10) for rank in range(2)]
    kernel = [f"2026-03-13T11:{7 + i // 60:02d}:{i % 60:02d}.000000+00:00 node-001 kernel: eth{i}: link up"
              for i in range(12)]
    trainer = [f"2026-03-13T11:08:{i:02d}.000000+00:00 node-001 python[42]: iteration {i + 1}/100 | "
               f"elapsed time per iteration (ms): {900 + i}" for i in range(6)]
    return make_folder(root, "f", inventory=INVENTORY, files={
        "metrics.om": "\n".join(metrics) + "\n# EOF\n", "traces.otlp.jsonl": "\n".join(traces) + "\n",
        "kernel.log": "\n".join(kernel) + "\n", "trainer.log": "\n".join(trainer) + "\n"})


def _ingest(folder: Path, db: Path, point: str = "none", nth: int = 0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _CHILD, point, str(nth), "ingest", str(folder), "--db", str(db)],
                          capture_output=True, text=True, timeout=300, env=ENV, check=False)


def _rows(db: Path) -> dict[str, object]:
    """What the database holds, read without suanli: raw row counts (a double load shows), the
    sum of the sample values, and the files marked loaded with how often."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        one = {t: con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in ("series", "samples", "spans")}
        one["value_sum"] = con.execute("SELECT sum(value) FROM samples").fetchall()[0][0]
        for src in ("kernel", "trainer"):
            one[src] = con.execute("SELECT count(*) FROM events WHERE starts_with(source, ?)", [src]).fetchall()[0][0]
        one["files"] = sorted(con.execute("SELECT path, count(*) FROM files GROUP BY path").fetchall())
        one["inventory"] = con.execute("SELECT count(*) FROM meta WHERE key = 'inventory'").fetchall()[0][0]
    finally:
        con.close()
    return one


def _each_file_whole_or_absent(state: dict[str, object], folder: Path) -> None:
    """A file's rows are in the database exactly when its mark is."""
    marked = {Path(p).name for p, _ in state["files"]}  # type: ignore[attr-defined]
    assert (state["samples"] == 200) == ("metrics.om" in marked) and state["samples"] in (0, 200)
    assert (state["spans"] == 40) == ("traces.otlp.jsonl" in marked) and state["spans"] in (0, 40)
    assert (state["kernel"] == 12) == ("kernel.log" in marked) and state["kernel"] in (0, 12)
    assert (state["trainer"] == 6) == ("trainer.log" in marked) and state["trainer"] in (0, 6)


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    root = tmp_path_factory.mktemp("clean")
    folder = _folder(root)
    done = _ingest(folder, root / "clean.duckdb")
    assert done.returncode == 0, done.stderr
    state = _rows(root / "clean.duckdb")
    # worked out from the folder: 2 series, 200 samples, 40 spans, 12 + 6 events, 4 files once each
    assert state["series"] == 2 and state["samples"] == 200 and state["spans"] == 40
    assert state["kernel"] == 12 and state["trainer"] == 6 and state["inventory"] == 1
    assert state["value_sum"] == sum(40 + i % 7 for i in range(100)) + sum(50 + i % 5 for i in range(100))
    assert [n for _, n in state["files"]] == [1, 1, 1, 1]  # type: ignore[attr-defined]
    return folder, state


@pytest.mark.slow
@pytest.mark.parametrize(("point", "nth"), POINTS)
def test_kill_9_then_resume_gives_the_rows_of_a_clean_run(clean: tuple[Path, dict[str, object]],
                                                          tmp_path: Path, point: str, nth: int) -> None:
    folder, expected = clean
    db = tmp_path / "s.duckdb"
    killed = _ingest(folder, db, point, nth)
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr[-2000:])
    state = _rows(db)
    _each_file_whole_or_absent(state, folder)
    resumed = _ingest(folder, db)
    assert resumed.returncode == 0, resumed.stderr
    assert _rows(db) == expected


@pytest.mark.slow
def test_kill_9_from_outside_at_times_spread_over_a_real_ingest(tmp_path: Path) -> None:
    """Three kills at 40, 60 and 80 % of a clean run's time; a run that finished before its kill
    (the machine got faster) is tried again with half the delay, so each kill really lands."""
    folder = shared_path("scenarios", "healthy")
    argv = [*suanli_argv(), "ingest", str(folder), "--db"]
    t0 = time.perf_counter()
    assert subprocess.run([*argv, str(tmp_path / "clean.duckdb")], capture_output=True, env=ENV,
                          timeout=600, check=False).returncode == 0
    wall = time.perf_counter() - t0
    expected = _rows_any(tmp_path / "clean.duckdb")
    killed = 0
    for i, share in enumerate((0.4, 0.6, 0.8)):
        delay = share * wall
        for attempt in range(5):
            db = tmp_path / f"k{i}-{attempt}.duckdb"
            proc = subprocess.Popen([*argv, str(db)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
            try:
                proc.wait(timeout=delay)                   # finished first: no kill this time
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
            landed = proc.wait() == -signal.SIGKILL
            again = subprocess.run([*argv, str(db)], capture_output=True, env=ENV, timeout=600, check=False)
            assert again.returncode == 0, again.stderr
            assert _rows_any(db) == expected
            if landed:
                killed += 1
                break
            delay /= 2
    assert killed == 3


def _rows_any(db: Path) -> tuple[object, ...]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        counts = tuple(con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]
                       for t in ("series", "samples", "spans", "events"))
        files = sorted(con.execute("SELECT path, count(*) FROM files GROUP BY path").fetchall())
        return (*counts, con.execute("SELECT sum(value) FROM samples WHERE isfinite(value)").fetchall()[0][0], files)
    finally:
        con.close()


def test_the_child_kills_itself_only_where_asked(clean: tuple[Path, dict[str, object]], tmp_path: Path) -> None:
    """With the hook set past the last call the child is a plain ingest: the clean run's rows."""
    folder, expected = clean
    done = _ingest(folder, tmp_path / "s.duckdb", "commit", 999)
    assert done.returncode == 0, done.stderr
    assert _rows(tmp_path / "s.duckdb") == expected
