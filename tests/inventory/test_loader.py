"""Loading inventory.yaml: the public scenarios, the hand-built mini cluster, and every bad-file message."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from suanli.errors import InputError
from suanli.inventory import Inventory, load_inventory, parse_inventory
from tests.conftest import shared_path
from tests.inventory._mini import A30, MINI_YAML


@pytest.fixture(scope="module")
def mini() -> Inventory:
    return parse_inventory(MINI_YAML)


@pytest.mark.parametrize("scenario", ["healthy", "switch_port_errors", "pcie_riser"])
def test_public_scenarios_load(scenario: str) -> None:
    inv = load_inventory(shared_path("scenarios", scenario, "inventory.yaml"))
    # every public scenario: 2 racks x 4 nodes x 8 GPUs (truth.json: "nodes": 8)
    assert len(inv.nodes) == 8
    assert len(inv.gpus) == 64
    assert all(len(n.gpus) == 8 for n in inv.nodes.values())
    assert set(inv.switches) == {"leaf-01", "leaf-02", "spine-01", "spine-02"}
    assert inv.currency == "USD"
    for job in inv.jobs.values():
        # world size = dp*tp*pp, and the file lists every rank
        assert len(job.ranks) == job.world_size


def test_switch_port_errors_counts() -> None:
    inv = load_inventory(shared_path("scenarios", "switch_port_errors", "inventory.yaml"))
    # 8 nodes x 4 NICs = 32 NIC cables; 2 leaves x 8 uplinks = 16 links (32 link ends); 32 + 32 ports
    assert len(inv.nics) == 32
    assert len(inv.links) == 16
    assert len(inv.ports) == 64
    job = inv.jobs["llama-34b-continual"]
    assert (job.parallelism["dp"], job.parallelism["tp"], job.parallelism["pp"]) == (14, 4, 1)
    assert job.world_size == 56
    # start: '2026-03-02T11:25:41Z' = 2026-03-02 (day 20514 since epoch) 11:25:41 -> 1772450741
    assert job.start == 20514 * 86400 + 11 * 3600 + 25 * 60 + 41
    assert job.model.params == 33.7e9
    assert inv.gpu_price("node-001/gpu0") == 2.5


def test_mini_fields(mini: Inventory) -> None:
    assert mini.cluster == "mini"
    assert mini.currency == "EUR"
    assert len(mini.nodes) == 4 and len(mini.gpus) == 10 and len(mini.nics) == 6
    assert mini.pdus == {"pdu-01"}
    assert mini.slas == {"gold", "bronze"}
    # spine-02 has no tier: no NIC is cabled to it, so it is inferred to be a spine
    assert mini.switches["spine-02"].tier == "spine"
    job = mini.jobs["demo"]
    assert job.precision == "bf16"
    assert job.recompute == "selective"
    assert job.extra == {"owner": "team-a"}
    assert job.target_tokens == 1.5e12          # written "1.5e12": YAML 1.1 reads it as text
    assert job.model.layers == 32 and job.model.params == 7.0e9
    assert job.parallelism == {"dp": 2, "tp": 2, "pp": 2, "cp": 1, "ep": 1}
    # the 2026-03-15T00:00:00Z start: 20527 days after 1970-01-01
    assert job.start == 20527 * 86400.0
    # a rank GPU given by UUID is stored as the canonical id
    assert job.ranks[7].gpu == f"{A30}/gpu1"
    assert job.ranks[5].gpu == "node-004/gpu1"     # written NODE-004/GPU1
    assert mini.jobs["idle-job"].ranks == ()
    assert mini.jobs["idle-job"].world_size == 1


def test_kinds(mini: Inventory) -> None:
    cases = {
        "rack-01": "rack", "pdu-01": "pdu", "r6i3n0": "node", "r6i3n0/gpu3": "gpu", "r6i3n0/mlx5_1": "nic",
        "leaf-01": "switch", "leaf-01/p33": "switch_port", "leaf-01/p34~spine-02/p1": "link",
        "lustre-01": "storage", "demo": "job", "demo/rank7": "rank", "demo/rank99": "rank", "gold": "sla",
        "demo-0": "pod", "leaf-02/p40": "switch_port", "nope": None, "r6i3n0/gpu9": None,
    }
    for entity, kind in cases.items():
        assert mini.kind_of(entity) == kind, entity


def test_gpu_specs(mini: Inventory) -> None:
    v100 = mini.gpu_spec("r6i3n0/gpu0")
    assert v100 is not None and v100.tflops["fp16"] == 125 and v100.tdp_w == 300
    assert mini.gpu_price("r6i3n0/gpu0") == 0.9
    h100 = mini.gpu_spec("gsrh100-074/gpu0")
    # the file gives bf16 and a price only; fp8 = 1979 and 700 W come from the H100 SXM datasheet
    assert h100 is not None and h100.tflops["bf16"] == 989 and h100.tflops["fp8"] == 1979
    assert h100.tdp_w == 700
    a30 = mini.gpu_spec(f"{A30}/gpu0")             # built-in only: A30 datasheet 165 TFLOP/s bf16
    assert a30 is not None and a30.tflops["bf16"] == 165 and a30.gpu_hour_price is None
    assert mini.gpu_price(f"{A30}/gpu0") is None
    assert mini.gpu_spec("node-004/gpu0") is None  # no model written, two models in the file
    assert mini.gpu_spec("nope/gpu0") is None


def test_load_inventory_file_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no such file"):
        load_inventory(tmp_path / "missing.yaml")
    with pytest.raises(InputError, match=r"is a directory"):
        load_inventory(tmp_path)
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes(b"cluster: caf\xe9\n")
    with pytest.raises(InputError, match=r"not UTF-8"):
        load_inventory(bad)
    good = tmp_path / "inventory.yaml"
    good.write_text(MINI_YAML)
    assert load_inventory(good).source == str(good)


Mutation = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Mutation:
    def apply(doc: dict[str, Any]) -> None:
        parts = [int(p) if p.isdigit() else p for p in re.split(r"[.\[\]]+", path) if p]
        obj: Any = doc
        for p in parts[:-1]:
            obj = obj[p]
        if value is _DELETE:
            del obj[parts[-1]]
        else:
            obj[parts[-1]] = value
    return apply


_DELETE = object()

# (mutation, expected key path, expected message)
BAD_CASES: list[tuple[Mutation, str, str]] = [
    (_set("cluster", _DELETE), "cluster", "missing"),
    (_set("racks[1].nodes[0].gpus[1].uuid", _DELETE), "racks[1].nodes[0].gpus[1].uuid", "missing"),
    (_set("racks[0].id", _DELETE), "racks[0].id", "missing"),
    (_set("racks[0].nodes[1].id", ""), "racks[0].nodes[1].id", "empty"),
    (_set("racks[0].nodes[0].gpus[0].index", _DELETE), "racks[0].nodes[0].gpus[0].index", "missing"),
    (_set("racks[0].nodes[0].nics[0].name", _DELETE), "racks[0].nodes[0].nics[0].name", "missing"),
    (_set("switches[1].id", _DELETE), "switches[1].id", "missing"),
    (_set("links[2].a", _DELETE), "links[2].a", "missing"),
    (_set("storage[0].id", _DELETE), "storage[0].id", "missing"),
    (_set("jobs[1].id", _DELETE), "jobs[1].id", "missing"),
    (_set("jobs[0].ranks[3].gpu", _DELETE), "jobs[0].ranks[3].gpu", "missing"),
    # wrong types
    (_set("racks[0].nodes", {"id": "x"}), "racks[0].nodes", "expected a list, got a mapping"),
    (_set("racks", "rack-01"), "racks", "expected a list, got text 'rack-01'"),
    (_set("racks[0].nodes[0].gpus[0].index", "zero"), "racks[0].nodes[0].gpus[0].index",
     "expected an integer, got text 'zero'"),
    (_set("racks[0].nodes[0].gpus[0].index", -1), "racks[0].nodes[0].gpus[0].index",
     "expected an integer >= 0, got -1"),
    (_set("jobs[0].parallelism.dp", 0), "jobs[0].parallelism.dp", "expected an integer >= 1, got 0"),
    (_set("jobs[0].parallelism", [2, 2]), "jobs[0].parallelism", "expected a mapping, got a list"),
    (_set("jobs[0].tokens_per_step", "lots"), "jobs[0].tokens_per_step", "expected a number, got 'lots'"),
    (_set("jobs[0].start", "yesterday"), "jobs[0].start",
     "expected an RFC 3339 time like 2026-03-15T00:00:00Z, got 'yesterday'"),
    (_set("jobs[0].recompute", "sometimes"), "jobs[0].recompute", "expected full, selective or none, got 'sometimes'"),
    (_set("racks[0].nodes[0]", "r6i3n0"), "racks[0].nodes[0]", "expected a mapping, got text 'r6i3n0'"),
    (_set("cluster", {"name": "x"}), "cluster", "expected a string, got a mapping"),
    (_set("gpu_models.V100-SXM.tdp_w", "hot"), "gpu_models.V100-SXM.tdp_w", "expected a number, got 'hot'"),
    # dangling references
    (_set("racks[0].nodes[0].nics[0].switch_port", "leaf-09/p1"), "racks[0].nodes[0].nics[0].switch_port",
     "unknown switch 'leaf-09'"),
    (_set("racks[0].nodes[0].nics[0].switch_port", "p1"), "racks[0].nodes[0].nics[0].switch_port",
     "expected switch/port like leaf-01/p1, got 'p1'"),
    (_set("links[0].b", "spine-09/p1"), "links[0].b", "unknown switch 'spine-09'"),
    (_set("jobs[0].storage", "gpfs-01"), "jobs[0].storage", "unknown storage 'gpfs-01'"),
    (_set("jobs[0].ranks[2].gpu", "r6i3n0/gpu7"), "jobs[0].ranks[2].gpu",
     "unknown gpu 'r6i3n0/gpu7' (expected node/gpuN or a GPU UUID)"),
    (_set("switches[0].rack", "rack-09"), "switches[0].rack", "unknown rack 'rack-09'"),
    (_set("jobs[0].ranks[7].rank", 8), "jobs[0].ranks[7].rank",
     "rank 8 is outside the world size 8 (product of parallelism)"),
    # duplicates
    (_set("racks[1].id", "rack-01"), "racks[1].id", "duplicate rack id 'rack-01'"),
    (_set("racks[1].nodes[1].id", "r6i3n0"), "racks[1].nodes[1].id", "duplicate node id 'r6i3n0'"),
    (_set("racks[0].nodes[0].gpus[1].index", 0), "racks[0].nodes[0].gpus[1].index", "duplicate gpu index 0 on r6i3n0"),
    (_set("racks[1].nodes[1].gpus[0].uuid", "gpu-a6158b59-2c1e-1e63-0068-9178c4298abd"),
     "racks[1].nodes[1].gpus[0].uuid", "duplicate gpu uuid 'gpu-a6158b59-2c1e-1e63-0068-9178c4298abd'"),
    (_set("racks[0].nodes[0].nics[1].name", "mlx5_0"), "racks[0].nodes[0].nics[1].name",
     "duplicate nic name 'mlx5_0' on r6i3n0"),
    (_set("racks[0].nodes[1].nics[0].switch_port", "leaf-01/p1"), "racks[0].nodes[1].nics[0].switch_port",
     "duplicate switch_port (two cables on one port) 'leaf-01/p1'"),
    (_set("racks[0].nodes[1].nics[0].mac", "b8-ce-f6-00-00-01"), "racks[0].nodes[1].nics[0].mac",
     "duplicate mac 'b8cef6000001'"),
    (_set("links[1].a", "spine-01/p1"), "links[1].a", "duplicate link end (two cables on one port) 'spine-01/p1'"),
    (_set("links[0].a", "leaf-01/p1"), "links[0].a", "port leaf-01/p1 is already cabled to nic r6i3n0/mlx5_0"),
    (_set("switches[3].id", "spine-01"), "switches[3].id", "duplicate switch id 'spine-01'"),
    (_set("storage[1].id", "lustre-01"), "storage[1].id", "duplicate storage id 'lustre-01'"),
    (_set("jobs[1].id", "demo"), "jobs[1].id", "duplicate job id 'demo'"),
    (_set("jobs[0].ranks[1].rank", 0), "jobs[0].ranks[1].rank", "duplicate rank 0"),
]


@pytest.mark.parametrize(("mutate", "key", "what"), BAD_CASES, ids=[f"{c[1]}:{c[2][:30]}" for c in BAD_CASES])
def test_bad_file_messages(mutate: Mutation, key: str, what: str) -> None:
    doc = copy.deepcopy(yaml.safe_load(MINI_YAML))
    mutate(doc)
    text = yaml.safe_dump(doc, sort_keys=False)
    with pytest.raises(InputError) as info:
        parse_inventory(text, source="bad.yaml")
    err = info.value
    assert (err.file, err.key, err.what) == ("bad.yaml", key, what)
    assert err.line is not None and 1 <= err.line <= text.count("\n") + 1
    assert str(err) == f"bad.yaml:{err.line}: {key}: {what}"
    assert "\n" not in str(err)


def test_error_line_points_at_the_key() -> None:
    text = "cluster: c\nracks:\n  - id: r1\n    nodes:\n      - id: n1\n        gpus:\n          - {index: 0}\n"
    with pytest.raises(InputError) as info:
        parse_inventory(text)
    # the GPU mapping without uuid is on line 7
    assert str(info.value) == "inventory.yaml:7: racks[0].nodes[0].gpus[0].uuid: missing"


@pytest.mark.parametrize(("text", "message"), [
    ("", "inventory.yaml: empty file: expected a mapping with cluster, racks, switches, jobs"),
    ("   \n\n", "inventory.yaml: empty file: expected a mapping with cluster, racks, switches, jobs"),
    ("just some text\n", "inventory.yaml:1: expected a YAML mapping with cluster, racks, switches, jobs at the top"),
    ("- a\n- b\n", "inventory.yaml:1: expected a YAML mapping with cluster, racks, switches, jobs at the top"),
    ("cluster: c\n\tracks: []\n", None),
    ("cluster: [unclosed\n", None),
])
def test_not_an_inventory(text: str, message: str | None) -> None:
    with pytest.raises(InputError) as info:
        parse_inventory(text)
    if message is not None:
        assert str(info.value) == message
    else:
        assert str(info.value).startswith("inventory.yaml:2: not valid YAML")


def test_minimal_inventory() -> None:
    inv = parse_inventory("cluster: tiny\n")
    assert (inv.cluster, inv.currency, inv.nodes, inv.jobs, inv.ports) == ("tiny", "USD", {}, {}, set())
    assert inv.topology.paths("a", "b") == []
    assert inv.resolver.node("a") is None


def test_unknown_keys_are_kept(mini: Inventory) -> None:
    inv = parse_inventory(MINI_YAML + "notes: hello\nsite: {dc: fra}\n")
    assert inv.extra == {"notes": "hello", "site": {"dc": "fra"}}
    assert mini.extra == {}


def test_recompute_spellings() -> None:
    base = "cluster: c\njobs:\n  - id: j\n    "
    assert parse_inventory(base + "recompute: full\n").jobs["j"].recompute == "full"
    assert parse_inventory(base + "recompute: true\n").jobs["j"].recompute == "full"
    assert parse_inventory(base + "activation_recompute: none\n").jobs["j"].recompute is None
    assert parse_inventory(base + "recompute: false\n").jobs["j"].recompute is None
    job = parse_inventory(base + "model: {num_layers: 2, hidden_size: 64, flops_per_token: 1.2e+9}\n").jobs["j"]
    assert (job.model.layers, job.model.hidden, job.model.flops_per_token) == (2, 64, 1.2e9)
