"""Diagnosis quality over the simulator's scenarios and a fixed set of seeds, and diagnose's speed.

For every scenario `suanli simulate --list` offers, seeds 101 and 102 (and two cluster sizes), the
scenario is simulated, ingested and diagnosed in-process; each injected fault counts as found when
one incident has its category and root-cause id. Reported: share of faults found, incidents on
healthy runs, alerts per incident (compression), detection delay (detected_at - onset) against the
budget "rule `for` + two scrape intervals", and the time `suanli diagnose` takes on a 128-node hour.

    python bench/diagnosis.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from suanli.pipeline import diagnose_folder
from suanli.report import diagnosis_json
from suanli.sim import list_scenarios, simulate
from suanli.timefmt import parse_time

SEEDS = (101, 102)
SIZES = (8, 16)
SCRAPE_S = 15.0
# Faults that stall every rank of a job for minutes: each of its GPUs raises its own alerts (tensor cores idle,
# the rank's NCCL timeout), the storm the seed document describes (237 alerts for one GPU fault).
STORMS = ("gpu_lost", "nic_down", "collective_hang", "seed_xid79", "seed_hang")


def _budgets() -> dict[str, float]:
    """Per category: the shortest ``for`` of a default rule of that category, plus two scrapes."""
    from suanli.rules import load_rules

    out: dict[str, float] = {}
    for rule in load_rules(None).rules:
        if rule.category:
            out[rule.category] = min(out.get(rule.category, float("inf")), rule.for_s + 2 * SCRAPE_S)
    return out
RESULTS = Path(__file__).resolve().parent / "results" / "diagnosis.md"


def _one(name: str, seed: int, nodes: int, minutes: float, tmp: Path) -> dict[str, object]:
    folder = simulate(name, tmp / f"{name}-{seed}-{nodes}", seed=seed, nodes=nodes, minutes=minutes)
    truth = json.loads((folder / "truth.json").read_text())
    t0 = time.perf_counter()
    diag = diagnose_folder(folder)
    elapsed = time.perf_counter() - t0
    got = diagnosis_json(diag)["incidents"]
    found, delays, late = 0, [], []
    budgets = _budgets()
    for fault in truth["faults"]:
        match = [i for i in got if i["category"] == fault["category"]
                 and i["root_cause"]["id"] == fault["root_cause"]["id"]]
        if match:
            found += 1
            if match[0]["detected_at"]:
                delay = parse_time(match[0]["detected_at"]) - parse_time(fault["start"])
                delays.append(delay)
                if delay > budgets.get(fault["category"], float("inf")):
                    late.append(fault["category"])
    return {"scenario": name, "seed": seed, "nodes": nodes, "faults": len(truth["faults"]), "found": found,
            "incidents": len(got), "alerts": [i["alerts"] for i in got], "delays": delays, "late": late,
            "seconds": elapsed}


def _big_run(tmp: Path) -> float:
    folder = simulate("switch_port_errors", tmp / "big", seed=7, nodes=128, minutes=60)
    t0 = time.perf_counter()
    diagnose_folder(folder)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="one seed, one size, no 128-node run")
    args = ap.parse_args(argv)
    seeds, sizes = (SEEDS[:1], SIZES[:1]) if args.quick else (SEEDS, SIZES)
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for name, _desc in list_scenarios():
            for seed in seeds:
                for nodes in sizes:
                    rows.append(_one(name, seed, nodes, 15, tmp))
                    r = rows[-1]
                    print(f"{name:28s} seed {seed} nodes {nodes:3d}: {r['found']}/{r['faults']} found, "
                          f"{r['incidents']} incidents, {r['seconds']:.1f} s", file=sys.stderr)
        big_s = None if args.quick else _big_run(tmp)
    faults = sum(int(r["faults"]) for r in rows)
    found = sum(int(r["found"]) for r in rows)
    healthy = [r for r in rows if r["faults"] == 0]
    false_inc = sum(int(r["incidents"]) for r in healthy)
    per_inc = [a for r in rows if r["faults"] for a in r["alerts"]]  # type: ignore[attr-defined]
    storm = [a for r in rows if r["scenario"] in STORMS for a in r["alerts"]]  # type: ignore[attr-defined]
    delays = [d for r in rows for d in r["delays"]]  # type: ignore[attr-defined]
    late = [c for r in rows for c in r["late"]]  # type: ignore[attr-defined]
    lines = [
        "## diagnosis", "",
        f"Machine: 2 cores. Scenarios: {len(list_scenarios())} x seeds {list(seeds)} x sizes {list(sizes)} nodes, "
        "15-minute windows.", "",
        "| figure | value | target |", "| --- | --- | --- |",
        f"| faults found (right category and root id) | {found}/{faults} = {100 * found / max(faults, 1):.1f} % | >= 95 % |",
        f"| incidents on healthy runs | {false_inc} over {len(healthy)} runs | 0 |",
        f"| alerts per incident, all faulty runs (median / min) | {statistics.median(per_inc) if per_inc else 0:.0f} / "
        f"{min(per_inc) if per_inc else 0} | |",
        f"| alerts per incident, storm scenarios {', '.join(STORMS)} (median / min) | "
        f"{statistics.median(storm) if storm else 0:.0f} / {min(storm) if storm else 0} | >= 20 |",
        f"| detection delay after onset (median / max) | {statistics.median(delays) if delays else 0:.0f} s / "
        f"{max(delays) if delays else 0:.0f} s | |",
        f"| detections later than the category's rule `for` + {2 * SCRAPE_S:.0f} s | {len(late)} of {len(delays)}"
        f" ({', '.join(sorted(set(late))) or 'none'}) | 0 |",
        f"| diagnose time per run (median) | {statistics.median(float(r['seconds']) for r in rows):.1f} s | |",
    ]
    if big_s is not None:
        lines.append(f"| `suanli diagnose` on a 128-node hour | {big_s:.1f} s | |")
    lines += ["", "| scenario | runs | found | incidents | alerts per incident (median) | delay s (max) |",
              "| --- | --- | --- | --- | --- | --- |"]
    for name, _ in list_scenarios():
        rs = [r for r in rows if r["scenario"] == name]
        al = [a for r in rs for a in r["alerts"]]  # type: ignore[attr-defined]
        dl = [d for r in rs for d in r["delays"]]  # type: ignore[attr-defined]
        found_s = f"{sum(int(r['found']) for r in rs)}/{sum(int(r['faults']) for r in rs)}"
        med = f"{statistics.median(al):.0f}" if al else "-"
        dmax = f"{max(dl):.0f}" if dl else "-"
        lines.append(f"| {name} | {len(rs)} | {found_s} | {sum(int(r['incidents']) for r in rs)} | {med} | {dmax} |")
    text = "\n".join(lines) + "\n"
    print(text)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
