"""Diagnosis quality over the simulator's sweep: every nuisance on, every category, healthy and
two-fault runs, and where diagnose's time goes on the 128-node runs.

Each run of ``suanli.sim.sweep.sweep_runs`` (3 seeds x 8, 16, 32, 128 nodes x 14 categories, a
healthy run and two two-fault runs per seed and size; 20-minute windows) is simulated with
``Nuisances.sweep()``, diagnosed in-process and scored against its truth.json: a fault is found
when an incident has its category and root-cause id; every other incident is false. Reported in
``bench/results/diagnosis.md`` (and so ``bench/RESULTS.md``): found / false / missed per category,
incidents on healthy runs, false incidents per 20 faulty runs, the false incidents by form, the
misses by variant, alerts per incident, detection delay, and a sampling profile of the 128-node runs.

    python bench/diagnosis.py [--quick] [--state FILE] [--report-only] [--max-nodes N]
    # --quick: one seed, 8 and 16 nodes, 15-minute windows (a few minutes; not written to RESULTS.md)
    # --state: one JSON line per finished run; a rerun skips the runs already there (resume)
    # --max-nodes N: leave the larger sizes for later (with --state, a later run does them)
    # --only 128:1: run only these sizes (and seeds) now; the report covers every run in --state
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _sweep import _load, _one, report  # noqa: E402  (bench/ is not a package)
from suanli.sim.sweep import SEEDS, SIZES, SweepRun, sweep_runs  # noqa: E402

RESULTS = HERE / "results" / "diagnosis.md"


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="one seed, 8 and 16 nodes, 15-minute windows")
    ap.add_argument("--state", type=Path, help="JSON lines of finished runs: resume from it, append to it")
    ap.add_argument("--report-only", action="store_true", help="report the runs in --state, run nothing")
    ap.add_argument("--max-nodes", type=int, default=128, help="run only the sizes up to this (the rest stay to do)")
    ap.add_argument("--only", default="", help="run only these sizes and seeds now, e.g. 128:1 (the rest stay to do)")
    return ap.parse_args(argv)


def _chosen(run: SweepRun, only: str) -> bool:
    """``--only SIZES[:SEEDS]`` (comma lists): whether ``run`` is among them."""
    if not only:
        return True
    sizes, _, seeds = only.partition(":")
    return run.nodes in {int(x) for x in sizes.split(",")} and (not seeds or run.seed in {int(x) for x in seeds.split(",")})


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    seeds, sizes, minutes = ((1,), (8, 16), 15.0) if args.quick else (SEEDS, SIZES, 20.0)
    runs = sweep_runs(seeds, sizes, minutes)
    done = _load(args.state)
    order = sorted(runs, key=lambda r: (r.nodes, r.seed))     # cheapest first: every prefix spans seeds and categories
    with tempfile.TemporaryDirectory() as d:
        for i, run in enumerate(order):
            if run.label in done or args.report_only or run.nodes > args.max_nodes or not _chosen(run, args.only):
                continue
            s = done[run.label] = _one(run, Path(d))
            if args.state is not None:
                with args.state.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(asdict(s)) + "\n")
            print(f"[{i + 1}/{len(runs)}] {run.label}: found {len(s.found)}/{len(s.found) + len(s.missed)}, "
                  f"false {len(s.false)}, sim {s.sim_s:.1f} s, diagnose {s.diag_s:.1f} s", file=sys.stderr, flush=True)
    scores = [done[r.label] for r in runs if r.label in done]
    text = report(scores, {r.label: r for r in runs}, seeds, sizes, minutes)
    print(text)
    if not args.quick:
        RESULTS.parent.mkdir(exist_ok=True)
        RESULTS.write_text(text, encoding="utf-8")
        from run import gather  # bench/run.py: RESULTS.md is every results/*.md put together

        gather()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
