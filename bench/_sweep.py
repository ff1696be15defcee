"""The sweep's machinery for ``bench/diagnosis.py``: simulate, diagnose, score, report.

Each run of ``suanli.sim.sweep.sweep_runs`` (3 seeds x 8, 16, 32, 128 nodes x 14 categories, a
healthy run and two two-fault runs per seed and size; 20-minute windows) is simulated, diagnosed
in-process and scored against its truth.json: a fault is found when an incident has its category
and root-cause id; every other incident is false. Reported: found / false / missed per category,
incidents on healthy runs, false incidents per 20 faulty runs, the false incidents grouped by their
form (the detector lane's work list), and where the time goes in the 128-node runs (a sampling
profiler over the diagnosis, by module).

The leading underscore keeps ``bench/run.py`` from running it as a benchmark of its own.
"""

from __future__ import annotations

import collections
import json
import shutil
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from suanli.sim import simulate_custom
from suanli.sim.faults import CATEGORIES
from suanli.sim.sweep import SweepRun
from suanli.timefmt import parse_time

HERE = Path(__file__).resolve().parent
STALLS = {"collective_hang", "nic_down", "gpu_lost", "gpu_memory_failure", "oom"}
# The error counters a category's detector reads: a false incident on a part whose counter has a
# background rate or a history is blamed on that nuisance.
COUNTERS = {
    "gpu_memory_degradation": ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"),
    "gpu_memory_failure": ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"),
    "pcie_riser": ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "suanli_pcie_aer_errors_total"),
    "switch_port_errors": ("suanli_switch_port_crc_errors_total", "node_infiniband_port_errors_received_total"),
    "optical_degradation": ("node_infiniband_symbol_error_total", "suanli_switch_port_crc_errors_total"),
    "nic_down": ("node_infiniband_link_downed_total",),
}


def diagnose(folder: Path) -> list[dict[str, Any]]:
    """The incidents suanli finds in a scenario folder (the one call to repoint when the pipeline moves)."""
    from suanli.pipeline import diagnose_folder
    from suanli.report import diagnosis_json

    incidents: list[dict[str, Any]] = diagnosis_json(diagnose_folder(folder))["incidents"]
    return incidents


class Sampler:
    """Samples the main thread's stack every ``interval_s`` and counts the innermost suanli module."""

    def __init__(self, interval_s: float = 0.005) -> None:
        self.interval_s = interval_s
        self.counts: collections.Counter[str] = collections.Counter()
        self._stop = threading.Event()
        self._main = threading.main_thread().ident

    def _module(self) -> str | None:
        frame = sys._current_frames().get(self._main or 0)
        while frame is not None:
            name = frame.f_code.co_filename
            if "/suanli/" in name and "/suanli/sim/" not in name:
                return name.rsplit("/suanli/", 1)[1].removesuffix(".py").replace("/", ".")
            frame = frame.f_back
        return None

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.counts[self._module() or "(outside suanli)"] += 1

    def __enter__(self) -> Sampler:
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@dataclass
class Score:
    label: str
    kind: str                                            # healthy | single | pair
    nodes: int
    found: list[str] = field(default_factory=list)       # categories found
    missed: list[str] = field(default_factory=list)
    false: list[tuple[str, str]] = field(default_factory=list)   # (form, example)
    sim_s: float = 0.0
    diag_s: float = 0.0
    profile: dict[str, int] = field(default_factory=dict)        # sampler counts (128-node runs)
    delays: list[float] = field(default_factory=list)    # detected_at - onset of found faults (not running ones)
    alerts: list[int] = field(default_factory=list)      # alerts folded into each found fault's incident


def _context(category: str, entity: str, truth: dict[str, Any], inv: dict[str, Any]) -> str:
    """Where a false incident's root sits, in words that group alike ones."""
    node = entity.split("/")[0]
    job_of = {r["gpu"]: j["id"] for j in inv["jobs"] for r in j["ranks"]}
    stalled = {j for f in truth["faults"] if f["category"] in STALLS for j in f["jobs"]}
    slowed = {j for f in truth["faults"] for j in f["jobs"]}
    finished = {f["id"] for f in truth["variants"]["finished_jobs"]}
    nz = truth.get("nuisances", {})
    fams = COUNTERS.get(category, ())
    if any(entity in nz.get("background_errors", {}).get(f, {}) for f in fams):
        return "a part with a few background errors per hour (zero baseline)"
    if any(entity in nz.get("counter_history", {}).get(f, {}) for f in fams):
        return "a part whose error counters hold counts from before the window"
    if entity in job_of or any(g.startswith(entity + "/") for g in job_of):
        job = job_of.get(entity, "")
        if job in stalled:
            return "a GPU of a job a fault stalled or restarted"
        if job in finished:
            return "a GPU of a job that finished normally"
        if job in slowed:
            return "a GPU of a job another fault slowed"
    if node in truth["cluster"]["spare_nodes"]:
        return "an idle spare node"
    for key in ("node_outage", "dcgm_gap", "agent_restart"):
        if nz.get(key, {}).get("node") == node:
            return f"a node with a {key.replace('_', ' ')}"
    if nz.get("switch_clear", {}).get("switch") == node:
        return "a switch whose counters were cleared"
    if any(f["root_cause"]["id"].split("/")[0] == node for f in truth["faults"]):
        return "the node / switch of a real fault"
    if entity in {j["id"] for j in inv["jobs"]}:
        return "a job a fault stalled or restarted" if entity in stalled else "a job"
    return "a storage" if entity in {s["id"] for s in inv["storage"]} else "elsewhere"


