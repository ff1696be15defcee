"""``suanli diagnose ... --remote-write URL``: the derived series and the ``suanli_*_info`` topology
series land in a real Prometheus 2.42 and a real VictoriaMetrics 1.79 and are queryable; in
VictoriaMetrics (which holds the scenario's own DCGM series) PromQL joins the exporter's series
to canonical ids through ``suanli_gpu_info``. Expected counts are read off inventory.yaml."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from suanli.timefmt import parse_time
from tests.backends.conftest import scenario_path
from tests.backends.servers import Server, start_prometheus, start_victoria_metrics, vm_import
from tests.cli.helpers import assert_one_line_error, run

pytestmark = pytest.mark.slow

SCENARIO = "pcie_riser"


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Server]]:
    """A Prometheus with nothing in it, and a VictoriaMetrics holding the scenario's metrics."""
    work = tmp_path_factory.mktemp("writeback")
    prom = start_prometheus(work / "prom", work / "prom" / "data")
    vm = start_victoria_metrics(work / "vm")
    try:
        vm_import(vm, scenario_path(SCENARIO) / "metrics.om")
        yield {"prometheus": prom, "victoriametrics": vm}
    finally:
        prom.stop()
        vm.stop()


def _query(server: Server, q: str, t: float) -> list[dict[str, Any]]:
    if server.name == "victoria-metrics":
        httpx.get(server.url + "/internal/force_flush", timeout=60).raise_for_status()
    resp = httpx.get(server.url + "/api/v1/query", params={"query": q, "time": f"{t:.3f}"}, timeout=60)
    resp.raise_for_status()
    return resp.json()["data"]["result"]  # type: ignore[no-any-return]


def _inventory() -> dict[str, Any]:
    return yaml.safe_load((scenario_path(SCENARIO) / "inventory.yaml").read_text())  # type: ignore[no-any-return]


@pytest.mark.parametrize("kind", ["prometheus", "victoriametrics"])
def test_derived_and_info_series_land(kind: str, fresh: dict[str, Server]) -> None:
    server = fresh[kind]
    proc = run("diagnose", scenario_path(SCENARIO), "--json", "--remote-write", server.url + "/api/v1/write",
               timeout_s=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert "remote write: " in proc.stderr and " rejected" not in proc.stderr, proc.stderr
    t = parse_time(doc["window"]["end"])
    inv = _inventory()
    gpus = [g for r in inv["racks"] for n in r["nodes"] for g in n["gpus"]]
    nics = [c for r in inv["racks"] for n in r["nodes"] for c in n.get("nics", [])]
    assert int(float(_query(server, "count(suanli_gpu_info)", t)[0]["value"][1])) == len(gpus)
    assert int(float(_query(server, "count(suanli_nic_info)", t)[0]["value"][1])) == len(nics)
    ports = len([c for c in nics if c.get("switch_port")]) + 2 * len(inv.get("links", []))
    assert int(float(_query(server, "count(suanli_port_info)", t)[0]["value"][1])) == ports
    uuid = gpus[0]["uuid"]
    (row,) = _query(server, f'suanli_gpu_info{{UUID="{uuid}"}}', t)
    first_node = inv["racks"][0]["nodes"][0]["id"]
    assert row["metric"]["gpu_id"] == f"{first_node}/gpu{gpus[0]['index']}" and row["metric"]["Hostname"] == first_node
    for job in doc["efficiency"]["jobs"]:
        (mfu,) = _query(server, f'suanli_job_mfu_ratio{{job_id="{job["id"]}"}}', t)
        assert float(mfu["value"][1]) == pytest.approx(job["mfu"], rel=1e-9)
    (inc,) = doc["incidents"]
    (saving,) = _query(server, f'suanli_incident_expected_saving{{incident="{inc["id"]}"}}', t)
    assert float(saving["value"][1]) == pytest.approx(inc["decision"]["saving"])
    assert saving["metric"]["root_id"] == inc["root_cause"]["id"] and saving["metric"]["currency"] == "USD"


def test_promql_joins_exporter_series_to_canonical_ids(fresh: dict[str, Server]) -> None:
    vm = fresh["victoriametrics"]
    proc = run("diagnose", scenario_path(SCENARIO), "--json", "--remote-write", vm.url + "/api/v1/write",
               timeout_s=300)
    assert proc.returncode == 0, proc.stderr
    t = parse_time(json.loads(proc.stdout)["window"]["end"])
    joined = _query(vm, "max by (gpu_id, rack) (DCGM_FI_DEV_GPU_TEMP * on(Hostname, gpu) group_left(gpu_id, rack) "
                        "suanli_gpu_info)", t)
    gpus = {f"{n['id']}/gpu{g['index']}": r["id"] for r in _inventory()["racks"] for n in r["nodes"] for g in n["gpus"]}
    assert {row["metric"]["gpu_id"]: row["metric"]["rack"] for row in joined} == gpus


def test_a_bad_or_dead_receiver_is_one_line(tmp_path: Path) -> None:
    proc = run("diagnose", scenario_path("healthy"), "--remote-write", "localhost:9090")
    assert_one_line_error(proc.returncode, proc.stderr, "--remote-write", "http://")
    proc = run("diagnose", scenario_path("healthy"), "--remote-write", "http://127.0.0.1:9/api/v1/write",
               timeout_s=300)
    assert_one_line_error(proc.returncode, proc.stderr, "--remote-write: nothing written", "127.0.0.1:9")
