"""The API's list views (suanli.web.views): pagination, sorting, the rack aggregate and the
rack-level latency heatmap, with every expected number worked out here by hand, and a 10,240-GPU
inventory whose pages stay one page long."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from suanli.analysis.fabric import FabricResult, Heatmap
from suanli.inventory import load_inventory
from suanli.web.views import MAX_LIMIT, Page, fabric_view, gpu_rows, paginate, rack_summary

ROWS = [{"id": "a", "x": 3.0}, {"id": "b", "x": None}, {"id": "c", "x": 1.0}, {"id": "d", "x": 2.0},
        {"id": "e", "x": float("nan")}]


def test_numbers_sort_both_ways_and_missing_values_go_last() -> None:
    up = paginate(ROWS, Page(sort="x"))
    down = paginate(ROWS, Page(sort="x", desc=True))
    assert [r["id"] for r in up["rows"]][:3] == ["c", "d", "a"]
    assert [r["id"] for r in down["rows"]][:3] == ["a", "d", "c"]
    assert {r["id"] for r in up["rows"][3:]} == {"b", "e"} == {r["id"] for r in down["rows"][3:]}


def test_offset_limit_and_filter() -> None:
    page = paginate(ROWS, Page(offset=1, limit=2, sort="id"))
    assert page["total"] == 5 and page["offset"] == 1 and [r["id"] for r in page["rows"]] == ["b", "c"]
    assert paginate(ROWS, Page(q="D"))["total"] == 1            # case-insensitive substring
    assert paginate(ROWS, Page(limit=10 ** 9))["limit"] == MAX_LIMIT
    assert [r["id"] for r in paginate(ROWS, Page(sort="id", desc=True))["rows"]] == ["e", "d", "c", "b", "a"]
    words = [{"id": "x", "rec": "watch"}, {"id": "y", "rec": None}, {"id": "z", "rec": "ok"}]
    assert [r["id"] for r in paginate(words, Page(sort="rec", desc=True))["rows"]] == ["x", "z", "y"]
    assert [r["id"] for r in paginate(words, Page(sort="rec"))["rows"]] == ["z", "x", "y"]


def _inventory(tmp: Path, racks: int, nodes_per_rack: int, gpus: int = 8) -> Path:
    lines = ["cluster: big", "currency: USD", "racks:"]
    for r in range(racks):
        lines += [f"- id: rack-{r:02d}", "  nodes:"]
        for n in range(nodes_per_rack):
            lines += [f"  - id: node-{r * nodes_per_rack + n:04d}", "    gpus:"]
            k = r * nodes_per_rack + n
            lines += [f"    - {{index: {i}, uuid: GPU-{k:08x}-0000-0000-0000-{i:012x}}}" for i in range(gpus)]
    path = tmp / "inventory.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_rack_summary_by_hand(tmp_path: Path) -> None:
    inv = load_inventory(_inventory(tmp_path, racks=2, nodes_per_rack=1, gpus=2))
    preds = [{"kind": "gpu", "id": "node-0000/gpu0", "health_score": 0.4, "probability": 0.3, "recommendation": "retire"},
             {"kind": "gpu", "id": "node-0000/gpu1", "health_score": 0.9, "probability": 0.01, "recommendation": "ok"},
             {"kind": "gpu", "id": "node-0001/gpu0", "health_score": 0.8, "probability": 0.02, "recommendation": "watch"}]
    rows = gpu_rows(preds, inv)
    assert len(rows) == 4 and {r["rack"] for r in rows} == {"rack-00", "rack-01"}
    r0, r1 = rack_summary(rows)
    # rack-00: scores 0.4, 0.9 -> min 0.4, mean 0.65, max P 0.3, one GPU under 0.5 (also "retire")
    assert r0 == {"rack": "rack-00", "gpus": 2, "scored": 2, "min_health_score": 0.4, "mean_health_score": 0.65,
                  "max_probability": 0.3, "at_risk": 1}
    # rack-01: one scored GPU (0.8, but "watch": at risk), node-0001/gpu1 has no prediction
    assert r1 == {"rack": "rack-01", "gpus": 2, "scored": 1, "min_health_score": 0.8, "mean_health_score": 0.8,
                  "max_probability": 0.02, "at_risk": 1}


def test_10240_gpus_one_page_and_40_racks(tmp_path: Path) -> None:
    inv = load_inventory(_inventory(tmp_path, racks=40, nodes_per_rack=32))
    rows = gpu_rows([], inv)
    assert len(rows) == 40 * 32 * 8 == 10_240
    page = paginate(rows, Page(offset=10_200, limit=100, sort="id"))
    assert page["total"] == 10_240 and len(page["rows"]) == 40      # the last 40 of 10,240
    assert page["rows"][-1]["id"] == "node-1279/gpu7"
    racks = rack_summary(rows)
    assert len(racks) == 40 and all(r["gpus"] == 256 and r["scored"] == 0 for r in racks)


def _heatmap(racks: tuple[str, ...], lat: list[list[float]], base: float = 1.0) -> FabricResult:
    n = len(racks)
    nodes = tuple(f"n{i}" for i in range(n))
    h = Heatmap(nodes, racks, np.array(lat, dtype=np.float64), np.full((n, n), base), (("n0", "n1", "link"),), ("a note",))
    return FabricResult([], h, [], {})


def test_heatmap_by_rack_keeps_the_worst_pair() -> None:
    nan = float("nan")
    # nodes n0, n1 in rack A, n2 in rack B; baseline 2 s everywhere
    lat = [[nan, 4.0, 2.0], [6.0, nan, 10.0], [nan, nan, nan]]
    view = fabric_view(_heatmap(("A", "A", "B"), lat, base=2.0), by="rack")
    assert view["by"] == "rack" and view["labels"] == ["A", "B"]
    # A->A: max(4/2, 6/2) = 3; A->B: max(2/2, 10/2) = 5; B->*: never probed
    assert view["ratio"][0] == [3.0, 5.0]
    assert view["ratio"][1] == [None, None]
    by_node = fabric_view(_heatmap(("A", "A", "B"), lat, base=2.0))
    assert by_node["by"] == "node" and by_node["ratio"][1] == [3.0, None, 5.0]
    assert by_node["marks"] == [{"src": "n0", "dst": "n1", "class": "link"}] and by_node["notes"] == ["a note"]


def test_heatmap_above_128_nodes_is_served_by_rack() -> None:
    n = 129
    racks = tuple(f"r{i // 43}" for i in range(n))      # 3 racks of 43 nodes
    lat = np.ones((n, n))
    lat[5, 100] = 7.0                                     # r0 -> r2
    view = fabric_view(_heatmap(racks, lat.tolist()))
    assert view["by"] == "rack" and view["labels"] == ["r0", "r1", "r2"]
    assert view["ratio"][0][2] == 7.0 and view["ratio"][2][0] == 1.0
    assert not any(math.isnan(v) for row in view["ratio"] for v in row if v is not None)
