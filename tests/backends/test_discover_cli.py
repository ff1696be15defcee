"""``suanli inventory discover`` against a real Prometheus 2.42 backfilled with the pcie_riser
scenario: the label sets come from the TSDB's /api/v1/series, are merged into a hand-written file
that lost node-003's UUIDs and all of node-008, and give back the scenario's own GPUs; Slurm jobs
join; what it cannot learn is reported; bad input is one line."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from suanli.inventory import parse_inventory
from tests.backends.conftest import scenario_path
from tests.backends.servers import Server
from tests.backends.test_discover import SCONTROL
from tests.cli.helpers import assert_one_line_error, run

pytestmark = pytest.mark.slow


def _window() -> list[str]:
    truth = json.loads((scenario_path("pcie_riser") / "truth.json").read_text())
    return ["--start", truth["window"]["start"], "--end", truth["window"]["end"]]


def _damaged(tmp_path: Path) -> tuple[Path, str]:
    text = (scenario_path("pcie_riser") / "inventory.yaml").read_text()
    doc = yaml.safe_load(text)
    for rack in doc["racks"]:
        rack["nodes"] = [n for n in rack["nodes"] if n["id"] != "node-008"]
        for n in rack["nodes"]:
            if n["id"] == "node-003":
                for g in n["gpus"]:
                    g.pop("uuid")
    path = tmp_path / "hand.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path, text


def test_discover_restores_what_the_file_lost(prometheus_for: Callable[[str], Server], tmp_path: Path) -> None:
    server = prometheus_for("pcie_riser")
    hand, text = _damaged(tmp_path)
    out = tmp_path / "inventory.yaml"
    proc = run("inventory", "discover", "--prometheus", server.url, "--existing", hand, "--out", out, *_window(),
               timeout_s=300)
    assert proc.returncode == 0, proc.stderr
    inv, original = parse_inventory(out.read_text()), parse_inventory(text)
    assert set(inv.gpus) == set(original.gpus) and inv.cluster == original.cluster
    assert {g: inv.gpus[g].uuid for g in inv.gpus} == {g: original.gpus[g].uuid for g in original.gpus}
    assert set(inv.switches) == set(original.switches) and set(inv.jobs) == set(original.jobs)
    assert set(inv.nics) == set(original.nics)
    lines = proc.stderr.splitlines()
    assert f"discovered {len({g.split('/')[0] for g in original.gpus})} node(s), {len(original.gpus)} GPU(s)" in lines[0]
    assert "unknown: node-008: rack unknown (put in 'unracked')" in lines
    assert sum("node-008/" in u and "switch port unknown" in u for u in lines) == \
        len([n for n in original.nics if n.startswith("node-008/")])


def test_slurm_jobs_and_a_cluster_name(prometheus_for: Callable[[str], Server], tmp_path: Path) -> None:
    server = prometheus_for("pcie_riser")
    scontrol = tmp_path / "scontrol.txt"
    scontrol.write_text(SCONTROL)
    proc = run("inventory", "discover", "--prometheus", server.url, "--slurm", scontrol, "--cluster", "lab",
               *_window(), timeout_s=300)
    assert proc.returncode == 0, proc.stderr
    inv = parse_inventory(proc.stdout)
    assert inv.cluster == "lab" and "node-001/gpu7" in inv.gpus
    assert [r.gpu for r in inv.jobs["llama-70b"].ranks] == \
        [f"node-001/gpu{i}" for i in range(8)] + [f"node-002/gpu{i}" for i in range(4)]


def test_bad_input_is_one_line(prometheus_for: Callable[[str], Server], tmp_path: Path) -> None:
    server = prometheus_for("pcie_riser")
    proc = run("inventory", "discover", "--prometheus", server.url, *_window())
    assert_one_line_error(proc.returncode, proc.stderr, "--cluster NAME is needed")
    broken = tmp_path / "broken.yaml"
    broken.write_text("cluster: x\nracks: [\n")
    proc = run("inventory", "discover", "--prometheus", server.url, "--existing", broken)
    assert_one_line_error(proc.returncode, proc.stderr, "broken.yaml")
    proc = run("inventory", "discover", "--prometheus", server.url, "--cluster", "x", "--kube", tmp_path / "none.json")
    assert_one_line_error(proc.returncode, proc.stderr, "--kube", "none.json")
