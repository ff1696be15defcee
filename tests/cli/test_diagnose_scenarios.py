"""`suanli diagnose DIR --json` and the ingest -> --db path on the public scenarios, run as the real
console script, checked against spec/diagnosis.md and against each scenario's truth.json (written
by an independent simulator)."""

from __future__ import annotations

import json
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from suanli.timefmt import parse_time
from tests.cli.helpers import run
from tests.cli.shape import SPLIT, TAXONOMY, shape_problems
from tests.conftest import shared_path

pytestmark = pytest.mark.slow  # each scenario is ~7 s of diagnosis on 2 cores

SCENARIOS = ("healthy", "switch_port_errors", "pcie_riser", "collective_hang", "storage_slow")
# The ledger matches truth's step-weighted compute share on these; on collective_hang (0.20 vs 0.86:
# truth's phases hold finished steps only, not the stalled minutes) and storage_slow (0.66 vs 0.77
# for the slowed job) it does not yet: that is the ledger's to settle, not the diagnosis's.
LEDGER_SCENARIOS = ("healthy", "switch_port_errors", "pcie_riser")
START_TOLERANCE_S = 120.0  # an incident starts within two scrape-minutes of the injected fault
COMPUTE_SHARE_TOLERANCE = 0.05


@cache
def _diagnose_folder(name: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    proc = run("diagnose", shared_path("scenarios", name), "--json", timeout_s=300)
    doc = json.loads(proc.stdout) if proc.returncode == 0 else None
    return proc, doc


def _truth(name: str) -> dict[str, Any]:
    return json.loads(shared_path("scenarios", name, "truth.json").read_text())  # type: ignore[no-any-return]


@pytest.fixture(scope="module", params=SCENARIOS)
def case(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any], dict[str, Any]]:
    proc, doc = _diagnose_folder(request.param)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert doc is not None
    return request.param, doc, _truth(request.param)


def test_json_follows_the_spec_shape(case: tuple[str, dict[str, Any], dict[str, Any]]) -> None:
    _, doc, _ = case
    assert shape_problems(doc) == []
    assert set(doc["missing"]) <= {"metrics", "traces", "logs"}
    assert doc["missing"] == []  # every public scenario holds all three kinds


def test_window_is_the_scenarios_window(case: tuple[str, dict[str, Any], dict[str, Any]]) -> None:
    _, doc, truth = case
    for k in ("start", "end"):
        gap_s = abs(parse_time(doc["window"][k]) - parse_time(truth["window"][k]))
        assert gap_s <= START_TOLERANCE_S, (k, doc["window"][k], truth["window"][k])


def test_time_split_sums_to_one(case: tuple[str, dict[str, Any], dict[str, Any]]) -> None:
    _, doc, _ = case
    assert doc["efficiency"]["jobs"]
    for job in doc["efficiency"]["jobs"]:
        assert sum(job["time_split"][k] for k in SPLIT) == pytest.approx(1.0, abs=1e-6), job["id"]


def test_incidents_are_the_injected_faults(case: tuple[str, dict[str, Any], dict[str, Any]]) -> None:
    _, doc, truth = case
    # exactly the injected faults: no extra incident, none twice (17 false nvlink_degradation on
    # collective_hang's stalled GPUs and 2 on storage_slow's slowed ones before issue 12)
    expected = sorted((f["category"], f["root_cause"]["kind"], f["root_cause"]["id"]) for f in truth["faults"])
    got = sorted((i["category"], i["root_cause"]["kind"], i["root_cause"]["id"]) for i in doc["incidents"])
    assert got == expected
    assert all(i["category"] in TAXONOMY for i in doc["incidents"])


def test_incident_times_and_jobs_match_truth(case: tuple[str, dict[str, Any], dict[str, Any]]) -> None:
    _, doc, truth = case
    by_root = {i["root_cause"]["id"]: i for i in doc["incidents"]}
    for fault in truth["faults"]:
        inc = by_root[fault["root_cause"]["id"]]
        assert abs(parse_time(inc["start"]) - parse_time(fault["start"])) <= START_TOLERANCE_S
        assert parse_time(inc["detected_at"]) >= parse_time(inc["start"])
        if fault["end"] is None:  # still open at the end of the window
            assert inc["end"] is None
        assert set(fault["jobs"]) <= set(inc["impact"]["jobs"])
        assert inc["alerts"] >= 1  # at least the root alert itself


def _expected_compute_share(job: dict[str, Any]) -> float:
    """Time-weighted compute share over the window from truth's before/during phases."""
    parts = [job[k] for k in ("before_fault", "during_fault") if k in job]
    secs = [p["steps"] * p["median_step_s"] for p in parts]
    return float(sum(s * p["compute_share"] for s, p in zip(secs, parts, strict=True)) / sum(secs))


