"""Every scenario `suanli simulate --list` offers, at two seeds and two sizes: each injected fault is
one incident with the right category and root-cause id, a healthy run has none, and the
alert-to-incident compression is reported (printed in the test log; the figures against the
targets live in bench/RESULTS.md, from bench/diagnosis.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from suanli.pipeline import diagnose_folder
from suanli.report import diagnosis_json
from suanli.sim import list_scenarios, simulate

NAMES = [name for name, _ in list_scenarios()]
# (seed, nodes, minutes): a small two-rack cluster, and a larger one at another seed. The seed
# cases with 210 ms steps write a span per phase per rank per step: keep their window short.
RUNS = [(11, 6, 10), (12, 12, 12)]


def _minutes(name: str, minutes: int) -> int:
    return 6 if name == "seed_optical_ber" else minutes


@pytest.mark.slow
@pytest.mark.parametrize("seed,nodes,minutes", RUNS, ids=[f"seed{s}-{n}n" for s, n, _ in RUNS])
@pytest.mark.parametrize("name", NAMES)
def test_each_fault_is_one_incident_at_its_root(name: str, seed: int, nodes: int, minutes: int,
                                                tmp_path: Path) -> None:
    folder = simulate(name, tmp_path / name, seed=seed, nodes=nodes, minutes=_minutes(name, minutes))
    truth = json.loads((folder / "truth.json").read_text())
    got = diagnosis_json(diagnose_folder(folder))
    assert got["analysis_errors"] == []
    pairs = sorted((i["category"], i["root_cause"]["id"]) for i in got["incidents"])
    want = sorted((f["category"], f["root_cause"]["id"]) for f in truth["faults"])
    assert pairs == want, f"incidents {pairs} != injected {want}"
    if want:
        alerts = sum(i["alerts"] for i in got["incidents"])
        print(f"{name} seed {seed} nodes {nodes}: {alerts} alerts -> {len(pairs)} incident(s)")
