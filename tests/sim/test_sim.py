"""Tests of the digital twin: determinism, formats, fault locality and the seed magnitudes."""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from pathlib import Path

import pytest
import yaml

from suanli.errors import InputError
from suanli.sim import list_scenarios, simulate

CATEGORIES = {
    "gpu_memory_degradation", "gpu_memory_failure", "gpu_lost", "gpu_thermal", "pcie_riser", "gpu_straggler",
    "nvlink_degradation", "switch_port_errors", "optical_degradation", "nic_down", "storage_slow",
    "collective_hang", "oom",
}


def _digest(d: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(d.iterdir()):
        h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()


def _truth(d: Path) -> dict:  # type: ignore[type-arg]
    return json.loads((d / "truth.json").read_text())


def test_scenarios_cover_every_category_and_mixed() -> None:
    names = {n for n, _ in list_scenarios()}
    assert names >= CATEGORIES
    assert "healthy" in names
    assert len([n for n in names if n.startswith("mixed_")]) >= 2


def test_unknown_scenario_names_valid_ones() -> None:
    with pytest.raises(InputError, match="healthy"):
        simulate("nope", Path("/nonexistent"))


def test_same_seed_same_bytes_other_seed_differs(tmp_path: Path) -> None:
    a = simulate("gpu_thermal", tmp_path / "a", seed=4, nodes=4, minutes=3)
    b = simulate("gpu_thermal", tmp_path / "b", seed=4, nodes=4, minutes=3)
    c = simulate("gpu_thermal", tmp_path / "c", seed=5, nodes=4, minutes=3)
    assert _digest(a) == _digest(b)
    assert _digest(a) != _digest(c)


def test_files_are_well_formed(tmp_path: Path) -> None:
    d = simulate("pcie_riser", tmp_path / "s", seed=1, nodes=4, minutes=3)
    inv = yaml.safe_load((d / "inventory.yaml").read_text())
    assert len([n for r in inv["racks"] for n in r["nodes"]]) == 4
    text = (d / "metrics.om").read_text()
    assert text.endswith("# EOF\n")
    sample = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*\{[^}]*\} \S+ \d+\.\d{3}$')
    for line in text.splitlines()[:-1]:
        assert line.startswith("# ") or sample.match(line), line
    for line in (d / "traces.otlp.jsonl").read_text().splitlines():
        assert "resourceSpans" in json.loads(line)
    stamp = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00 \S+ ")
    for line in (d / "kernel.log").read_text().splitlines():
        assert stamp.match(line), line


def _counter_growth(text: str, family: str, key: str) -> dict[str, float]:
    """Last minus first value per series whose labels contain ``key``."""
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith(family + "{"):
            lab, v, _ = line.rsplit(" ", 2)
            first.setdefault(lab, float(v))
            last[lab] = float(v)
    return {k: last[k] - first[k] for k in first if key in k}


@pytest.mark.slow
def test_seed_switch_crc_magnitudes(tmp_path: Path) -> None:
    # seed document: CRC ratio 0.1 % takes effective compute from 92 % to 35 % (within 10 %).
    tr = _truth(simulate("seed_switch_crc", tmp_path / "s", seed=0))
    job = tr["jobs"][0]
    assert job["before_fault"]["compute_share"] == pytest.approx(0.92, rel=0.1)
    assert job["during_fault"]["compute_share"] == pytest.approx(0.35, rel=0.1)


@pytest.mark.slow
def test_seed_optical_ber_magnitudes(tmp_path: Path) -> None:
    # seed document: pre-FEC BER 1e-12 -> 5e-10 moves the step from 210 ms to 230 ms (within 10 %).
    d = simulate("seed_optical_ber", tmp_path / "s", seed=0)
    job = _truth(d)["jobs"][0]
    assert job["before_fault"]["median_step_s"] == pytest.approx(0.210, rel=0.1)
    assert job["during_fault"]["median_step_s"] == pytest.approx(0.230, rel=0.1)


def test_bad_port_retransmits_only_behind_it(tmp_path: Path) -> None:
    d = simulate("seed_switch_crc", tmp_path / "s", seed=2, minutes=4)
    tr = _truth(d)
    port = tr["faults"][0]["root_cause"]["id"]
    inv = yaml.safe_load((d / "inventory.yaml").read_text())
    behind = {(n["id"], nic["name"]) for r in inv["racks"] for n in r["nodes"] for nic in n["nics"]
              if nic["switch_port"] == port}
    text = (d / "metrics.om").read_text()
    growth = _counter_growth(text, "suanli_rdma_retransmits_total", "node=")
    hot = {k for k, v in growth.items() if v > 1000}
    assert hot, "retransmits must rise somewhere"
    for node, nic in behind:
        assert any(f'node="{node}",nic="{nic}"' in k for k in hot)
    # Background retransmits are ~0.3/s: a 4-minute window cannot reach 1000 on a healthy NIC.
    crc = _counter_growth(text, "suanli_switch_port_crc_errors_total", "switch=")
    sw, p = port.split("/")
    assert max(crc, key=lambda k: crc[k]).endswith(f'{{switch="{sw}",port="{p}"}}')


