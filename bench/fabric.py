"""Benchmark: the fabric analysis at scale, on synthetic inputs built directly as arrays.

1. Latency: 1,280 nodes (40 leaves x 32 nodes, 8 NICs per node, 8 spines x 2 uplinks per leaf),
   each node probing 16 random peers once a minute for 20 minutes (409,600 samples). Two faults:
   node-00008 slow to and from everyone (node-level), and one uplink of leaf-05 slow one way (the
   pairs whose probes hash onto it, towards leaf-05). Times build_matrix + detect + classify +
   greedy tomography, and checks both faults are found.
2. Stragglers: 10,240 ranks over one hour of 10 s steps (forward, backward, allreduce spans:
   11 million spans), one slow rank. Times phase_matrix + straggler_scores.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

from suanli.analysis.fabric.latency import build_matrix, classify, detect
from suanli.analysis.fabric.stragglers import phase_matrix, straggler_scores
from suanli.analysis.fabric.tomography import FabricGraph, localise
from suanli.store.api import SpanFrame

LEAVES, PER_LEAF, NICS, SPINES, UPLINKS = 40, 32, 8, 8, 2
PEERS, WINDOWS = 16, 20
RANKS, HOUR_S, STEP_S = 10_240, 3600.0, 10.0


def _fabric() -> tuple[tuple[str, ...], FabricGraph]:
    nodes = tuple(f"node-{i + 1:05d}" for i in range(LEAVES * PER_LEAF))
    node_nics = {n: [(f"{n}/mlx5_{c}", f"leaf-{i // PER_LEAF + 1:02d}/p{(i % PER_LEAF) * NICS + c + 1}")
                     for c in range(NICS)] for i, n in enumerate(nodes)}
    links = []
    for leaf in range(1, LEAVES + 1):
        for s in range(SPINES):
            for u in range(UPLINKS):
                links.append((f"leaf-{leaf:02d}/p{300 + s * UPLINKS + u}",
                              f"spine-{s + 1:02d}/p{(leaf - 1) * UPLINKS + u + 1}"))
    return nodes, FabricGraph(node_nics, links)


def _probes(n: int, rng: np.random.Generator) -> tuple[npt.NDArray[np.int64], ...]:
    src = np.repeat(np.arange(n), PEERS)
    dst = (src + rng.integers(1, n, len(src))) % n
    return src, dst


def bench_latency() -> dict[str, float | str]:
    rng = np.random.default_rng(0)
    nodes, graph = _fabric()
    n = len(nodes)
    src, dst = _probes(n, rng)
    same_leaf = (src // PER_LEAF) == (dst // PER_LEAF)
    base = np.where(same_leaf, 1.8e-6, 3.0e-6)
    w = np.repeat(np.arange(WINDOWS), len(src))
    s_all, d_all = np.tile(src, WINDOWS), np.tile(dst, WINDOWS)
    lat = np.tile(base, WINDOWS) * (1 + 0.02 * rng.standard_normal(len(w)))
    late = w >= WINDOWS // 2
    lat[late & ((s_all == 7) | (d_all == 7))] *= 5.0                       # node-00008
    # one-way: pairs into leaf-05 from other leaves whose flow hashes (src % 16) onto uplink 0
    oneway = late & (d_all // PER_LEAF == 4) & (s_all // PER_LEAF != 4) & (s_all % 16 == 0) & \
        (s_all != 7) & (d_all != 7)
    lat[oneway] *= 3.0
    ts = w * 60.0 + rng.uniform(0, 59, len(w))
    t0 = time.perf_counter()
    m = build_matrix(nodes, s_all, d_all, ts, lat, 60.0, 0.0)
    a = detect(m)
    cls = classify(m, a)
    t1 = time.perf_counter()
    idx = np.concatenate([cls.directional, cls.link_level])
    pair = list(zip(m.src.tolist(), m.dst.tolist(), strict=True))
    anomalous = [(nodes[pair[i][0]], nodes[pair[i][1]]) for i in idx.tolist()]
    healthy = [(nodes[s], nodes[d]) for k, (s, d) in enumerate(pair)
               if not a.anomalous[k] and s != 7 and d != 7]
    locs = localise(graph, anomalous, healthy)
    t2 = time.perf_counter()
    return {"nodes": n, "samples": len(w), "pairs": len(m.src), "anomalous_pairs": int(a.anomalous.sum()),
            "node_level": float(list(cls.node_level) == ["node-00008"]), "oneway_pairs": len(anomalous),
            "localised": len(locs), "element": (f"{locs[0].element}@{locs[0].direction}" if locs else "-"),
            "matrix_s": t1 - t0, "tomography_s": t2 - t1}


def bench_stragglers() -> dict[str, float]:
    rng = np.random.default_rng(1)
    steps = int(HOUR_S / STEP_S)
    rank = np.tile(np.repeat(np.arange(RANKS), 3), steps)
    step = np.repeat(np.arange(steps), RANKS * 3)
    names = np.broadcast_to(np.array(["forward", "backward", "allreduce"], dtype=object), (RANKS * steps, 3)).ravel()
    base = np.tile(np.array([2.0, 4.0, 1.0]), RANKS * steps)
    dur = base * (1 + 0.01 * rng.standard_normal(len(base)))
    slow = (rank == 4321) & (step >= steps // 2) & (names != "allreduce")
    dur[slow] *= 1.3
    start = (step * STEP_S).astype(np.float64)
    n = len(start)
    none = np.broadcast_to(np.array([None], dtype=object), (n,))
    frame = SpanFrame(job_id=none, rank=rank, step=step, name=names, start_s=start, end_s=start + dur,
                      gpu_id=none, node_id=none, trace_id=none, span_id=none, parent_id=none)
    t0 = time.perf_counter()
    m = phase_matrix(frame)
    t1 = time.perf_counter()
    sc = straggler_scores(m)
    t2 = time.perf_counter()
    flagged = np.flatnonzero(sc.score >= 0.6).tolist()
    return {"ranks": RANKS, "steps": steps, "spans": n, "found": float(flagged == [4321]),
            "pivot_s": t1 - t0, "scores_s": t2 - t1}


def main() -> None:
    lat = bench_latency()
    st = bench_stragglers()
    rows = [
        ("latency matrix (build + detect + classify)", f"{lat['nodes']:.0f} nodes, {lat['samples']:.0f} probes, "
         f"{lat['pairs']:.0f} pairs", float(lat["matrix_s"])),
        ("tomography (greedy cover)", f"{lat['oneway_pairs']:.0f} link-level pairs -> {lat['localised']:.0f} "
         f"element(s): {lat['element']}; node-level found: {bool(lat['node_level'])}", float(lat["tomography_s"])),
        ("straggler pivot (spans -> ranks x steps)", f"{st['ranks']:.0f} ranks x {st['steps']:.0f} steps, "
         f"{st['spans']:.0f} spans", st["pivot_s"]),
        ("straggler scores", f"slow rank found alone: {bool(st['found'])}", st["scores_s"]),
    ]
    total = sum(r[2] for r in rows)
    lines = ["## fabric", "",
             "Latency localisation on a 1,280-node matrix and straggler scores for 10,240 ranks over one",
             "hour (synthetic arrays, see bench/fabric.py). Machine: 2 shared cores.", "",
             "| part | input | wall s |", "| --- | --- | --- |"]
    lines += [f"| {a} | {b} | {c:.2f} |" for a, b, c in rows]
    lines += [f"| total | | {total:.2f} |", ""]
    text = "\n".join(lines)
    print(text)
    out = Path(__file__).resolve().parent / "results" / "fabric.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