def _mfu_bounds(name: str, job: dict[str, Any], gpu_model: str) -> tuple[float, float]:
    """MFU from truth's steps x tokens_per_step over their time, with 6N FLOPs per token (lower) and
    6N + 12*L*h*s (PaLM, with attention; upper), on world x the model's bf16 dense peak (H100 989,
    A100 312 TFLOP/s, from the inventory)."""
    inv = yaml.safe_load(Path(shared_path("scenarios", name, "inventory.yaml")).read_text())
    model = next(j for j in inv["jobs"] if j["id"] == job["id"])["model"]
    parts = [job[k] for k in ("before_fault", "during_fault") if k in job]
    secs = sum(p["steps"] * p["median_step_s"] for p in parts)
    tokens_per_s = sum(p["steps"] for p in parts) * job["tokens_per_step"] / secs
    peak = job["world"] * inv["gpu_models"][gpu_model]["bf16_tflops"] * 1e12
    six_n = 6 * model["params"]
    attention = 12 * model["layers"] * model["hidden"] * model["seq_len"]
    return tokens_per_s * six_n / peak, tokens_per_s * (six_n + attention) / peak


@pytest.mark.parametrize("name", LEDGER_SCENARIOS)
def test_ledger_agrees_with_truth(name: str) -> None:
    # e.g. healthy: 2,293,760 tok / 23.892 s, 33.7e9 params, 64 x 989 TF -> MFU 0.307 (6N) .. 0.336
    proc, doc = _diagnose_folder(name)
    assert doc is not None, proc.stderr
    truth = _truth(name)
    jobs = {j["id"]: j for j in doc["efficiency"]["jobs"]}
    assert set(jobs) == {j["id"] for j in truth["jobs"]}
    for tj in truth["jobs"]:
        got = jobs[tj["id"]]
        assert got["time_split"]["compute"] == pytest.approx(_expected_compute_share(tj),
                                                             abs=COMPUTE_SHARE_TOLERANCE), tj["id"]
        lo, hi = _mfu_bounds(name, tj, truth["cluster"]["gpu_model"])
        assert 0.9 * lo <= got["mfu"] <= 1.1 * hi, (tj["id"], got["mfu"], lo, hi)


# ------------------------------------------------------------------ ingest -> --db -> diagnose

@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    db = tmp_path_factory.mktemp("db") / "sw.duckdb"
    proc = run("ingest", shared_path("scenarios", "switch_port_errors"), "--db", db, timeout_s=300)
    return db, proc


def _essentials(doc: dict[str, Any]) -> list[tuple[Any, ...]]:
    return sorted((i["category"], i["root_cause"]["id"], i["start"], i["end"], i["alerts"],
                   tuple(i["impact"]["jobs"])) for i in doc["incidents"])


def test_ingest_then_diagnose_db_equals_folder(ingested: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    db, proc = ingested
    assert proc.returncode == 0, proc.stderr
    assert "samples" in proc.stdout and "spans" in proc.stdout
    via_db = run("diagnose", "--db", db, "--json", timeout_s=300)
    assert via_db.returncode == 0, via_db.stderr
    doc = json.loads(via_db.stdout)
    _, folder_doc = _diagnose_folder("switch_port_errors")
    assert folder_doc is not None
    assert _essentials(doc) == _essentials(folder_doc)
    assert doc["window"] == folder_doc["window"]
    assert doc["efficiency"]["jobs"][0]["time_split"] == folder_doc["efficiency"]["jobs"][0]["time_split"]


def test_check_db_prints_maturity(ingested: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    db, _ = ingested
    proc = run("check", "--db", db)
    assert proc.returncode == 0, proc.stderr
    assert "maturity" in proc.stdout
    rows = {ln.split("│")[1].strip(): ln.split("│")[2].strip() for ln in proc.stdout.splitlines()
            if ln.count("│") >= 3 and ln.split("│")[1].strip() in ("coverage", "correlation", "decision")}
    assert set(rows) == {"coverage", "correlation", "decision"}
    assert all(level in {"1", "2", "3", "4", "5"} for level in rows.values())
    # coverage = how many of the five telemetry kinds the scenario has; switch_port_errors has all
    # five: DCGM_* and node_infiniband_/suanli_switch_port_* series, suanli_sla_latency_seconds,
    # train spans (traces.otlp.jsonl) and logs (kernel.log, trainer.log) -> L5
    folder = shared_path("scenarios", "switch_port_errors")
    om = (folder / "metrics.om").read_text()
    kinds = ["\nDCGM_" in om, "\nnode_infiniband_" in om or "\nsuanli_switch_port_" in om,
             "\nsuanli_sla_latency_seconds" in om, (folder / "traces.otlp.jsonl").stat().st_size > 0,
             (folder / "kernel.log").stat().st_size > 0]
    assert rows["coverage"] == str(sum(kinds)) == "5"