def test_storage_slow_grows_only_its_readers(tmp_path: Path) -> None:
    d = simulate("mixed_storage_nvlink", tmp_path / "s", seed=1)
    tr = _truth(d)
    slow = next(f for f in tr["faults"] if f["category"] == "storage_slow")
    inv = yaml.safe_load((d / "inventory.yaml").read_text())
    readers = {j["id"] for j in inv["jobs"] if j["storage"] == slow["root_cause"]["id"]}
    assert set(slow["jobs"]) == readers


def test_inventory_loads_with_project_loader(tmp_path: Path) -> None:
    from suanli.inventory import load_inventory

    d = simulate("healthy", tmp_path / "s", seed=0, nodes=4, minutes=2)
    inv = load_inventory(d / "inventory.yaml")
    assert len(inv.nodes) == 4
    assert len(inv.gpus) == 32


def test_demo_cluster_has_two_jobs_and_two_faults(tmp_path: Path) -> None:
    from suanli.sim import demo_cluster

    tr = _truth(demo_cluster(tmp_path / "demo", seed=1))
    assert tr["cluster"]["nodes"] == 16
    assert len(tr["jobs"]) == 2
    assert {f["category"] for f in tr["faults"]} == {"switch_port_errors", "gpu_thermal"}


def test_bad_sizes_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--nodes"):
        simulate("healthy", tmp_path / "x", nodes=1)
    with pytest.raises(InputError, match="--nodes"):
        simulate("healthy", tmp_path / "x", nodes=1281)


def test_exporter_restart_resets_one_nodes_probe_counters(tmp_path: Path) -> None:
    d = simulate("healthy", tmp_path / "s", seed=2, nodes=4, minutes=5)
    reset_nodes = set()
    for line_key, values in _series(d / "metrics.om", "suanli_rdma_retransmits_total").items():
        if any(b < a for a, b in itertools.pairwise(values)):
            reset_nodes.add(re.search(r'node="([^"]+)"', line_key).group(1))  # type: ignore[union-attr]
    assert len(reset_nodes) == 1


def _series(path: Path, family: str) -> dict[str, list[float]]:
    out: dict[str, list[tuple[float, float]]] = {}
    for line in path.read_text().splitlines():
        if line.startswith(family + "{"):
            lab, v, ts = line.rsplit(" ", 2)
            out.setdefault(lab, []).append((float(ts), float(v)))
    return {k: [v for _, v in sorted(s)] for k, s in out.items()}


@pytest.mark.parametrize("model", ["A100-SXM", "H200-SXM", "B200"])
def test_other_gpu_models(model: str, tmp_path: Path) -> None:
    from suanli.sim import Scenario, simulate_custom

    d = simulate_custom(Scenario("m", "", gpu_model=model), tmp_path / model, seed=1, nodes=2, minutes=2)
    inv = yaml.safe_load((d / "inventory.yaml").read_text())
    assert set(inv["gpu_models"]) == {model}
    assert {g["model"] for r in inv["racks"] for n in r["nodes"] for g in n["gpus"]} == {model}


def test_bytes_do_not_depend_on_python_hash_seed(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    code = ("import sys; from pathlib import Path; from suanli.sim import simulate; "
            "simulate('mixed_port_thermal', Path(sys.argv[1]), seed=3, nodes=4, minutes=2)")
    for h in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": h}
        subprocess.run([sys.executable, "-c", code, str(tmp_path / h)], check=True, env=env, timeout=120)
    assert _digest(tmp_path / "1") == _digest(tmp_path / "2")


def test_truth_and_labels_match_the_independent_simulator(tmp_path: Path) -> None:
    from tests.conftest import shared_path

    theirs = shared_path("scenarios", "switch_port_errors")
    ours = simulate("switch_port_errors", tmp_path / "s", seed=1, nodes=4, minutes=2)
    t_theirs, t_ours = _truth(theirs), _truth(ours)
    assert set(t_theirs) - {"generated_in_s"} <= set(t_ours)
    assert set(t_theirs["faults"][0]) <= set(t_ours["faults"][0])
    assert set(t_theirs["cluster"]) <= set(t_ours["cluster"])
    assert set(t_theirs["jobs"][0]) <= set(t_ours["jobs"][0])

    def label_sets(d: Path) -> set[tuple[str, tuple[str, ...]]]:
        out = set()
        for line in (d / "metrics.om").read_text().splitlines():
            if not line.startswith("#"):
                name, rest = line.split("{", 1)
                keys = set(re.findall(r'(\w+)="', rest.rsplit("}", 1)[0])) - {"pod", "namespace", "container"}
                out.add((name, tuple(sorted(keys))))      # Kubernetes labels are on in some clusters only
        return out

    assert label_sets(theirs) == label_sets(ours)
