"""Training jobs: model shapes, parallelism, and rank placement on the cluster's GPUs (Megatron order)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from suanli.sim.cluster import SimCluster, SimJob

__all__ = ["MODEL_SHAPES", "JobRequest", "place_jobs"]

# name -> (params, layers, hidden, seq_len, vocab); published shapes of each family.
MODEL_SHAPES: dict[str, tuple[float, int, int, int, int]] = {
    "gpt-1.3b": (1.3e9, 24, 2048, 2048, 50257),
    "llama-7b": (6.74e9, 32, 4096, 4096, 32000),
    "llama-13b": (13.0e9, 40, 5120, 4096, 32000),
    "mpt-30b": (29.98e9, 48, 7168, 2048, 50368),
    "llama-34b": (33.7e9, 48, 8192, 4096, 32000),
    "llama-70b": (70.6e9, 80, 8192, 4096, 128256),
    "gpt-175b": (175e9, 96, 12288, 2048, 50257),
}
PURPOSES = ("pretrain", "continual", "sft", "rlhf-rm")


@dataclass(frozen=True)
class JobRequest:
    """A job a scenario asks for; unset fields are chosen from the allocation size."""

    model: str | None = None
    nodes: int | None = None          # whole nodes; None = share of what is left
    tp: int | None = None
    pp: int | None = None
    samples_per_replica: int | None = None
    overlap_fraction: float | None = None
    micro_batches: int | None = None


def _choose_model(rng: np.random.Generator, gpus: int) -> str:
    if gpus >= 512:
        pool = ["llama-70b", "gpt-175b"]
    elif gpus >= 48:
        pool = ["llama-34b", "mpt-30b", "llama-70b", "llama-13b"]
    else:
        pool = ["llama-7b", "llama-13b", "mpt-30b"]
    return pool[int(rng.integers(0, len(pool)))]


def _shape(model: str, gpus: int, req: JobRequest) -> tuple[int, int, int]:
    params = MODEL_SHAPES[model][0]
    tp = req.tp or (8 if params >= 60e9 else 4 if params >= 10e9 else 1)
    pp = req.pp or (1 if params / tp <= 10e9 else 2 if params / tp <= 20e9 else 4 if params < 150e9 else 8)
    while pp > 1 and gpus < tp * pp * 2:
        pp //= 2
    dp = max(1, gpus // (tp * pp))
    return dp, tp, pp


def _make_job(cluster: SimCluster, rng: np.random.Generator, node_ids: list[str], req: JobRequest,
              used: set[str], start_s: float) -> SimJob:
    gpus = [f"{n}/gpu{g}" for n in node_ids for g in range(8)]
    model = req.model or _choose_model(rng, len(gpus))
    params, layers, hidden, seq, vocab = MODEL_SHAPES[model]
    dp, tp, pp = _shape(model, len(gpus), req)
    base = f"{model}-{PURPOSES[int(rng.integers(0, len(PURPOSES)))]}"
    jid = base if base not in used else f"{base}-{len(used) + 1}"
    used.add(jid)
    micro = req.micro_batches or 8
    spr = req.samples_per_replica or max(micro, round(2.0e6 / (seq * dp)))
    world = dp * tp * pp
    ranks = gpus[:world]
    job = SimJob(
        id=jid, style="megatron" if tp * pp > 1 else "fsdp", sla_id=f"{jid.split('-')[-1]}_v{len(used)}",
        storage=cluster.storage[(len(used) - 1) % len(cluster.storage)][0],
        params=params, layers=layers, hidden=hidden, seq_len=seq, vocab=vocab, dp=dp, tp=tp, pp=pp,
        ranks=ranks, tokens_per_step=dp * spr * seq, target_tokens=round(params * 20, -9),
        start_s=start_s - float(rng.uniform(2, 20)) * 86400, micro_batches=micro,
        overlap_fraction=req.overlap_fraction if req.overlap_fraction is not None else 0.25,
        checkpoint_every=int(rng.integers(40, 80)))
    if cluster.spec.k8s_pod_labels:
        job.pods = [f"{jid}-worker-{node_ids.index(g.split('/')[0])}" for g in ranks]
    return job


def place_jobs(cluster: SimCluster, rng: np.random.Generator, requests: list[JobRequest],
               window_start_s: float) -> None:
    """Picks spare nodes, then gives each requested job a contiguous block of the remaining nodes."""
    all_ids = [n.id for n in cluster.nodes]
    n_spare = min(cluster.spec.spare_nodes, max(0, len(all_ids) - 2 * len(requests)))
    spare_idx = sorted(int(i) for i in rng.choice(len(all_ids), size=n_spare, replace=False)) if n_spare else []
    cluster.spare = [all_ids[i] for i in spare_idx]
    free = [n for n in all_ids if n not in cluster.spare]
    used: set[str] = set()
    remaining = len(requests)
    for req in requests:
        share = req.nodes or max(1, len(free) // remaining)
        take, free = free[:share], free[share:]
        remaining -= 1
        if take:
            cluster.jobs.append(_make_job(cluster, rng, take, req, used, window_start_s))
