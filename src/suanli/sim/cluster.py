"""The simulated cluster: racks of nodes, a leaf per rack, spines, storage, and the jobs placed on it.

The twin keeps its own compact network model (leaf/spine with ECMP over uplinks) so that it can
simulate 10,000 GPUs without building graphs; the inventory it writes describes the same wiring,
so ``suanli.inventory.Topology.paths`` finds the same hops.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np

from suanli.sim.hardware import GPU_CATALOG, GPU_PCI_BUS, NIC_PCI_BUS, NVSWITCH_PCI_BUS, SimGpuModel

__all__ = ["MAX_NODES", "MIN_NODES", "ClusterSpec", "SimCluster", "SimJob", "SimNic", "SimNode", "build_cluster",
           "gpu_pci", "nvswitch_pci"]

MIN_NODES, MAX_NODES = 2, 1280
"""The cluster sizes the twin builds, in nodes (both included)."""


@dataclass(frozen=True)
class ClusterSpec:
    """What to build."""

    nodes: int = 8
    gpu_model: str = "H100-SXM"
    nics_per_node: int = 4            # 4 or 8
    nodes_per_rack: int = 4
    uplinks_per_leaf: int = 8
    spines: int = 2
    spare_nodes: int = 1
    k8s_pod_labels: bool = False


@dataclass
class SimNic:
    id: str                           # node-001/mlx5_0
    node: str
    name: str
    gpu: int                          # affinity
    port: str                         # leaf-01/p1
    mac: str
    pci_bus_id: str


@dataclass
class SimNode:
    id: str
    rack: str
    leaf: str
    index: int                        # 0-based position in the cluster
    gpu_uuids: list[str]
    nics: list[SimNic]


@dataclass
class SimJob:
    """A training job and its shape; ranks[r] is the canonical gpu id of rank r (Megatron order)."""

    id: str
    style: str                        # megatron | fsdp
    sla_id: str
    storage: str
    params: float
    layers: int
    hidden: int
    seq_len: int
    vocab: int
    dp: int
    tp: int
    pp: int
    ranks: list[str]
    tokens_per_step: int
    target_tokens: float
    start_s: float
    micro_batches: int = 8
    overlap_fraction: float = 0.5     # share of backward the gradient all-reduce may hide behind
    checkpoint_every: int = 50
    precision: str = "bf16"
    pods: list[str] = field(default_factory=list)   # per rank, when k8s labels are on

    @property
    def world(self) -> int:
        return self.dp * self.tp * self.pp


@dataclass
class SimCluster:
    name: str
    spec: ClusterSpec
    gpu: SimGpuModel
    nodes: list[SimNode]
    leaves: list[str]
    spines: list[str]
    uplinks: dict[str, list[tuple[str, str]]]       # leaf -> [(leaf port, spine port)]
    storage: list[tuple[str, str]]                  # (id, kind)
    jobs: list[SimJob] = field(default_factory=list)
    spare: list[str] = field(default_factory=list)

    def node(self, node_id: str) -> SimNode:
        return self.nodes[int(node_id.split("-")[1]) - 1]

    def nvswitches(self, node_id: str) -> list[str]:
        """Canonical ids of a node's NVSwitch chips (``node-001/nvswitch0`` ...)."""
        return [f"{node_id}/nvswitch{k}" for k in range(self.gpu.nvswitches)]

    def nic_for_gpu(self, gpu_id: str) -> SimNic:
        node_id, g = gpu_id.split("/gpu")
        node = self.node(node_id)
        per = 8 // len(node.nics)
        return node.nics[int(g) // per]

    def hop_path(self, src: SimNic, dst: SimNic) -> list[str]:
        """Entities one packet from ``src`` to ``dst`` crosses: NICs, switch ports (in order) and links."""
        a_leaf, b_leaf = src.port.split("/")[0], dst.port.split("/")[0]
        if a_leaf == b_leaf:
            return [src.id, src.port, dst.port, dst.id]
        h = int.from_bytes(hashlib.blake2b(f"{src.id}>{dst.id}".encode(), digest_size=4).digest(), "big")
        up_a = self.uplinks[a_leaf]
        la, sa = up_a[h % len(up_a)]
        spine = sa.split("/")[0]
        down = [u for u in self.uplinks[b_leaf] if u[1].startswith(spine + "/")]
        lb, sb = down[h % len(down)]
        return [src.id, src.port, la, _link(la, sa), sa, sb, _link(lb, sb), lb, dst.port, dst.id]


def _link(a: str, b: str) -> str:
    x, y = sorted((a, b))
    return f"{x}~{y}"


def _uuid(rng: np.random.Generator) -> str:
    h = rng.bytes(16).hex()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _mac(salt: int, idx: int) -> str:
    v = (salt + idx * 7919) % (1 << 24)
    return f"b8:ce:f6:{v >> 16:02x}:{(v >> 8) & 255:02x}:{v & 255:02x}"


def build_cluster(spec: ClusterSpec, rng: np.random.Generator, name: str) -> SimCluster:
    """Racks of ``nodes_per_rack`` nodes, one leaf per rack, uplinks spread over the spines."""
    if not MIN_NODES <= spec.nodes <= MAX_NODES:
        raise ValueError(f"nodes must be in {MIN_NODES}..{MAX_NODES}, got {spec.nodes}")
    gpu = GPU_CATALOG[spec.gpu_model]
    n_racks = math.ceil(spec.nodes / spec.nodes_per_rack)
    leaves = [f"leaf-{r + 1:02d}" for r in range(n_racks)]
    spines = [f"spine-{s + 1:02d}" for s in range(spec.spines)]
    salt = int(rng.integers(0, 1 << 24))
    nodes: list[SimNode] = []
    for i in range(spec.nodes):
        r = i // spec.nodes_per_rack
        node_id = f"node-{i + 1:03d}"
        slot = i % spec.nodes_per_rack
        per = 8 // spec.nics_per_node
        nics = [SimNic(f"{node_id}/mlx5_{k}", node_id, f"mlx5_{k}", k * per,
                       f"{leaves[r]}/p{slot * spec.nics_per_node + k + 1}",
                       _mac(salt, i * spec.nics_per_node + k), f"0000:{NIC_PCI_BUS[k * per]}:00.0")
                for k in range(spec.nics_per_node)]
        nodes.append(SimNode(node_id, f"rack-{r + 1:02d}", leaves[r], i,
                             [_uuid(rng) for _ in range(8)], nics))
    uplinks: dict[str, list[tuple[str, str]]] = {}
    spine_next = [1] * spec.spines
    first_up = spec.nodes_per_rack * 8 + 1
    for leaf in leaves:
        ups = []
        for u in range(spec.uplinks_per_leaf):
            s = u % spec.spines
            ups.append((f"{leaf}/p{first_up + u}", f"{spines[s]}/p{spine_next[s]}"))
            spine_next[s] += 1
        uplinks[leaf] = ups
    return SimCluster(name, spec, gpu, nodes, leaves, spines, uplinks,
                      [("lustre-01", "lustre"), ("nfs-01", "nfs")])


def gpu_pci(index: int) -> str:
    return f"00000000:{GPU_PCI_BUS[index]}:00.0"


def nvswitch_pci(index: int) -> str:
    return f"00000000:{NVSWITCH_PCI_BUS[index]}:00.0"
