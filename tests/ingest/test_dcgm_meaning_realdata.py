"""dcgm-exporter and node-exporter label meanings on real exporter output (issue 12 item 4,
"Metrics"): ``Hostname`` / ``hostname`` / a pod name in that label, node-exporter's NUMA ``node``
label, and the streaming parser and the DuckDB bulk reader agreeing on every series."""

from __future__ import annotations

from pathlib import Path

import pytest

from suanli.ingest import bulk_om
from suanli.ingest.openmetrics_file import read_openmetrics
from suanli.ingest.records import IngestReport
from suanli.inventory import Inventory, parse_inventory
from suanli.store.duck import DuckStore
from tests.conftest import shared_path

_STAMP = 1_781_000_000.0       # when the scrape arrived (the files carry no timestamps)

# issue 303's host phx8-2fa with its GPUs 2 and 3 (indexes as the file's gpu label), other UUIDs than
# the file's, so that only the host label and the index can find them; pod "trainer-0" of a job on it
_PHX = """
cluster: t
racks:
  - id: r1
    nodes:
      - id: phx8-2fa
        gpus:
          - {index: 2, uuid: GPU-00000000-0000-0000-0000-000000000002}
          - {index: 3, uuid: GPU-00000000-0000-0000-0000-000000000003}
jobs:
  - id: j
    precision: bf16
    parallelism: {dp: 2}
    ranks:
      - {rank: 0, gpu: phx8-2fa/gpu2, pod: gpu-busy-test-all-gpus}
      - {rank: 1, gpu: phx8-2fa/gpu3, pod: gpu-busy-test-all-gpus}
"""


def _real(name: str) -> Path:
    return shared_path("realdata", "third-party", "metrics", name)


def _stream(path: Path, inv: Inventory) -> set[tuple[str, str | None, str | None]]:
    rep = IngestReport()
    got = {(k.metric, k.entity_kind, k.entity_id) for k, _, _ in read_openmetrics(path, inv.resolver, rep,
                                                                                  arrival_ts=_STAMP)}
    assert rep.rejected == 0, rep.reasons
    return got


def _bulk(path: Path, inv: Inventory) -> set[tuple[str, str | None, str | None]]:
    store = DuckStore(None)
    rep = IngestReport()
    txn = store.transaction(path.name)
    assert bulk_om.load_openmetrics(path, txn, inv.resolver, rep, arrival_ts=_STAMP), "bulk reader declined"
    txn.commit(rep)
    return {(k.metric, k.entity_kind, k.entity_id) for k in store.series_keys()}


def _variant(tmp_path: Path, name: str, old: str, new: str) -> Path:
    """The real file with one spelling changed (the file itself is never edited)."""
    out = tmp_path / name
    text = _real(name).read_text(encoding="utf-8")
    assert old in text
    out.write_text(text.replace(old, new), encoding="utf-8")
    return out


_WANT = {("DCGM_FI_DEV_GPU_UTIL", "gpu", "phx8-2fa/gpu3"), ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gpu", "phx8-2fa/gpu3"),
         ("DCGM_FI_DEV_GPU_UTIL", "gpu", "phx8-2fa/gpu2"), ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gpu", "phx8-2fa/gpu2")}


@pytest.mark.parametrize("spelling", ["Hostname", "hostname", "pod name"])
def test_host_label_spellings_and_a_pod_name_resolve_alike(tmp_path: Path, spelling: str) -> None:
    inv = parse_inventory(_PHX)
    name = "dcgm-issue303-quadro-rtx5000-xid31.prom"
    if spelling == "Hostname":
        path = _real(name)
    elif spelling == "hostname":          # dcgm-exporter from 2026 on
        path = _variant(tmp_path, name, 'Hostname="', 'hostname="')
    else:                                 # Hostname holding the Kubernetes pod's name
        path = _variant(tmp_path, name, 'Hostname="phx8-2fa"', 'Hostname="gpu-busy-test-all-gpus"')
    assert _stream(path, inv) == _WANT
    assert _bulk(path, inv) == _WANT


def test_fqdn_hostname_and_unknown_pods() -> None:
    # issue 226: Hostname "l40s.example.com"; the inventory's node is "l40s"
    inv = parse_inventory("""
cluster: t
racks:
  - id: r1
    nodes:
      - id: l40s
        gpus:
          - {index: 0, uuid: GPU-00000000-0000-0000-0000-000000000000}
          - {index: 1, uuid: GPU-00000000-0000-0000-0000-000000000001}
""")
    want = {("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gpu", "l40s/gpu0"), ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gpu", "l40s/gpu1"),
            ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", None, None)}      # gpu 2: the inventory lists no GPU 2
    path = _real("dcgm-issue226-l40s-fqdn-hostname.prom")
    assert _stream(path, inv) == want == _bulk(path, inv)


def test_numa_node_label_is_not_a_host() -> None:
    # node-exporter's fixture: node_memory_numa_*{node="0"|"1"|"2"} and node_zoneinfo_*{node="0"}
    # name NUMA nodes. An inventory whose hosts are called "0", "1", "2" must not take them.
    inv = parse_inventory("""
cluster: t
racks:
  - id: r1
    nodes: [{id: "0"}, {id: "1"}, {id: "2"}]
""")
    path = _real("node_exporter-e2e-output.txt")
    got = _stream(path, inv)
    numa = {(m, k, e) for m, k, e in got if m.startswith(("node_memory_numa_", "node_zoneinfo_", "node_buddyinfo_"))}
    assert numa and all(e is None for _, _, e in numa)
    assert got == _bulk(path, inv)
