"""A synthetic inventory.yaml of any size (tests and benchmarks of the inventory at cluster scale).

Rail-optimised 2-tier fabric: ``nodes_per_leaf`` nodes per leaf (one leaf per rack), each node's
NICs on that leaf, every leaf cabled to every spine ``uplinks_per_spine`` times. One job spans the
first ``job_nodes`` nodes with the given parallelism (ranks in node order, 8 per node).
"""

from __future__ import annotations

__all__ = ["synthetic_inventory_yaml"]


def synthetic_inventory_yaml(nodes: int = 1280, gpus_per_node: int = 8, nics_per_node: int = 4,
                             nodes_per_leaf: int = 32, spines: int = 8, uplinks_per_spine: int = 2,
                             parallelism: tuple[int, int, int] = (160, 8, 8)) -> str:
    """YAML text; ``parallelism`` is (dp, tp, pp) and must fit in ``nodes * gpus_per_node`` GPUs."""
    dp, tp, pp = parallelism
    world = dp * tp * pp
    if world > nodes * gpus_per_node:
        raise ValueError(f"world size {world} > {nodes * gpus_per_node} GPUs")
    leaves = (nodes + nodes_per_leaf - 1) // nodes_per_leaf
    out = ["cluster: synth", "gpu_models:", "  H100-SXM: {bf16_tflops: 989, gpu_hour_price: 2.5}", "racks:"]
    step = max(1, gpus_per_node // max(1, nics_per_node))
    for leaf in range(leaves):
        out += [f"- id: rack-{leaf + 1:03d}", f"  pdu: pdu-{leaf + 1:03d}", "  nodes:"]
        for k in range(nodes_per_leaf):
            n = leaf * nodes_per_leaf + k
            if n >= nodes:
                break
            out += [f"  - id: node-{n + 1:04d}", "    gpus:"]
            for g in range(gpus_per_node):
                out.append(f"    - {{index: {g}, uuid: GPU-{n:08x}-0000-0000-0000-{g:012x}, "
                           f"pci_bus_id: '00000000:{0x18 + 0x10 * g:02X}:00.0', model: H100-SXM}}")
            out.append("    nics:")
            for c in range(nics_per_node):
                mac = f"b8:ce:f6:{(n >> 8) & 0xff:02x}:{n & 0xff:02x}:{c:02x}"
                out.append(f"    - {{name: mlx5_{c}, mac: '{mac}', gpu: {c * step}, "
                           f"switch_port: leaf-{leaf + 1:03d}/p{k * nics_per_node + c + 1}}}")
    out.append("switches:")
    out += [f"- {{id: leaf-{i + 1:03d}, tier: leaf, rack: rack-{i + 1:03d}}}" for i in range(leaves)]
    out += [f"- {{id: spine-{s + 1:02d}, tier: spine}}" for s in range(spines)]
    out.append("links:")
    first_uplink = nodes_per_leaf * nics_per_node + 1
    for leaf in range(leaves):
        for s in range(spines):
            for u in range(uplinks_per_spine):
                lp = first_uplink + s * uplinks_per_spine + u
                sp = leaf * uplinks_per_spine + u + 1
                out.append(f"- {{a: leaf-{leaf + 1:03d}/p{lp}, b: spine-{s + 1:02d}/p{sp}}}")
    out += ["storage:", "- {id: lustre-01, kind: lustre}", "jobs:", "- id: big", "  sla_id: prod",
            "  storage: lustre-01", "  precision: bf16", f"  parallelism: {{dp: {dp}, tp: {tp}, pp: {pp}}}",
            "  ranks:"]
    for r in range(world):
        out.append(f"  - {{rank: {r}, gpu: node-{r // gpus_per_node + 1:04d}/gpu{r % gpus_per_node}}}")
    return "\n".join(out) + "\n"
