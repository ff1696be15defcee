"""End-to-end speed at the sizes users run: a simulated cluster hour through the CLI.

Writes a ``mixed_port_thermal`` scenario (two faults) of N nodes for M minutes with
``suanli simulate``, then runs, each as a child process (wall time including start-up, peak RSS
from ``getrusage(RUSAGE_CHILDREN)`` of a wrapper):

1. ``suanli ingest DIR --db X`` (metrics, spans, logs into a DuckDB file);
2. ``suanli diagnose --db X --json`` (the analyses over the loaded database);
3. ``suanli diagnose DIR --json`` (the folder straight through: ingest into a scratch database,
   then the analyses);

checks that the diagnosis names both injected faults (category and root id from truth.json), and
samples where step 2's time goes in process (the innermost suanli module on the main thread's
stack every 5 ms, and the store's reads by method).

    python bench/scale.py [--nodes 128] [--minutes 60] [--folder DIR]   # --folder: reuse a written one

Writes ``bench/results/scale.md``. Targets (issue 18): a 128-node hour diagnosed in under 10 s from a
loaded database and under 20 s from the folder; a 1,280-node hour in under 2 minutes and 8 GB.
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _sweep import Sampler  # noqa: E402  (bench/ is not a package)
from ingest import run_child  # noqa: E402

RESULTS = HERE / "results" / "scale.md"
CLI = [sys.executable, "-m", "suanli.cli"]


def _to_file(cmd: list[str], out: Path) -> dict[str, Any]:
    """``run_child`` with the command's stdout in ``out`` (the wrapper keeps only its tail)."""
    return run_child(["sh", "-c", f"{shlex.join(cmd)} > {shlex.quote(str(out))}"])


def _found(out: Path, truth: dict[str, Any]) -> str:
    incidents = json.loads(out.read_text(encoding="utf-8"))["incidents"]
    got = {(i["category"], i["root_cause"]["id"]) for i in incidents}
    want = {(f["category"], f["root_cause"]["id"]) for f in truth["faults"]}
    return f"{len(want & got)}/{len(want)} faults, {len(got - want)} other incidents"


def _profile(db: Path) -> tuple[float, list[str], list[str]]:
    """Diagnose ``db`` in process: wall s, the top modules, the store's reads by method."""
    from suanli.cli.hugepages import avoid_hugepage_faults
    from suanli.pipeline import diagnose, open_db, stored_inventory
    from suanli.store.duck.store import DuckStore

    avoid_hugepage_faults()                # as the console script does

    spent: collections.Counter[str] = collections.Counter()
    for name in ("samples_of", "spans", "span_numbers", "rank_gpus", "events"):
        owner = next(c for c in DuckStore.__mro__ if name in c.__dict__)

        def timed(f: Any, name: str = name) -> Any:
            @functools.wraps(f)
            def g(self: Any, *a: Any, **k: Any) -> Any:
                t = time.perf_counter()
                try:
                    return f(self, *a, **k)
                finally:
                    spent[name] += time.perf_counter() - t
            return g
        setattr(owner, name, timed(owner.__dict__[name]))
    sampler = Sampler()
    t0 = time.perf_counter()
    with sampler:
        store = open_db(db, must_exist=True)
        diagnose(store, stored_inventory(store))
    wall = time.perf_counter() - t0
    total = sum(sampler.counts.values()) or 1
    mods = [f"| {m} | {100 * n / total:.1f} % |" for m, n in sampler.counts.most_common(10)]
    reads = [f"| store.{m} | {s:.1f} s |" for m, s in spent.most_common()]
    return wall, mods, reads


def main(argv: list[str] | None = None) -> str:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--nodes", type=int, default=128)
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--folder", type=Path, default=None, help="a scenario folder written before (reused)")
    args = ap.parse_args(argv if argv is not None else [])
    env = dict(os.environ, PYTHONPATH=str(HERE.parent / "src"))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        folder = args.folder or work / "scenario"
        sim_s = 0.0
        if args.folder is None:
            t0 = time.perf_counter()
            subprocess.run([*CLI, "simulate", "--scenario", "mixed_port_thermal", "--out", str(folder),
                            "--nodes", str(args.nodes), "--minutes", str(args.minutes)],
                           check=True, env=env, capture_output=True)
            sim_s = time.perf_counter() - t0
        truth = json.loads((folder / "truth.json").read_text(encoding="utf-8"))
        size_mib = sum(p.stat().st_size for p in folder.iterdir()) / 2**20
        db = work / "x.duckdb"
        runs = [("suanli ingest DIR --db X", run_child([*CLI, "ingest", str(folder), "--db", str(db)]), None)]
        diag = _to_file([*CLI, "diagnose", "--db", str(db), "--json"], work / "db.json")
        runs.append(("suanli diagnose --db X --json", diag, _found(work / "db.json", truth)))
        whole = _to_file([*CLI, "diagnose", str(folder), "--json"], work / "dir.json")
        runs.append(("suanli diagnose DIR --json", whole, _found(work / "dir.json", truth)))
        counts = subprocess.run([sys.executable, "-c", "import sys, duckdb; c = duckdb.connect(sys.argv[1], read_only=True); "
                                 "print(*(c.execute(f'SELECT count(*) FROM {t}').fetchall()[0][0] for t in ('samples', 'spans', 'series')))",
                                 str(db)], capture_output=True, text=True, check=True).stdout.split()
        prof_s, mods, reads = _profile(db)
    lines = ["## scale", "",
             f"What: `bench/scale.py`: a simulated `mixed_port_thermal` hour ({args.nodes} nodes, {args.nodes * 8:,} GPUs, "
             f"{args.minutes:.0f} min; {size_mib:,.0f} MiB of files: {int(counts[0]):,} samples of {int(counts[2]):,} series, "
             f"{int(counts[1]):,} spans; {f'simulated in {sim_s:.0f} s' if sim_s else 'written before'}) through the CLI, each step a child process "
             "(wall includes start-up; peak RSS of the child).",
             f"Machine: {os.cpu_count()} cores ({platform.machine()}, shared with other jobs), Python {platform.python_version()}.", "",
             "| step | wall s | peak RSS MiB | diagnosis |", "| --- | ---: | ---: | --- |"]
    for name, r, found in runs:
        lines.append(f"| {name} | {float(r['wall_s']):.1f} | {int(r['peak_rss_kib']) / 1024:,.0f} | {found or ''} |")
    lines += ["", f"Where `diagnose --db` spends its time (in process, {prof_s:.1f} s; innermost suanli module, sampled every 5 ms):", "",
              "| module | share |", "| --- | ---: |", *mods, "", "The store's reads (wall, summed over calls):", "",
              "| read | s |", "| --- | ---: |", *reads]
    text = "\n".join(lines) + "\n"
    print(text)
    RESULTS.write_text(text, encoding="utf-8")
    return text


if __name__ == "__main__":
    main(sys.argv[1:])
