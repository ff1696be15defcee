"""The step-time model: what a training step costs on given hardware, and how faults change it.

Sources: model FLOPs per token 6·N + 12·L·h·s (Chowdhery et al., PaLM, appendix B: dense matmuls
plus attention); ring all-reduce moves 2(n-1)/n of the buffer over the slowest hop and pays
2(n-1) hop latencies per bucket (Patarasuk & Yuan 2009; NCCL docs "bus bandwidth"); a lost packet
costs the go-back-N window plus NAK recovery, expressed here in packet times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from suanli.sim.cluster import SimJob
from suanli.sim.hardware import SimGpuModel

__all__ = ["PhysicsConfig", "comm_inflation", "data_load_s", "flops_per_rank", "optimizer_s",
           "ring_allreduce_s", "tp_comm_s"]


@dataclass(frozen=True)
class PhysicsConfig:
    """Constants of the step-time model (all documented defaults)."""

    efficiency_low: float = 0.45
    """Lowest share of peak FLOP/s a healthy job reaches (drawn per job)."""
    efficiency_high: float = 0.55
    """Highest share of peak FLOP/s a healthy job reaches."""
    rank_jitter: float = 0.008
    """Relative standard deviation of one rank's compute time from step to step."""
    bus_efficiency: float = 0.8
    """Share of the NIC line rate NCCL reaches as bus bandwidth."""
    hop_latency_s: float = 5e-6
    """Latency of one ring step (wire, switch, NCCL protocol) on a healthy hop."""
    bucket_bytes: float = 80e6
    """Gradient bucket size; every bucket pays 2(n-1) hop latencies."""
    tree_bw_efficiency: float = 0.8
    """Share of the ring's bandwidth NCCL's double binary tree reaches (it wins only at scale)."""
    grad_bytes_per_param: float = 2.0
    """bf16 gradients are reduced."""
    packet_bytes: float = 4096.0
    """RDMA MTU."""
    retransmit_cost_pkts: float = 3000.0
    """Packet times lost per dropped packet: go-back-N window, NAK round trip and queueing."""
    fec_escape_fraction: float = 0.5
    """Share of pre-FEC bit errors that FEC cannot correct on a degrading optic (bursty errors)."""
    latency_per_ber_decade_s: float = 7.8e-6
    """Extra one-way latency (link-level retries) per decade the pre-FEC BER rises above baseline."""
    baseline_ber: float = 1e-12
    """Pre-FEC BER of a healthy optic."""
    reads_per_sample: float = 8.0
    """Storage round trips the data loader makes per sample it serves to a replica."""
    optimizer_bytes_per_param: float = 48.0
    """HBM traffic of an Adam update per local parameter (fp32 master, two moments, read+write)."""
    checkpoint_write_Bps: float = 5e9
    """Write bandwidth of one checkpointing rank to storage."""


def flops_per_rank(job: SimJob) -> float:
    """Model FLOPs one rank executes per step: (6·N + 12·L·h·s) · tokens / world."""
    per_token = 6.0 * job.params + 12.0 * job.layers * job.hidden * job.seq_len
    return per_token * job.tokens_per_step / job.world


def tp_comm_s(job: SimJob, gpu: SimGpuModel, nvlink_factor: float) -> float:
    """Tensor-parallel all-reduces of one step over NVLink: 4 per layer per micro-batch sample."""
    if job.tp <= 1:
        return 0.0
    samples = job.tokens_per_step / job.seq_len / job.dp
    bytes_ = 4 * (job.layers / job.pp) * samples * job.seq_len * job.hidden * 2.0
    return 2.0 * (job.tp - 1) / job.tp * bytes_ / (gpu.nvlink_Bps * max(nvlink_factor, 1e-3))


def ring_allreduce_s(cfg: PhysicsConfig, n: int, bytes_: float, bottleneck_Bps: float,
                     extra_latency_s: float = 0.0) -> float:
    """All-reduce of ``bytes_`` over ``n`` members as NCCL runs it: the faster of a ring
    (2(n-1)/n·bytes/bw + buckets·2(n-1)·latency) and a double binary tree (same bytes at
    ``tree_bw_efficiency`` of the bandwidth, buckets·2·log2(n) latencies), so the latency term
    does not grow linearly on 10,000 GPUs."""
    if n <= 1:
        return 0.0
    buckets = max(1.0, math.ceil(bytes_ / cfg.bucket_bytes))
    lat = cfg.hop_latency_s + extra_latency_s
    bw_s = 2.0 * (n - 1) / n * bytes_ / bottleneck_Bps
    ring = bw_s + buckets * 2.0 * (n - 1) * lat
    tree = bw_s / cfg.tree_bw_efficiency + buckets * 2.0 * math.ceil(math.log2(n)) * lat
    return min(ring, tree)


def comm_inflation(cfg: PhysicsConfig, loss_ratio: float) -> float:
    """Time factor of a transfer on a path that drops ``loss_ratio`` of its packets."""
    return 1.0 + max(0.0, loss_ratio) * cfg.retransmit_cost_pkts


def ber_loss(cfg: PhysicsConfig, ber: float) -> float:
    """Post-FEC packet loss of a link at pre-FEC bit error ratio ``ber``."""
    return min(1.0, ber * cfg.packet_bytes * 8 * cfg.fec_escape_fraction) if ber > cfg.baseline_ber * 1.5 else 0.0


def ber_latency_s(cfg: PhysicsConfig, ber: float) -> float:
    """Extra one-way latency of a link at pre-FEC BER ``ber`` (link-level retries)."""
    return cfg.latency_per_ber_decade_s * max(0.0, math.log10(max(ber, 1e-30) / cfg.baseline_ber))


def data_load_s(cfg: PhysicsConfig, job: SimJob, latency_s: float) -> float:
    """Time the data loader blocks a step: samples per replica times round trips times latency."""
    samples = job.tokens_per_step / job.seq_len / job.dp
    return samples * cfg.reads_per_sample * latency_s


def optimizer_s(cfg: PhysicsConfig, job: SimJob, gpu: SimGpuModel) -> float:
    """Adam update of the local shard, bound by HBM bandwidth."""
    local = job.params / (job.tp * job.pp) / (job.dp if job.style == "fsdp" else 1)
    return local * cfg.optimizer_bytes_per_param / gpu.hbm_Bps