def _score(run: SweepRun, folder: Path, incidents: list[dict[str, Any]]) -> Score:
    truth = json.loads((folder / "truth.json").read_text())
    inv = yaml.safe_load((folder / "inventory.yaml").read_text())
    sc = Score(run.label, run.kind, run.nodes)
    matched: set[int] = set()
    for f in truth["faults"]:
        hit = [i for i, inc in enumerate(incidents) if inc["category"] == f["category"]
               and inc["root_cause"]["id"] == f["root_cause"]["id"]]
        (sc.found if hit else sc.missed).append(f["category"])
        matched.update(hit[:1])
        if hit:
            inc = incidents[hit[0]]
            sc.alerts.append(int(inc.get("alerts") or 0))
            if inc.get("detected_at") and f.get("params", {}).get("shape") != "running":
                sc.delays.append(parse_time(inc["detected_at"]) - parse_time(f["start"]))
    for i, inc in enumerate(incidents):
        if i not in matched:
            where = _context(inc["category"], inc["root_cause"]["id"], truth, inv)
            form = f"{inc['category']} ({inc['root_cause']['kind']}) on {where}"
            sc.false.append((form, f"{run.label}: {inc['root_cause']['id']}: {(inc.get('evidence') or [''])[0]}"))
    return sc


def _one(run: SweepRun, tmp: Path) -> Score:
    folder = tmp / "run"
    t0 = time.perf_counter()
    simulate_custom(run.scenario, folder, seed=run.seed, nodes=run.nodes, minutes=run.minutes, nuisances=run.nuisances)
    t1 = time.perf_counter()
    sampler = Sampler()
    if run.nodes >= 128:
        with sampler:
            incidents = diagnose(folder)
    else:
        incidents = diagnose(folder)
    t2 = time.perf_counter()
    sc = _score(run, folder, incidents)
    sc.sim_s, sc.diag_s, sc.profile = t1 - t0, t2 - t1, dict(sampler.counts)
    shutil.rmtree(folder)
    return sc


def _table(scores: list[Score]) -> list[str]:
    cats = sorted({c for s in scores for c in s.found + s.missed})
    false = collections.Counter(form.split(" ", 1)[0] for s in scores for form, _ in s.false)
    cats = sorted(set(cats) | set(false))
    lines = ["| category | faults | found | missed | found % | false incidents of this category |",
             "| --- | --- | --- | --- | --- | --- |"]
    for c in cats:
        f = sum(s.found.count(c) for s in scores)
        m = sum(s.missed.count(c) for s in scores)
        lines.append(f"| {c} | {f + m} | {f} | {m} | {100 * f / max(f + m, 1):.0f} % | {false[c]} |")
    f = sum(len(s.found) for s in scores)
    m = sum(len(s.missed) for s in scores)
    lines.append(f"| **all** | {f + m} | {f} | {m} | {100 * f / max(f + m, 1):.1f} % | {sum(false.values())} |")
    return lines


def _false_table(scores: list[Score]) -> list[str]:
    forms: collections.Counter[str] = collections.Counter()
    runs: dict[str, set[str]] = collections.defaultdict(set)
    example: dict[str, str] = {}
    for s in scores:
        for form, ex in s.false:
            forms[form] += 1
            runs[form].add(s.label)
            example.setdefault(form, ex)
    lines = ["| false incidents | form | runs | example (run: root: first evidence) |", "| --- | --- | --- | --- |"]
    for form, n in forms.most_common():
        lines.append(f"| {n} | {form} | {len(runs[form])} | {example[form][:160].replace('|', '/')} |")
    return lines


