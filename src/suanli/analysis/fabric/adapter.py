"""The fabric and the stragglers: one entry point, :func:`analyze`, over the store and inventory.

Findings: ``switch_port_errors`` (switch_port), ``optical_degradation`` (switch_port or nic),
``nic_down`` (nic), ``gpu_straggler`` (gpu), ``storage_slow`` (storage). Counters decide where a
fault is (they are per port and per NIC); the latency matrix and its tomography confirm it, and
raise a fault of their own only where no counter saw one. Retransmits on a NIC whose own GPU
shows PCIe AER errors are that GPU's fault (health's ``pcie_riser``): they only reach ``values()``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from suanli.analysis.fabric.counters import CounterConfig
from suanli.analysis.fabric.findings import FindingConfig, counter_findings, latency_findings, refine_by_ber
from suanli.analysis.fabric.inputs import hardware_suspect_gpus, read_counters, read_latency
from suanli.analysis.fabric.latency import (
    LatencyClasses,
    LatencyConfig,
    LatencyMatrix,
    PairAnomalies,
    build_matrix,
    classify,
    detect,
)
from suanli.analysis.fabric.peers import collective_peers
from suanli.analysis.fabric.span_findings import job_phases, storage_findings, straggler_findings
from suanli.analysis.fabric.storage import StorageConfig
from suanli.analysis.fabric.stragglers import StragglerConfig
from suanli.analysis.fabric.tomography import FabricGraph, Localisation, TomographyConfig, localise
from suanli.analysis.findings import Finding
from suanli.analysis.result import EntityValues
from suanli.analysis.window import Window, resolve_window
from suanli.store.api import Store

if TYPE_CHECKING:
    from suanli.inventory.catalog import Inventory

__all__ = ["FabricConfig", "FabricResult", "Heatmap", "analyze", "fabric_graph"]

F64 = npt.NDArray[np.float64]


@dataclass(frozen=True)
class FabricConfig:
    """Every threshold of the fabric analysis, by part (each documented in its own module)."""

    latency: LatencyConfig = field(default_factory=LatencyConfig)
    tomography: TomographyConfig = field(default_factory=TomographyConfig)
    counters: CounterConfig = field(default_factory=CounterConfig)
    stragglers: StragglerConfig = field(default_factory=StragglerConfig)
    storage: StorageConfig = field(default_factory=StorageConfig)
    findings: FindingConfig = field(default_factory=FindingConfig)


@dataclass(frozen=True)
class Heatmap:
    """The one-way latency matrix for ``suanli diagnose --heatmap``: nodes sorted by rack.

    ``latency_s[i, j]``: src i -> dst j over the late part of the window (the anomalous level for
    anomalous pairs), NaN where not probed; ``baseline_s`` likewise; ``marks``: (src, dst, class)
    with class ``node`` | ``directional`` | ``link``; ``notes``: one line per localisation.
    """

    nodes: tuple[str, ...]
    racks: tuple[str, ...]
    latency_s: F64
    baseline_s: F64
    marks: tuple[tuple[str, str, str], ...]
    notes: tuple[str, ...]


@dataclass
class FabricResult:
    findings: list[Finding]
    heatmap: Heatmap
    localisations: list[Localisation]
    _values: dict[str, dict[str, float]]

    def values(self) -> EntityValues:
        """{gpu id: {"straggler_score"}, port / nic id: {"crc_ratio", "pre_fec_ber",
        "rdma_retransmits_per_s", "symbol_errors_per_s"}}."""
        return {k: dict(v) for k, v in self._values.items()}


def fabric_graph(inv: Inventory) -> FabricGraph:
    """The tomography's view of the inventory, with the inventory's equal-cost segments."""
    node_nics = {n.id: [(c.id, c.switch_port) for c in n.nics if c.switch_port] for n in inv.nodes.values()}
    links = [(lk.a, lk.b) for lk in inv.links]
    fab = inv.topology.fabric
    return FabricGraph(node_nics, links, segments=fab.segments)


def _sorted_nodes(inv: Inventory) -> tuple[tuple[str, ...], tuple[str, ...]]:
    pairs = sorted((n.rack, n.id) for n in inv.nodes.values())
    return tuple(p[1] for p in pairs), tuple(p[0] for p in pairs)


def _latency(store: Store, inv: Inventory, span: tuple[float, float], cfg: FabricConfig,
             graph: FabricGraph) -> tuple[LatencyMatrix, PairAnomalies, LatencyClasses, list[Localisation]]:
    nodes, _ = _sorted_nodes(inv)
    src, dst, ts, lat = read_latency(store, nodes, span)
    m = build_matrix(nodes, src.astype(np.int64), dst.astype(np.int64), ts, lat, cfg.latency.window_s, span[0])
    a = detect(m, cfg.latency)
    cls = classify(m, a, cfg.latency)
    pair = [(nodes[s], nodes[d]) for s, d in zip(m.src.tolist(), m.dst.tolist(), strict=True)]
    idx = np.concatenate([cls.directional, cls.link_level]).astype(np.int64)
    anomalous = [pair[i] for i in idx.tolist()]
    in_node = set(cls.node_level)
    healthy = [p for i, p in enumerate(pair) if not a.anomalous[i] and p[0] not in in_node and p[1] not in in_node]
    locs = [replace(x, pairs=idx[x.pairs]) for x in localise(graph, anomalous, healthy, cfg.tomography)]
    for node, way in sorted(cls.node_level.items()):
        elems = tuple(t for c in inv.nodes[node].nics for t in (c.id, c.switch_port or c.id))
        rows = np.flatnonzero(a.anomalous & ((m.src == nodes.index(node)) | (m.dst == nodes.index(node))))
        locs.append(Localisation(node, "node", None if way == "both" else way, elems, rows, 0))
    return m, a, cls, locs


def _heatmap(inv: Inventory, m: LatencyMatrix, a: PairAnomalies, cls: LatencyClasses,
             locs: list[Localisation]) -> Heatmap:
    nodes, racks = _sorted_nodes(inv)
    marks: list[tuple[str, str, str]] = []
    for i in np.flatnonzero(a.anomalous).tolist():
        s, d = m.nodes[m.src[i]], m.nodes[m.dst[i]]
        kind = "node" if s in cls.node_level or d in cls.node_level else (
            "directional" if i in set(cls.directional.tolist()) else "link")
        marks.append((s, d, kind))
    notes = tuple(f"{x.kind} {x.element}" + (f" ({x.direction})" if x.direction else "") +
                  f": {len(x.pairs)} slow pairs" for x in locs)
    return Heatmap(nodes, racks, m.dense(a.level_s), m.dense(a.baseline_s), tuple(marks), notes)


def analyze(store: Store, inventory: Inventory, window: Window | None = None,
            config: FabricConfig = FabricConfig()) -> FabricResult:
    """Every fabric, straggler and storage finding in ``window`` (None: all the store holds)."""
    inv = inventory
    nodes, racks = _sorted_nodes(inv)
    span = resolve_window(store, window)
    empty = Heatmap(nodes, racks, np.full((len(nodes),) * 2, np.nan), np.full((len(nodes),) * 2, np.nan), (), ())
    if span is None:
        return FabricResult([], empty, [], {})
    topo = inv.topology

    def jobs_of(entity: str) -> set[str]:
        return set(topo.jobs_behind(entity))

    suspects = hardware_suspect_gpus(store, span, config.counters)
    facts = read_counters(store, config.counters, span, collective_peers(inv))
    findings, _ = counter_findings(inv, facts, suspects, jobs_of, config.findings)
    graph = fabric_graph(inv)
    m, a, cls, locs = _latency(store, inv, span, config, graph)

    def onset_of(loc: Localisation) -> float:
        on = a.onset_s[loc.pairs] if len(loc.pairs) else np.array([np.nan])
        return float(np.nanmin(on)) if np.isfinite(on).any() else span[0]

    findings += latency_findings(locs, onset_of, findings, jobs_of, config.findings)
    findings = refine_by_ber(findings, inv, facts.levels, config.findings)
    values = {k: dict(v) for k, v in facts.levels.items()}
    scores: dict[str, float] = {}
    phases = job_phases(store, inv, span)
    findings += straggler_findings(store, inv, span, suspects, config.stragglers, scores, phases)
    for g, s in scores.items():
        values.setdefault(g, {})["straggler_score"] = s
    findings += storage_findings(store, inv, span, config.storage, phases)
    return FabricResult(findings, _heatmap(inv, m, a, cls, locs), locs, values)
