"""The fabric adapter end to end on a hand-built cluster in an in-memory DuckStore: each category
at the right entity, symptoms not raised as findings, a messy healthy run silent."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from suanli.analysis.fabric import FabricConfig, FabricResult, analyze
from suanli.analysis.fabric.counters import CounterConfig
from suanli.ingest.records import SeriesKey, Span
from suanli.inventory.loader import parse_inventory
from suanli.store.duck import DuckStore

T0 = 1_773_000_000.0
N = 60                                   # 15 minutes of 15 s scrapes
TS = T0 + 15.0 * np.arange(N)
FAULT = 30                               # faults start at sample 30 (T0 + 450 s)

NODES = ["node-001", "node-002", "node-003", "node-004"]


def _inventory() -> str:
    lines = ["cluster: t", "racks:"]
    for r in range(2):
        lines += [f"- id: rack-0{r + 1}", "  nodes:"]
        for k in range(2):
            i = 2 * r + k
            n = NODES[i]
            lines += [f"  - id: {n}", "    gpus:"]
            lines += [f"    - {{index: {g}, uuid: GPU-{i}{g}, pci_bus_id: '0000:{g + 1}8:00.0', model: H100-SXM}}"
                      for g in range(2)]
            lines += ["    nics:"]
            lines += [f"    - {{name: mlx5_{c}, gpu: {c}, switch_port: leaf-0{r + 1}/p{2 * k + c + 1}}}" for c in range(2)]
    lines += ["switches:", "- {id: leaf-01, tier: leaf, rack: rack-01}", "- {id: leaf-02, tier: leaf, rack: rack-02}",
              "- {id: spine-01, tier: spine}", "- {id: spine-02, tier: spine}", "links:"]
    for r in range(2):
        for s in range(2):
            lines.append(f"- {{a: leaf-0{r + 1}/p{33 + s}, b: spine-0{s + 1}/p{r + 1}}}")
    lines += ["storage:", "- {id: lustre-01, kind: lustre}", "jobs:", "- id: job-a", "  storage: lustre-01",
              "  model: {params: 1.0e9}", "  precision: bf16", "  parallelism: {dp: 2, tp: 2, pp: 2}", "  ranks:"]
    lines += [f"  - {{rank: {i}, gpu: {NODES[i // 2]}/gpu{i % 2}}}" for i in range(8)]
    return "\n".join(lines) + "\n"


INV = parse_inventory(_inventory())
PORTS = sorted(INV.ports)
NICS = sorted(INV.nics)


def _key(metric: str, kind: str, eid: str, peer: str | None = None) -> SeriesKey:
    return SeriesKey(metric, (), kind, eid, peer)


def _healthy(store: DuckStore, rng: np.random.Generator) -> None:
    """Noise, a counter reset, missed scrapes, NaN and duplicated samples everywhere."""
    for p in PORTS:
        pk = np.cumsum(rng.uniform(0.9e6, 1.1e6, N) * 15.0)
        pk[40:] -= pk[39]                               # exporter restart: counter back near zero
        crc = np.zeros(N)
        crc[rng.integers(0, N)] += 1                    # one stray CRC error somewhere
        crc = np.cumsum(crc)
        keep = rng.random(N) > 0.05                     # missed scrapes
        store.add_samples(_key("suanli_switch_port_packets_total", "switch_port", p), TS[keep], pk[keep])
        store.add_samples(_key("suanli_switch_port_crc_errors_total", "switch_port", p), TS, crc)
        ber = 10 ** rng.normal(-12, 0.15, N)
        ber[7] = np.nan
        store.add_samples(_key("suanli_port_pre_fec_ber", "switch_port", p), TS, ber)
        store.add_samples(_key("suanli_port_pre_fec_ber", "switch_port", p), TS[:5], ber[:5])  # duplicates
    for c in NICS:
        store.add_samples(_key("suanli_rdma_retransmits_total", "nic", c), TS, np.zeros(N))
        store.add_samples(_key("node_infiniband_symbol_error_total", "nic", c), TS, np.zeros(N))
        store.add_samples(_key("node_infiniband_link_downed_total", "nic", c), TS, np.zeros(N))
        store.add_samples(_key("node_infiniband_port_data_transmitted_bytes_total", "nic", c), TS,
                          np.cumsum(rng.uniform(1e9, 2e9, N)))
        store.add_samples(_key("suanli_port_pre_fec_ber", "nic", c), TS, 10 ** rng.normal(-12, 0.15, N))
    for s in NODES:
        for d in NODES:
            if s != d:
                same_leaf = (NODES.index(s) // 2) == (NODES.index(d) // 2)
                base = 1.8e-6 if same_leaf else 3e-6
                store.add_samples(_key("suanli_link_latency_seconds", "node", s, d), TS,
                                  base * (1 + 0.02 * rng.standard_normal(N)))
    store.add_samples(_key("suanli_storage_read_latency_seconds", "storage", "lustre-01"), TS,
                      1e-3 * (1 + 0.03 * rng.standard_normal(N)))


def _spans(store: DuckStore, rng: np.random.Generator, slow_ranks: tuple[int, ...] = (),
           data_load_factor: float = 1.0) -> None:
    spans: list[Span] = []
    for step in range(60):
        t = T0 + 15.0 * step
        late = step >= FAULT
        for r in range(8):
            gpu = f"{NODES[r // 2]}/gpu{r % 2}"
            slow = 1.5 if late and r in slow_ranks else 1.0
            dl = 0.2 * (data_load_factor if late else 1.0) * (1 + 0.02 * rng.standard_normal())
            x = t
            for name, d in (("data_load", dl), ("forward", 3.0 * slow), ("backward", 6.0 * slow),
                            ("allreduce", 1.0), ("optimizer", 0.5 * slow)):
                d *= 1 + 0.01 * rng.standard_normal()
                spans.append(Span(f"t{step}", f"s{step}-{r}-{name}", None, name, x, x + d, "job-a", r, step,
                                  gpu, NODES[r // 2]))
                x += d
    store.add_spans(spans)


def _run(mutate: Callable[[DuckStore, np.random.Generator], None] | None = None,
         config: FabricConfig | None = None, **span_kw: float | tuple[int, ...]) -> FabricResult:
    store = DuckStore(None)
    rng = np.random.default_rng(42)
    _healthy(store, rng)
    _spans(store, rng, **span_kw)  # type: ignore[arg-type]
    if mutate is not None:
        mutate(store, rng)
    store.flush()
    return analyze(store, INV, config=config or FabricConfig())


def _counter(store: DuckStore, metric: str, kind: str, eid: str, rate_after: float) -> None:
    """Overwrite a counter (last write wins) so it rises by rate_after/s from FAULT on."""
    inc = np.where(np.arange(N) >= FAULT, rate_after * 15.0, 0.0)
    store.add_samples(_key(metric, kind, eid), TS, np.cumsum(inc))


RAIL0 = ["leaf-01/p1", "leaf-01/p3", "leaf-02/p1", "leaf-02/p3"]   # the mlx5_0 ports of job-a's four nodes


def _background(rate_per_port: float) -> Callable[[DuckStore, np.random.Generator], None]:
    def mutate(store: DuckStore, rng: np.random.Generator) -> None:
        for p in RAIL0:
            _counter(store, "suanli_switch_port_crc_errors_total", "switch_port", p, rate_per_port)
    return mutate


def test_crc_every_port_of_the_collective_counts_alike_is_no_ports_fault() -> None:
    # 2 CRC errors/s on ~1e6 packets/s on each of the rail's four ports: ratio 2e-6 >= min_crc_ratio
    # 1e-6 and 2/s >= the strong floor 1/s (min_time_share / retransmit_cost_s), so against its own
    # traffic alone each port is a fault; against its 3 peers (2e-6 each) none is 10x worse
    assert _run(_background(2.0)).findings == []
    alone = _run(_background(2.0), FabricConfig(counters=CounterConfig(peer_factor=0.0)))
    assert sorted(f.entity_id for f in alone.findings) == RAIL0


def test_crc_one_port_clearly_worse_than_its_collective_peers_is_found() -> None:
    # the same background, and leaf-02/p1 at 40/s: ratio 4e-5, 20x its peers' 2e-6 (>= peer_factor 10)
    def worse(store: DuckStore, rng: np.random.Generator) -> None:
        _background(2.0)(store, rng)
        _counter(store, "suanli_switch_port_crc_errors_total", "switch_port", "leaf-02/p1", 40.0)

    res = _run(worse)
    assert [(f.category, f.entity_id) for f in res.findings] == [("switch_port_errors", "leaf-02/p1")]
    ratio, _, rest = res.findings[0].evidence[0].partition(" CRC error ratio ")[2].partition(" errors/packet ")
    assert 3.6e-5 < float(ratio) < 4.4e-5
    peer = float(rest.split("its 3 collective peers ")[1].rstrip(")"))
    assert 1.8e-6 < peer < 2.2e-6


def test_messy_healthy_run_has_no_findings() -> None:
    res = _run()
    assert res.findings == []
    assert res.heatmap.marks == ()
    assert res.values()["node-001/gpu0"]["straggler_score"] == 0.0


def test_crc_on_a_leaf_port_is_one_switch_port_finding_with_its_nic_as_symptom() -> None:
    def fault(store: DuckStore, rng: np.random.Generator) -> None:
        # leaf-02/p1 faces node-003/mlx5_0: 1,000 CRC errors/s on ~1e6 packets/s = ratio ~1e-3
        _counter(store, "suanli_switch_port_crc_errors_total", "switch_port", "leaf-02/p1", 1000.0)
        _counter(store, "suanli_rdma_retransmits_total", "nic", "node-003/mlx5_0", 500.0)

    res = _run(fault)
    assert [(f.category, f.entity_kind, f.entity_id) for f in res.findings] == \
        [("switch_port_errors", "switch_port", "leaf-02/p1")]
    f = res.findings[0]
    assert abs(f.start - (T0 + 15.0 * FAULT)) <= 15.0
    head, _, rest = f.evidence[0].partition(" CRC error ratio ")
    assert head == "leaf-02/p1" and 0.9e-3 < float(rest.split()[0]) < 1.1e-3 and rest.endswith(
        " errors/packet (baseline 0; its 3 collective peers 0)")   # rail mlx5_0 of job-a: 4 ports, 3 besides it
    assert [s.entity_id for s in f.symptoms] == ["node-003/mlx5_0"]
    assert f.extra["jobs"] == ["job-a"]
    assert 0.9e-3 < res.values()["leaf-02/p1"]["crc_ratio"] < 1.1e-3


def test_pre_fec_ber_up_four_decades_is_optical_at_that_port() -> None:
    def fault(store: DuckStore, rng: np.random.Generator) -> None:
        ber = np.where(np.arange(N) >= FAULT, 1e-8, 1e-12) * 10 ** rng.normal(0, 0.1, N)
        store.add_samples(_key("suanli_port_pre_fec_ber", "switch_port", "leaf-01/p2"), TS, ber)

    res = _run(fault)
    assert [(f.category, f.entity_id) for f in res.findings] == [("optical_degradation", "leaf-01/p2")]


def test_nic_side_ber_is_optical_at_the_nic() -> None:
    def fault(store: DuckStore, rng: np.random.Generator) -> None:
        ber = np.where(np.arange(N) >= FAULT, 3e-9, 1e-12)
        store.add_samples(_key("suanli_port_pre_fec_ber", "nic", "node-004/mlx5_1"), TS, ber)

    res = _run(fault)
    assert [(f.category, f.entity_kind, f.entity_id) for f in res.findings] == \
        [("optical_degradation", "nic", "node-004/mlx5_1")]


def test_link_down_and_series_stop_is_nic_down() -> None:
    down = np.where(np.arange(N) >= 40, 1.0, 0.0)     # link_downed counts from sample 40 on

    def fault(store: DuckStore, rng: np.random.Generator) -> None:
        nic = "node-002/mlx5_1"
        # the NIC's series end at sample 41: write them again (last write wins) with nothing later
        store.add_samples(_key("node_infiniband_link_downed_total", "nic", nic), TS[:42], down[:42])

    store = DuckStore(None)
    rng = np.random.default_rng(1)
    # a store where node-002/mlx5_1's series end at sample 41
    _healthy_without(store, rng, "node-002/mlx5_1", stop_at=42)
    fault(store, rng)
    store.flush()
    res = analyze(store, INV)
    assert [(f.category, f.entity_id) for f in res.findings] == [("nic_down", "node-002/mlx5_1")]
    # link_downed is 0 at sample 39 and 1 at sample 40: the link went down inside (TS[39], TS[40]],
    # so the earliest it can have happened, the finding's start, is the last sample still at 0
    # (TS[39]); it was seen at TS[40].
    assert down[39] == 0.0 and down[40] == 1.0
    assert res.findings[0].start == TS[39]
    assert res.findings[0].start < TS[40]


def _healthy_without(store: DuckStore, rng: np.random.Generator, nic: str, stop_at: int) -> None:
    tmp = DuckStore(None)
    _healthy(tmp, rng)
    tmp.flush()
    for m in tmp.metrics():
        for s in tmp.series(m):
            keep = np.ones(len(s.ts), dtype=bool) if s.key.entity_id != nic else s.ts < TS[stop_at]
            store.add_samples(s.key, s.ts[keep], s.values[keep])


def test_retransmits_on_the_nic_of_a_gpu_with_pcie_errors_are_not_a_fabric_fault() -> None:
    def fault(store: DuckStore, rng: np.random.Generator) -> None:
        _counter(store, "suanli_rdma_retransmits_total", "nic", "node-001/mlx5_0", 80.0)
        _counter(store, "node_infiniband_symbol_error_total", "nic", "node-001/mlx5_0", 0.5)
        _counter(store, "suanli_pcie_aer_errors_total", "gpu", "node-001/gpu0", 2.0)

    res = _run(fault)
    assert res.findings == []
    assert res.values()["node-001/mlx5_0"]["rdma_retransmits_per_s"] == pytest.approx(80.0, rel=0.01)


def test_slow_rank_is_a_gpu_straggler_at_its_gpu() -> None:
    res = _run(slow_ranks=(5,))
    assert [(f.category, f.entity_kind, f.entity_id) for f in res.findings] == \
        [("gpu_straggler", "gpu", "node-003/gpu1")]                 # rank 5 = node-003/gpu1
    assert res.values()["node-003/gpu1"]["straggler_score"] == 1.0
    assert res.values()["node-001/gpu0"]["straggler_score"] == 0.0
    assert len(res.findings[0].symptoms) == 7                        # the 7 ranks that wait


def test_storage_latency_and_data_load_up_is_storage_slow() -> None:
    def fault(store: DuckStore, rng: np.random.Generator) -> None:
        lat = np.where(np.arange(N) >= FAULT, 20e-3, 1e-3) * (1 + 0.03 * rng.standard_normal(N))
        store.add_samples(_key("suanli_storage_read_latency_seconds", "storage", "lustre-01"), TS, lat)

    res = _run(fault, data_load_factor=6.0)
    assert [(f.category, f.entity_kind, f.entity_id) for f in res.findings] == \
        [("storage_slow", "storage", "lustre-01")]


def test_data_load_up_without_storage_latency_is_not_storage() -> None:
    assert _run(data_load_factor=6.0).findings == []


def test_empty_store() -> None:
    res = analyze(DuckStore(None), INV)
    assert res.findings == [] and res.heatmap.nodes == tuple(NODES)


def _gpu_gauge(metric: str, levels: dict[str, float], default: float, late_only: bool = True):  # type: ignore[no-untyped-def]
    def mutate(store: DuckStore, rng: np.random.Generator) -> None:
        for g in INV.gpus:
            v = np.full(N, default)
            if g in levels:
                v[FAULT if late_only else 0:] = levels[g]
            store.add_samples(_key(metric, "gpu", g), TS, v)
    return mutate


def test_two_slow_tp_peers_the_straggler_is_the_one_with_the_low_sm_clock() -> None:
    # ranks 4 and 5 (tp peers on node-003) are both slow in compute; node-003/gpu0's SM clock fell
    # to 1,200 MHz while node-003/gpu1 stays at 1,980: the straggler is node-003/gpu0
    res = _run(_gpu_gauge("DCGM_FI_DEV_SM_CLOCK", {"node-003/gpu0": 1200.0}, 1980.0), slow_ranks=(4, 5))
    assert [(f.category, f.entity_id) for f in res.findings] == [("gpu_straggler", "node-003/gpu0")]


def test_two_slow_ranks_with_equal_clocks_are_not_blamed_on_either() -> None:
    res = _run(_gpu_gauge("DCGM_FI_DEV_SM_CLOCK", {}, 1980.0), slow_ranks=(4, 5))
    assert res.findings == []


def test_a_hot_slow_gpu_is_thermal_not_a_straggler() -> None:
    res = _run(_gpu_gauge("DCGM_FI_DEV_GPU_TEMP", {"node-003/gpu1": 92.0}, 65.0), slow_ranks=(5,))
    assert res.findings == []
