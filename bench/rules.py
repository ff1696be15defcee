"""Benchmark: the default rule pack over 10,240 GPUs (1,280 nodes, 10,240 NICs and switch ports) and
one hour of data at 15 s, evaluated in batch (240 evaluations per rule) on an in-memory store.

Writes bench/results/rules.md. Target: under 30 s on 2 cores.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from suanli.incidents.inhibit import apply_inhibitions
from suanli.ingest.records import Event, SeriesKey
from suanli.rules import Alert, EntityIndex, evaluate_window, load_rules
from suanli.store.api import Series

NODES = 1280
GPUS_PER_NODE = 8
HOUR_S = 3600.0
STEP_S = 15.0
START = 1_773_000_000.0


class ArrayStore:
    """Prebuilt series per metric (only what the evaluator reads)."""

    def __init__(self) -> None:
        self.data: dict[str, list[Series]] = {}

    def series(self, metric: str, entity_ids: Sequence[str] | None = None, start: float | None = None,
               end: float | None = None) -> list[Series]:
        return self.data.get(metric, [])

    def events(self, entity_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None,
               start: float | None = None, end: float | None = None) -> list[Event]:
        return []


def _build(rng: np.random.Generator) -> tuple[ArrayStore, EntityIndex]:
    nodes = [f"node-{i:04d}" for i in range(NODES)]
    gpus = [f"{n}/gpu{g}" for n in nodes for g in range(GPUS_PER_NODE)]
    nics = [f"{n}/mlx5_{g}" for n in nodes for g in range(GPUS_PER_NODE)]
    ports = [f"leaf-{i // 64:03d}/p{i % 64 + 1}" for i in range(len(nics))]
    jobs = {f"job-{j}": gpus[j * 1024:(j + 1) * 1024] for j in range(len(gpus) // 1024)}
    index = EntityIndex(gpus=gpus, nodes=nodes, nics=nics, ports=sorted(ports), jobs=sorted(jobs),
                        gpu_node={g: g.split("/")[0] for g in gpus}, gpu_nic=dict(zip(gpus, nics, strict=True)),
                        nic_node={n: n.split("/")[0] for n in nics}, nic_port=dict(zip(nics, ports, strict=True)),
                        job_gpus=jobs)
    n_t = int(HOUR_S / STEP_S) + 1
    grid = START + np.arange(n_t) * STEP_S
    store = ArrayStore()

    def add(metric: str, kind: str, ids: list[str], gauge: tuple[float, float] | None, rate: float = 0.0) -> None:
        out = []
        for e in ids:
            ts = grid + rng.uniform(0, 1.0, n_t)
            if gauge is not None:
                vals = rng.normal(gauge[0], gauge[1], n_t)
            else:
                vals = np.cumsum(rng.poisson(rate * STEP_S, n_t)).astype(np.float64)
            out.append(Series(SeriesKey(metric, (), kind, e), ts, vals))
        store.data[metric] = out

    add("DCGM_FI_DEV_GPU_TEMP", "gpu", gpus, (60, 3))
    add("DCGM_FI_DEV_MEMORY_TEMP", "gpu", gpus, (70, 3))
    add("DCGM_FI_DEV_GPU_UTIL", "gpu", gpus, (90, 5))
    add("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "gpu", gpus, (4e10, 3e9))
    add("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "gpu", gpus, None, 0.0)
    add("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "gpu", gpus, None, 1e-5)
    add("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "gpu", gpus, None, 1e-4)
    add("suanli_pcie_aer_errors_total", "gpu", gpus, None, 1e-4)
    add("suanli_rdma_retransmits_total", "nic", nics, None, 0.01)
    add("node_infiniband_link_downed_total", "nic", nics, None, 0.0)
    add("node_infiniband_symbol_error_total", "nic", nics, None, 0.001)
    add("suanli_switch_port_crc_errors_total", "switch_port", ports, None, 0.001)
    add("suanli_switch_port_packets_total", "switch_port", ports, None, 1e6)
    add("suanli_port_pre_fec_ber", "switch_port", ports, (1e-12, 1e-13))
    # faults: three hot GPUs for the whole hour, one AER storm from minute 30
    for s in store.data["DCGM_FI_DEV_GPU_TEMP"][:3]:
        s.values[:] = 92.0
    aer = store.data["suanli_pcie_aer_errors_total"][100]
    aer.values[n_t // 2:] += np.cumsum(np.full(n_t - n_t // 2, 100.0))
    return store, index


def _many_alerts(index: EntityIndex) -> list[Alert]:
    """Every GPU idle (gpu_util_low) and every 8th one hot: the hot ones mute their own idle alert."""
    out = []
    for i, g in enumerate(index.gpus):
        names = ["gpu_util_low"] + (["gpu_over_temperature"] if i % 8 == 0 else [])
        for name in names:
            labels = {"alertname": name, "scope": "gpu", "severity": "warning", **index.labels("gpu", g)}
            out.append(Alert(name=name, rule=name, scope="gpu", entity_kind="gpu", entity_id=g, labels=labels,
                             state="firing", active_at=START, fired_at=START))
    return out


def main() -> None:
    rng = np.random.default_rng(7)
    t0 = time.perf_counter()
    store, index = _build(rng)
    build_s = time.perf_counter() - t0
    rules = load_rules(None)
    t0 = time.perf_counter()
    alerts = evaluate_window(rules, store, index, START, START + HOUR_S)
    eval_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = apply_inhibitions(alerts, rules.inhibit_rules, lambda src, tgt: tgt in index.dependents(src))
    inhibit_s = time.perf_counter() - t0
    many = _many_alerts(index)
    t0 = time.perf_counter()
    res_many = apply_inhibitions(many, rules.inhibit_rules, lambda src, tgt: tgt in index.dependents(src))
    inhibit_many_s = time.perf_counter() - t0
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    n_series = sum(len(v) for v in store.data.values())
    evals = int(HOUR_S / STEP_S) + 1
    rows = [("GPUs / nodes / NICs+ports", f"{len(index.gpus)} / {len(index.nodes)} / {len(index.nics)}"),
            ("series / samples", f"{n_series} / {n_series * evals}"),
            ("rules x evaluations", f"{len(rules.rules)} x {evals}"),
            ("build synthetic data (s)", f"{build_s:.1f}"),
            ("evaluate default pack (s)", f"{eval_s:.2f}"),
            ("inhibition (s)", f"{inhibit_s:.3f}"),
            ("alerts (fired or pending) / muted", f"{len(alerts)} / {res.muted_count}"),
            ("inhibition of 11,520 firing alerts (s)", f"{inhibit_many_s:.2f}"),
            ("  of which muted", f"{res_many.muted_count}"),
            ("peak RSS (MiB)", f"{rss_mib:.0f}")]
    width = max(len(r[0]) for r in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    md = ["## rules", "",
          "The default rule pack (src/suanli/rules/default_rules.yaml) evaluated in batch over 10,240 GPUs",
          "(1,280 nodes x 8, one NIC and one switch port per GPU) and one hour of synthetic samples at 15 s",
          "(240 evaluations per rule, Prometheus semantics), from an in-memory store; then inhibition.",
          "Machine: the shared 2-core development box.", "",
          "| what | value |", "| --- | --- |", *[f"| {k} | {v} |" for k, v in rows], ""]
    out = Path(__file__).resolve().parent / "results" / "rules.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(md), encoding="utf-8")


if __name__ == "__main__":
    main()