def _missed_table(scores: list[Score], runs: dict[str, SweepRun]) -> list[str]:
    """Each missed fault with the variant it came in: the shape, the size, what the run lacked."""
    rows: collections.Counter[str] = collections.Counter()
    for s in scores:
        run = runs[s.label]
        for cat in s.missed:
            req = next(f for f in run.scenario.faults if f.category == cat)
            notes = [f"shape {req.shape}" + (" (no kernel line in the window)" if req.quiet_logs else ""),
                     f"{run.nodes} nodes"]
            notes += ["no storage latency series"] if not run.scenario.storage_probe else []
            notes += ["two faults"] if run.kind == "pair" else []
            rows[f"{cat}: {', '.join(notes)}"] += 1
    lines = ["| missed | fault and variant |", "| --- | --- |"]
    return lines + [f"| {n} | {row} |" for row, n in sorted(rows.items())]


def _profile(big: list[Score]) -> list[str]:
    counts: collections.Counter[str] = collections.Counter()
    for s in big:
        counts.update(s.profile)
    total = sum(counts.values()) or 1
    sim = sum(s.sim_s for s in big)
    diag = sum(s.diag_s for s in big)
    lines = [f"128-node runs: {len(big)}, simulate {sim:.0f} s (median {_median([s.sim_s for s in big]):.1f} s), "
             f"diagnose {diag:.0f} s (median {_median([s.diag_s for s in big]):.1f} s). Diagnosis time by the "
             "innermost suanli module on the stack (sampled every 5 ms):", "",
             "| module | share of diagnose |", "| --- | --- |"]
    for mod, n in counts.most_common(15):
        lines.append(f"| {mod} | {100 * n / total:.1f} % |")
    return lines


def _done_by(scores: list[Score]) -> str:
    by: collections.Counter[tuple[int, str]] = collections.Counter(
        (s.nodes, s.label.rsplit(" nodes ", 1)[0].rsplit(" seed ", 1)[1]) for s in scores)
    return ", ".join(f"{n} nodes seed {seed}: {k}" for (n, seed), k in sorted(by.items())) or "none"


def _median(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2] if xs else 0.0


def report(scores: list[Score], runs: dict[str, SweepRun], seeds: tuple[int, ...], sizes: tuple[int, ...],
           minutes: float) -> str:
    faulty = [s for s in scores if s.kind != "healthy"]
    healthy = [s for s in scores if s.kind == "healthy"]
    run_s = sum(s.sim_s + s.diag_s for s in scores)
    false_faulty = sum(len(s.false) for s in faulty)
    big = [s for s in scores if s.nodes >= 128]
    alerts = [float(a) for s in scores for a in s.alerts]
    delays = [d for s in scores for d in s.delays]
    lines = [
        "## diagnosis", "",
        f"`python bench/diagnosis.py`: {len(scores)} of {len(runs)} runs done (seeds {list(seeds)} x sizes {list(sizes)} "
        f"nodes x {len(CATEGORIES)} categories, a healthy run and two two-fault runs per seed and size; {minutes:.0f}-minute "
        f"windows), every nuisance on (`Nuisances.sweep()`), the variants spread over the runs (docs/simulator.md). "
        f"Machine: 2 cores shared with other jobs; simulate + diagnose {run_s / 60:.0f} min in all. Runs done by "
        f"size and seed: {_done_by(scores)}.", "",
        "| figure | value | target |", "| --- | --- | --- |",
        f"| faults found (category and root id) | {sum(len(s.found) for s in scores)}/"
        f"{sum(len(s.found) + len(s.missed) for s in scores)} | >= 97 % |",
        f"| incidents on healthy runs | {sum(len(s.false) for s in healthy)} over {len(healthy)} runs "
        f"({sum(1 for s in healthy if s.false)} runs with any) | 0 |",
        f"| false incidents on faulty runs | {false_faulty} over {len(faulty)} runs = "
        f"{20 * false_faulty / max(len(faulty), 1):.1f} per 20 runs | <= 1 per 20 |",
        f"| alerts per found fault's incident (median / min) | {_median(alerts):.0f} / {min(alerts, default=0):.0f} | |",
        f"| detection delay after onset (median / max) | {_median(delays):.0f} s / {max(delays, default=0):.0f} s | |",
        "",
        *_table(scores), "", "Missed faults by variant:", "", *_missed_table(scores, runs), "",
        "False incidents by form (all runs):", "", *_false_table(scores), "",
    ]
    if big:
        lines += _profile(big)
    return "\n".join(lines) + "\n"


def _load(state: Path | None) -> dict[str, Score]:
    if state is None or not state.exists():
        return {}
    rows = [json.loads(x) for x in state.read_text().splitlines() if x.strip()]
    return {r["label"]: Score(**{**r, "false": [tuple(f) for f in r["false"]]}) for r in rows}
