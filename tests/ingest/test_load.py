"""The public scenario folders load with nothing rejected and every entity resolved."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from suanli.errors import InputError
from suanli.ingest.load import load_paths
from suanli.ingest.plan import plan_paths
from suanli.ingest.records import IngestReport
from suanli.store.api import missing_inputs
from suanli.store.duck import DuckStore
from tests.conftest import shared_path

SCENARIOS = ["healthy", "switch_port_errors", "pcie_riser"]
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def _file_entities(folder: Path) -> dict[str, set[str]]:
    """GPUs, NICs and switch ports named by metrics.om, mapped with inventory.yaml read here."""
    inv = yaml.safe_load((folder / "inventory.yaml").read_text(encoding="utf-8"))
    uuid_to_gpu = {g["uuid"]: f"{n['id']}/gpu{g['index']}"
                   for r in inv["racks"] for n in r["nodes"] for g in n.get("gpus", [])}
    out: dict[str, set[str]] = {"gpu": set(), "nic": set(), "switch_port": set()}
    for line in (folder / "metrics.om").read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            continue
        labels = dict(_LABEL.findall(line))
        if line.startswith("DCGM_"):
            out["gpu"].add(uuid_to_gpu[labels["UUID"]])
        elif line.startswith("node_infiniband_"):
            out["nic"].add(f"{labels['instance'].split(':')[0]}/{labels['device']}")
        elif line.startswith("suanli_switch_port_"):
            out["switch_port"].add(f"{labels['switch']}/{labels['port']}")
    return out


@pytest.mark.parametrize("name", SCENARIOS)
def test_public_scenario_loads_clean_and_resolved(name: str, tmp_path: Path) -> None:
    folder = shared_path("scenarios", name)
    store = DuckStore(tmp_path / "s.duckdb")
    seen: list[tuple[str, int, int]] = []
    report = load_paths([folder], store, progress=lambda what, done, total: seen.append((what, done, total)))
    assert report.rejected == 0, report.reasons
    assert report.unresolved == {}, report.unresolved
    assert seen[-1] == ("done", 4, 4)                     # metrics, traces, kernel.log, trainer.log
    n_lines = sum(1 for ln in (folder / "metrics.om").read_text(encoding="utf-8").splitlines()
                  if ln and not ln.startswith("#"))
    assert report.loaded["samples"] == n_lines
    assert store.unresolved_series() == []

    expected = _file_entities(folder)
    keys = store.series_keys()
    for kind in ("gpu", "switch_port"):
        assert {k.entity_id for k in keys if k.entity_kind == kind} == expected[kind]
    ib = {k.entity_id for k in keys if k.metric.startswith("node_infiniband_")}
    assert ib == expected["nic"]

    # every rank of the inventory's jobs that shows up in the spans is a rank of that job
    inv = yaml.safe_load((folder / "inventory.yaml").read_text(encoding="utf-8"))
    ranks = {(j["id"], r["rank"]) for j in inv["jobs"] for r in j.get("ranks", [])}
    spans = store.spans(names=["train_step"])
    assert len(spans) > 0
    seen_ranks = set(zip(spans.job_id.tolist(), spans.rank.tolist(), strict=True))
    assert seen_ranks <= ranks if ranks else all(r >= 0 for _, r in seen_ranks)
    assert missing_inputs(store) == []
    store.close()
    # reopened, the store still has the inventory and the data
    again = DuckStore(tmp_path / "s.duckdb")
    assert again.inventory_text() == (folder / "inventory.yaml").read_text(encoding="utf-8")
    assert len(again.series_keys()) == len(keys)
    again.close()


def test_plan_and_missing_inputs(tmp_path: Path) -> None:
    (tmp_path / "inventory.yaml").write_text("cluster: c\nracks: []\n", encoding="utf-8")
    (tmp_path / "metrics.om").write_text('x{node="n"} 1 1\n# EOF\n', encoding="utf-8")
    (tmp_path / "truth.json").write_text("{}", encoding="utf-8")
    (tmp_path / "notes.md").write_text("hi", encoding="utf-8")
    plan = plan_paths([tmp_path])
    assert plan.inventory == tmp_path / "inventory.yaml"
    assert plan.metrics == [tmp_path / "metrics.om"] and plan.traces == [] and plan.logs == []
    with pytest.raises(InputError):
        plan_paths([tmp_path / "nope"])
    store = DuckStore(None)
    assert missing_inputs(store) == ["metrics", "traces", "logs"]


def test_single_files_use_the_inventory_kept_in_the_store(tmp_path: Path) -> None:
    folder = shared_path("scenarios", "healthy")
    store = DuckStore(tmp_path / "s.duckdb")
    load_paths([folder / "inventory.yaml"], store)
    metrics = tmp_path / "extra.prom"
    uuid = re.search(r"uuid: (GPU-[0-9a-f-]+)", (folder / "inventory.yaml").read_text(encoding="utf-8"))
    assert uuid is not None
    metrics.write_text(f'DCGM_FI_DEV_GPU_TEMP{{UUID="{uuid.group(1)}"}} 60 1700000000000\n', encoding="utf-8")
    report = load_paths([metrics], store)
    assert isinstance(report, IngestReport) and report.rejected == 0
    (s,) = store.series("DCGM_FI_DEV_GPU_TEMP")
    assert s.key.entity_kind == "gpu" and s.ts.tolist() == [1700000000.0]   # Prometheus text: ms
    assert np.array_equal(s.values, [60.0])
    assert "traces" in missing_inputs(store)


def test_the_readers_take_their_settings_from_the_ingest_config(tmp_path: Path) -> None:
    from suanli.ingest.load import IngestConfig
    from suanli.ingest.openmetrics import OpenMetricsConfig

    metrics = tmp_path / "m.om"
    metrics.write_text("g 1 1700000000\ng 2 1700000100\n# EOF\n", encoding="utf-8")
    late = IngestConfig(openmetrics=OpenMetricsConfig(min_ts_s=1_700_000_050.0))   # the first line is too early
    report = load_paths([metrics], DuckStore(None), config=late)
    assert report.loaded["samples"] == 1 and report.reasons == ["m.om:1: timestamp out of range"]
