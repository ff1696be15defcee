"""The entities of inventory.yaml (spec/inventory.md) as immutable-ish value types.

Canonical ids (spec/inventory.md, "Canonical entity ids"):
rack ``rack-01``; node ``node-001``; gpu ``node-001/gpu0``; nvswitch ``node-001/nvswitch0``; nic ``node-001/mlx5_0``;
switch ``leaf-01``; switch_port ``leaf-01/p1``; link ``leaf-01/p33~spine-01/p1`` (ends sorted);
storage ``lustre-01``; job ``llama-70b``; rank ``llama-70b/rank0``; sla ``pretrain_v3``; pdu ``pdu-01``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

EntityKind = Literal[
    "cluster", "rack", "pdu", "node", "gpu", "nvswitch", "nic", "switch", "switch_port", "link",
    "storage", "job", "rank", "pod", "container", "sla",
]


def gpu_id(node: str, index: int) -> str:
    return f"{node}/gpu{index}"


def nvswitch_id(node: str, index: int) -> str:
    return f"{node}/nvswitch{index}"


def nic_id(node: str, name: str) -> str:
    return f"{node}/{name}"


def rank_id(job: str, rank: int) -> str:
    return f"{job}/rank{rank}"


def link_id(a: str, b: str) -> str:
    x, y = sorted((a, b))
    return f"{x}~{y}"


@dataclass(frozen=True)
class GpuModelSpec:
    """Peak dense throughput per precision (TFLOP/s), power and price of one GPU model."""

    name: str
    tflops: dict[str, float]          # precision ("bf16", "fp16", "fp8", "tf32", "fp32") -> dense TFLOP/s
    tdp_w: float | None = None
    gpu_hour_price: float | None = None


@dataclass(frozen=True)
class Gpu:
    id: str                            # node-001/gpu0
    node: str
    index: int
    uuid: str | None
    pci_bus_id: str | None             # as written in the file
    model: str | None
    pdu_port: int | str | None = None


@dataclass(frozen=True)
class NvSwitch:
    """One NVSwitch chip of a node (``nvidia-nvswitchN`` of the kernel is index N); every GPU of
    the node talks NVLink through it."""

    id: str                            # node-001/nvswitch0
    node: str
    index: int
    pci_bus_id: str | None = None


@dataclass(frozen=True)
class Nic:
    id: str                            # node-001/mlx5_0
    node: str
    name: str
    mac: str | None
    gpu: int | None                    # index of the GPU it serves (GPUDirect affinity)
    switch_port: str | None            # leaf-01/p1
    pci_bus_id: str | None = None


@dataclass(frozen=True)
class Node:
    id: str
    rack: str
    gpus: tuple[Gpu, ...]
    nics: tuple[Nic, ...]
    nvswitches: tuple[NvSwitch, ...] = ()


@dataclass(frozen=True)
class Rack:
    id: str
    pdu: str | None
    nodes: tuple[Node, ...]


@dataclass(frozen=True)
class Switch:
    id: str
    tier: str                          # leaf | spine | core | ...
    rack: str | None = None


@dataclass(frozen=True)
class Link:
    a: str                             # switch port ids
    b: str

    @property
    def id(self) -> str:
        return link_id(self.a, self.b)


@dataclass(frozen=True)
class Storage:
    id: str
    kind: str | None = None


@dataclass(frozen=True)
class ModelShape:
    """Model size and shape; any field may be missing (then FLOPs come from spans or flops_per_token)."""

    params: float | None = None
    layers: int | None = None
    hidden: int | None = None
    seq_len: int | None = None
    vocab: int | None = None
    heads: int | None = None
    ffn_hidden: int | None = None
    active_params: float | None = None     # MoE: parameters active per token
    flops_per_token: float | None = None   # given directly, wins over the shape


@dataclass(frozen=True)
class Rank:
    job: str
    rank: int
    gpu: str                           # canonical gpu id
    pod: str | None = None
    container: str | None = None

    @property
    def id(self) -> str:
        return rank_id(self.job, self.rank)


@dataclass(frozen=True)
class Job:
    id: str
    sla_id: str | None
    storage: str | None
    model: ModelShape
    precision: str
    parallelism: dict[str, int]        # dp, tp, pp (cp, ep optional); missing ones are 1
    ranks: tuple[Rank, ...]
    tokens_per_step: float | None = None
    target_tokens: float | None = None
    start: float | None = None         # epoch seconds
    recompute: str | None = None       # activation recomputation: None | "full" | "selective"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def world_size(self) -> int:
        n = 1
        for k in ("dp", "tp", "pp", "cp", "ep"):
            n *= int(self.parallelism.get(k, 1))
        return n
