"""Inventory benchmark at cluster scale: 1,280 nodes (10,240 GPUs, 5,120 NICs), 40 leaves x 8 spines.

Measures loading and validating inventory.yaml, building the resolver and topology indexes, one job's
network over 10,240 ranks (dp=160, tp=8, pp=8), the lazily built graphs, and per-call costs of
``paths()`` (table lookups) against NetworkX ``all_shortest_paths`` on the physical graph (the peer
way: a graph search per call) and of alias lookups.

``python bench/inventory.py [--nodes N]``; writes ``bench/results/inventory.md``.
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx

from suanli.inventory import parse_inventory
from suanli.inventory.synth import synthetic_inventory_yaml

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "inventory.md"


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _per_call_us(fn: Callable[[], Any], n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def run(nodes: int) -> list[tuple[str, str, str]]:
    dp = nodes // 8
    text = synthetic_inventory_yaml(nodes=nodes, parallelism=(dp, 8, 8))
    rows: list[tuple[str, str, str]] = []
    t, inv = _timed(lambda: parse_inventory(text, source="synth.yaml"))
    rows.append(("parse + validate inventory.yaml", f"{t:.2f} s",
                 f"{len(text.splitlines()):,} lines, {len(inv.gpus):,} GPUs, {len(inv.nics):,} NICs"))
    t, res = _timed(lambda: inv.resolver)
    rows.append(("build Resolver", f"{t * 1e3:.0f} ms", "alias tables"))
    t, topo = _timed(lambda: inv.topology)
    rows.append(("build Topology indexes", f"{t * 1e3:.0f} ms", "uplink tables, NIC attachment"))
    t, net = _timed(lambda: topo.job_network("big"))
    rows.append(("job_network (world 10,240)" if nodes == 1280 else f"job_network (world {dp * 64:,})",
                 f"{t * 1e3:.0f} ms", f"{len(net):,} nic/port/link entities"))
    t, deps = _timed(lambda: topo.dependents("spine-01"))
    rows.append(("dependents(spine) incl. all jobs' networks", f"{t * 1e3:.0f} ms", f"{len(deps):,} entities"))
    for name in ("physical", "logical", "dataflow"):
        t, g = _timed(functools.partial(getattr, topo, name))
        rows.append((f"{name} graph (lazy)", f"{t:.2f} s", f"{g.number_of_nodes():,} nodes, {g.number_of_edges():,} edges"))
    last = f"node-{nodes:04d}"
    n_paths = len(topo.paths("node-0001", last, "mlx5_0", "mlx5_0"))
    topo.fabric._segments.clear()
    cold = _per_call_us(lambda: topo.paths("node-0001", last, "mlx5_0", "mlx5_0"), 1)
    us = _per_call_us(lambda: topo.paths("node-0001", last, "mlx5_0", "mlx5_0"), 2000)
    rows.append(("paths() cross-leaf NIC pair", f"{us:.1f} us", f"{n_paths} ECMP paths; first call {cold:.0f} us"))
    phys = topo.physical
    fabric = [n for n, k in phys.nodes(data="kind") if k in ("nic", "switch_port", "link", "switch")]
    und = nx.Graph(phys.subgraph(fabric))          # materialised, undirected: a fair peer
    nx_us = _per_call_us(lambda: list(nx.all_shortest_paths(und, "node-0001/mlx5_0", f"{last}/mlx5_0")), 20)
    rows.append(("NetworkX all_shortest_paths, same pair", f"{nx_us:.0f} us", f"{nx_us / us:.0f}x slower"))
    us = _per_call_us(lambda: res.gpu(host="node-0077:9400", pci_bus_id="0000:28:00.0"), 100_000)
    rows.append(("Resolver.gpu(host=instance, pci_bus_id)", f"{us:.2f} us", "per lookup"))
    us = _per_call_us(lambda: res.gpu(uuid="GPU-0000004c-0000-0000-0000-000000000001"), 100_000)
    rows.append(("Resolver.gpu(uuid)", f"{us:.2f} us", "per lookup"))
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1280, help="nodes (multiple of 32; default 1280)")
    args = ap.parse_args(argv)
    rows = run(args.nodes)
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'time':>10}  notes")
    for what, t, note in rows:
        print(f"{what:<{width}}  {t:>10}  {note}")
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs visible (2 cores shared), Python {platform.python_version()}"
    lines = ["## inventory", "",
             f"Synthetic cluster: {args.nodes:,} nodes x 8 GPUs, 4 NICs each, 32 nodes per leaf, 8 spines, "
             "2 uplinks per leaf per spine (32 ECMP paths per cross-leaf NIC pair), one job over all GPUs. "
             f"Machine: {machine}. One run; times are wall clock.", "",
             "| measure | time | notes |", "| --- | --- | --- |"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
