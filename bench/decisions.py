"""What deciding by cost saves, over the simulator's fault library at two cluster sizes.

For every fault scenario of `suanli simulate --list` (the one-fault library and the two-fault
mixes) at 8 and 32 nodes, the scenario is written by `suanli simulate`, diagnosed by
`suanli diagnose DIR --json` (subprocesses: the stable interfaces while the internals move), and
each incident's decision input is built from that JSON, the scenario's inventory.yaml and its
trace file (read here as plain OTLP JSON). Three policies are costed over the same horizon with
the same model (suanli.analysis.decisions):

* do nothing: stay degraded;
* the fixed table: every action of the category's `default_actions` (analysis/categories.py)
  carried out at once, its cost that of its most disruptive action with an effect (a drain of the
  whole node; the table has no per-GPU drains, no timing);
* ranked: the same table actions, ordered and timed by expected cost (what suanli now chooses),
  and the rule pack's own planned actions ranked the same way.

The figures are expected costs under the model with measured inputs; the simulator's faults never
clear within their window, which the model does not know (it uses the priors of
docs/decisions.md).

    python bench/decisions.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from suanli.analysis.categories import policy
from suanli.analysis.decisions import Decision, IncidentFacts, RankedAction, decide
from suanli.analysis.decisions.decide import DISRUPTION
from suanli.analysis.decisions.inputs import Arrays, facts_for
from suanli.inventory import Inventory, load_inventory
from suanli.timefmt import parse_time

SIZES = (8, 32)
SEED = 101
HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "decisions.md"
SUANLI = [str(Path(sys.executable).parent / "suanli")]


def _scenarios() -> list[str]:
    from suanli.sim import list_scenarios

    return [n for n, _ in list_scenarios() if n != "healthy" and not n.startswith("seed_")]


def _trace_arrays(folder: Path) -> dict[str, Arrays]:
    """Per job: steps (first rank's start to last rank's end), checkpoint_save ends, init starts."""
    steps: dict[str, dict[int, list[float]]] = defaultdict(dict)
    ckpt: dict[str, list[float]] = defaultdict(list)
    init: dict[str, list[float]] = defaultdict(list)
    with (folder / "traces.otlp.jsonl").open(encoding="utf-8") as f:
        for line in f:
            for rs in json.loads(line).get("resourceSpans", []):
                res = {a["key"]: a["value"] for a in rs["resource"]["attributes"]}
                job = res.get("job.id", {}).get("stringValue")
                for ss in rs["scopeSpans"]:
                    for sp in ss["spans"]:
                        a, b = int(sp["startTimeUnixNano"]) / 1e9, int(sp["endTimeUnixNano"]) / 1e9
                        if sp["name"] == "train_step":
                            kv = {x["key"]: x["value"] for x in sp.get("attributes", [])}
                            k = int(kv["train.step"]["intValue"])
                            cur = steps[job].get(k)
                            steps[job][k] = [min(a, cur[0]), max(b, cur[1])] if cur else [a, b]
                        elif sp["name"] == "checkpoint_save":
                            ckpt[job].append(b)
                        elif sp["name"] == "init":
                            init[job].append(a)
    out: dict[str, Arrays] = {}
    for job, by_step in steps.items():
        se = np.array([by_step[k] for k in sorted(by_step)])
        out[job] = (se[:, 1], se[:, 1] - se[:, 0], np.array(ckpt[job]), np.array(sorted(set(init[job]))))
    return out


def _table_actions(inc: dict[str, Any]) -> list[dict[str, Any]]:
    """What the category table's default actions plan for the incident, with targets as diagnose gives them."""
    root, kind = inc["root_cause"]["id"], inc["root_cause"]["kind"]
    out: list[dict[str, Any]] = []
    for action in policy(inc["category"]).default_actions:
        if action == "reschedule_job":
            out.extend({"action": action, "target": j} for j in inc["impact"]["jobs"])
        elif action == "drain_node" and kind in ("gpu", "nic"):
            out.append({"action": action, "target": root.split("/")[0]})
        else:
            out.append({"action": action, "target": root})
    return out


def _table_cost(d: Decision) -> float:
    """All table actions at once: the cost of the most disruptive one that acts (whole-node drains)."""
    acting: list[tuple[int, RankedAction]] = [(DISRUPTION.get(r.allowed.action, 9), r) for r in d.ranked
                                              if r.best.scope != "none"]
    if not acting:
        return d.stay_cost
    _, top = max(acting, key=lambda x: x[0])
    now = [o for o in top.options if o.mode == "immediate" and o.scope != "gpu"]
    return min(o.expected_cost for o in now) if now else top.expected_cost


