"""Metric maps: a TSDB whose exporters name things their own way. The switch_port_errors scenario is
rewritten as other exporters would have written it (ibqueryerrors-style switch port counters,
node-exporter's hw counter for retransmits, dcgm-exporter behind Kubernetes relabelling, renamed
and rescaled GPU series), loaded into a real VictoriaMetrics 1.79, and diagnosed through the
presets and a map file: the incidents and ledger of the original files. Without the maps the
switch port's CRC counters are not read (the names matter)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from suanli.errors import InputError
from suanli.store.promql.metric_map import PRESETS, MetricMap, Source, combine, load_metric_map
from tests.backends.conftest import scenario_path
from tests.backends.servers import Server, start_victoria_metrics, vm_import
from tests.backends.test_diagnose_cli import _files, _flags, _same
from tests.cli.helpers import run

SCENARIO = "switch_port_errors"
MAP_FILE = """\
metrics:
  DCGM_FI_DEV_GPU_TEMP: gpu_temp_celsius
  DCGM_FI_DEV_FB_USED: {name: gpu_fb_used_bytes, scale: 9.5367431640625e-07}
"""


def test_names_and_labels_as_suanli_reads_them() -> None:
    m = combine([PRESETS["ibdiagnet"], PRESETS["dcgm-exporter-kubernetes"],
                 MetricMap("f", {"DCGM_FI_DEV_GPU_TEMP": Source("gpu_temp_celsius")})])
    tsdb = ["infiniband_portrcverrors_total", "DCGM_FI_DEV_GPU_TEMP", "gpu_temp_celsius", "up"]
    assert m.canonical(tsdb) == ["DCGM_FI_DEV_GPU_TEMP", "suanli_switch_port_crc_errors_total", "up"]
    assert m.source("suanli_switch_port_crc_errors_total").name == "infiniband_portrcverrors_total"
    assert m.relabel("suanli_switch_port_crc_errors_total", {"local_name": "leaf-01", "local_port": "3",
                                                             "remote_name": "node-001 HCA-1"}) == \
        {"switch": "leaf-01", "port": "3", "remote_name": "node-001 HCA-1"}
    # the map's own renames reach every series, a metric's only its own; a renamed label wins
    assert m.relabel("DCGM_FI_DEV_GPU_TEMP", {"Hostname": "dcgm-exporter-x7", "kubernetes_node": "node-002",
                                              "local_port": "1"}) == {"Hostname": "node-002", "local_port": "1"}


def test_bad_map_files_name_the_key(tmp_path: Path) -> None:
    path = tmp_path / "map.yaml"
    cases = {"metrics:\n  gpu_temp: x\n": "metrics.gpu_temp",
             "metrics:\n  DCGM_FI_DEV_GPU_TEMP: {name: x, scale: 0}\n": "metrics.DCGM_FI_DEV_GPU_TEMP",
             "metrics:\n  DCGM_FI_DEV_GPU_TEMP: {name: x, labels: [a]}\n": "metrics.DCGM_FI_DEV_GPU_TEMP.labels",
             "labels: {a: 1}\n": "labels", "other: 1\n": "map.yaml"}
    for text, where in cases.items():
        path.write_text(text)
        with pytest.raises(InputError) as exc:
            load_metric_map(str(path))
        assert where in str(exc.value) and str(path) in str(exc.value)
    with pytest.raises(InputError, match="neither a preset"):
        load_metric_map("no-such-preset")
    path.write_text(MAP_FILE)
    assert load_metric_map(str(path)).source("DCGM_FI_DEV_FB_USED") == Source("gpu_fb_used_bytes", 2.0 ** -20)


_PORT = re.compile(r'^(suanli_switch_port_(crc_errors|packets)_total)\{switch="([^"]+)",port="p(\d+)"\}')
_RDMA = re.compile(r'^suanli_rdma_retransmits_total\{node="([^"]+)",nic="([^"]+)"\}')
_HOST = re.compile(r'Hostname="([^"]+)"')


def _rewrite(line: str) -> str:
    """One metrics.om line as the other exporters would have written it."""
    m = _PORT.match(line)
    if m:
        name = "infiniband_portrcverrors_total" if m[2] == "crc_errors" else "infiniband_portrcvpkts_total"
        return f'{name}{{local_name="{m[3]}",local_port="{m[4]}"}}' + line[m.end():]
    m = _RDMA.match(line)
    if m:
        return (f'node_infiniband_packet_sequence_errors_total{{instance="{m[1]}:9100",device="{m[2]}",port="1"}}'
                + line[m.end():])
    if line.startswith("DCGM_"):
        line = _HOST.sub(lambda h: f'Hostname="dcgm-exporter-{h[1][-3:]}x",kubernetes_node="{h[1]}"', line)
        if line.startswith("DCGM_FI_DEV_GPU_TEMP{"):
            line = "gpu_temp_celsius" + line[len("DCGM_FI_DEV_GPU_TEMP"):]
        elif line.startswith("DCGM_FI_DEV_FB_USED{"):
            head, value, ts = line.rstrip("\n").rsplit(" ", 2)
            line = f"gpu_fb_used_bytes{head[len('DCGM_FI_DEV_FB_USED'):]} {float(value) * 2**20!r} {ts}\n"
    return line


@pytest.fixture(scope="module")
def renamed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    work = tmp_path_factory.mktemp("renamed")
    om = work / "metrics.om"
    with (scenario_path(SCENARIO) / "metrics.om").open() as src, om.open("w") as dst:
        dst.writelines(_rewrite(line) for line in src)
    vm = start_victoria_metrics(work / "vm")
    try:
        vm_import(vm, om)
        yield vm
    finally:
        vm.stop()


def _diagnose(vm: Server, *maps: str | Path) -> dict[str, Any]:
    args = [a for m in maps for a in ("--metric-map", m)]
    proc = run("diagnose", "--prometheus", vm.url, *_flags(SCENARIO), *args, "--json", timeout_s=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


@pytest.mark.slow
def test_presets_and_a_map_file_give_the_files_diagnosis(renamed: Server, tmp_path: Path) -> None:
    path = tmp_path / "gpu.yaml"
    path.write_text(MAP_FILE)
    got = _diagnose(renamed, "ibdiagnet", "node-exporter-infiniband", "dcgm-exporter-kubernetes", path)
    _same(got, _files(SCENARIO))
    def crc(doc: dict[str, Any]) -> list[str]:
        return [e for i in doc["incidents"] for e in i["evidence"] if "CRC error ratio" in e]

    assert crc(got) == crc(_files(SCENARIO)) != []
    assert crc(_diagnose(renamed)) == []            # unmapped, the port's own counters are not read


@pytest.mark.slow
def test_discover_reads_through_the_map(renamed: Server, tmp_path: Path) -> None:
    """Discovery asks the TSDB for the exporters' series under their mapped names and relabels them:
    with the GPU temperature and memory renamed (the map file) and dcgm-exporter behind Kubernetes
    relabelling (the preset) it finds the scenario's own GPUs with their UUIDs."""
    from suanli.inventory import load_inventory, parse_inventory

    path = tmp_path / "gpu.yaml"
    path.write_text(MAP_FILE)
    truth = json.loads((scenario_path(SCENARIO) / "truth.json").read_text())
    window = ["--start", truth["window"]["start"], "--end", truth["window"]["end"]]
    original = load_inventory(scenario_path(SCENARIO) / "inventory.yaml")
    proc = run("inventory", "discover", "--prometheus", renamed.url, "--cluster", "c", *window,
               "--metric-map", "dcgm-exporter-kubernetes", "--metric-map", path, timeout_s=300)
    assert proc.returncode == 0, proc.stderr
    found = parse_inventory(proc.stdout)
    assert {g: found.gpus[g].uuid for g in found.gpus} == {g: original.gpus[g].uuid for g in original.gpus}
    assert "exporter's pod name" not in proc.stderr