def _facts(inv: Inventory, arrays: dict[str, Arrays], doc: dict[str, Any], inc: dict[str, Any],
           actions: list[dict[str, Any]]) -> IncidentFacts:
    empty: Arrays = (np.empty(0), np.empty(0), np.empty(0), np.empty(0))
    return facts_for(inv, lambda j: arrays.get(j, empty), incident_id=inc["id"], category=inc["category"],
                     root_kind=inc["root_cause"]["kind"], root_id=inc["root_cause"]["id"],
                     onset_s=parse_time(inc["start"]), now_s=parse_time(doc["window"]["end"]),
                     job_ids=inc["impact"]["jobs"], actions=actions, evidence=inc["evidence"])


def _run(name: str, nodes: int, tmp: Path) -> list[dict[str, Any]]:
    folder = tmp / f"{name}-{nodes}"
    subprocess.run([*SUANLI, "simulate", "--scenario", name, "--nodes", str(nodes), "--seed", str(SEED),
                    "--out", str(folder)], check=True, capture_output=True)
    proc = subprocess.run([*SUANLI, "diagnose", str(folder), "--json"], check=True, capture_output=True, text=True)
    doc = json.loads(proc.stdout)
    inv, arrays = load_inventory(folder / "inventory.yaml"), _trace_arrays(folder)
    rows = []
    for inc in doc["incidents"]:
        table = decide(_facts(inv, arrays, doc, inc, _table_actions(inc)))
        pack = decide(_facts(inv, arrays, doc, inc, inc["actions"]))
        chosen = table.chosen
        rows.append({"scenario": name, "nodes": nodes, "category": inc["category"], "root": inc["root_cause"]["id"],
                     "gpus": inc["impact"]["gpus"], "stay": table.stay_cost, "table": _table_cost(table),
                     "ranked": table.chosen_cost, "pack": pack.chosen_cost,
                     "choice": "stay" if chosen is None else f"{chosen.allowed.action} ({chosen.best.mode}"
                                                                f"{', ' + chosen.best.scope if chosen.best.scope == 'gpu' else ''})"})
    shutil.rmtree(folder, ignore_errors=True)            # 32-node folders are ~200 MB each
    return rows


def _table(rows: list[dict[str, Any]]) -> list[str]:
    out = ["| scenario | nodes | incident | GPUs | stay $ | fixed table $ | ranked $ | rule pack ranked $ | ranked choice |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        out.append(f"| {r['scenario']} | {r['nodes']} | {r['category']} {r['root']} | {r['gpus']} | {r['stay']:,.2f} | "
                   f"{r['table']:,.2f} | {r['ranked']:,.2f} | {r['pack']:,.2f} | {r['choice']} |")
    return out


def _summary(rows: list[dict[str, Any]], sizes: tuple[int, ...], seconds: float) -> list[str]:
    out = ["| nodes | incidents | stay $ | fixed table $ | ranked $ | saved vs stay $ | saved vs table $ | "
           "ranked dearer than table |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for n in (*sizes, None):
        rs = [r for r in rows if n is None or r["nodes"] == n]
        stay, table, ranked = (sum(r[k] for r in rs) for k in ("stay", "table", "ranked"))
        worse = sum(1 for r in rs if r["ranked"] > r["table"] + 0.005)
        out.append(f"| {'all' if n is None else n} | {len(rs)} | {stay:,.0f} | {table:,.0f} | {ranked:,.0f} | "
                   f"{stay - ranked:,.0f} | {table - ranked:,.0f} | {worse} |")
    out.append("\n\"Ranked dearer than table\": faults that may clear by themselves (a fail-slow link, a link "
               "that went down) where the stopping rule keeps waiting although acting now is cheaper in expectation "
               "under the priors; the wait is what bounds the loss when the fault clears (docs/decisions.md).")
    out.append(f"\nWall time {seconds:.0f} s (simulate + diagnose + decide, 2 shared cores).")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="8 nodes and three scenarios only")
    args = ap.parse_args(argv)
    sizes = (8,) if args.quick else SIZES
    names = ["gpu_straggler", "gpu_thermal", "switch_port_errors"] if args.quick else _scenarios()
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="suanli-bench-decisions-") as tmp:
        for nodes in sizes:
            for name in names:
                rows.extend(_run(name, nodes, Path(tmp)))
                print(f"  {name} @ {nodes} nodes: {sum(1 for r in rows if r['scenario'] == name and r['nodes'] == nodes)} "
                      "incident(s)", flush=True)
    summary = _summary(rows, sizes, time.perf_counter() - t0)
    text = "\n".join(["## decisions", "",
                      f"Expected cost over the 4 h horizon of each incident's decision, scenarios {', '.join(names)} "
                      f"(seed {SEED}) at {' and '.join(map(str, sizes))} nodes; USD at the simulator's prices "
                      "(bench/decisions.py says how each policy is costed).", "", *summary, "", *_table(rows)])
    print(text)
    if not args.quick:
        RESULTS.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
