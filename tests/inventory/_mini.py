"""A hand-built inventory: 4 nodes on 2 leaves, 2 spines, one 8-rank job (dp=2, tp=2, pp=2).

Host names, GPU UUIDs and PCI bus ids are real ones from ../shared/realdata/dcgm/*.prom
(r6i3n0: issue250 V100x4; gsrh100-074: issue512 H100; the A30 node: issue736), so the alias
tests use spellings that real exporters wrote. Fabric, by hand:

    leaf-01 (rack-01): r6i3n0 mlx5_0 -> p1, mlx5_1 -> p2; gsrh100-074 mlx5_0 -> p3
    leaf-02 (rack-02): A30 node mlx5_0 -> p1; node-004 mlx5_0 -> p2, mlx5_1 -> p3
    uplinks: leaf-01/p33-spine-01/p1, leaf-01/p34-spine-02/p1, leaf-02/p33-spine-01/p2, leaf-02/p34-spine-02/p2
"""

from __future__ import annotations

A30 = "yg-data-k8s-gpu-a30-node-test-test0003"

MINI_YAML = f"""\
cluster: mini
currency: EUR
gpu_models:
  V100-SXM: {{fp16_tflops: 125, fp32_tflops: 15.7, tdp_w: 300, gpu_hour_price: 0.9}}
  H100-SXM: {{bf16_tflops: 989, gpu_hour_price: 2.5}}
racks:
  - id: rack-01
    pdu: pdu-01
    nodes:
      - id: r6i3n0
        gpus:
          - {{index: 0, uuid: GPU-a6158b59-2c1e-1e63-0068-9178c4298abd, model: V100-SXM}}
          - {{index: 1, uuid: GPU-8d5053b3-9280-7d1a-751b-4fd2fdd547c5, model: V100-SXM}}
          - {{index: 2, uuid: GPU-a9079f15-493e-6c1c-c78c-73ec2b840cba, model: V100-SXM}}
          - {{index: 3, uuid: GPU-bd94f0f5-8c2f-bc95-74ad-5f99fdc33d01, model: V100-SXM}}
        nics:
          - {{name: mlx5_0, mac: "b8:ce:f6:00:00:01", gpu: 0, switch_port: leaf-01/p1}}
          - {{name: mlx5_1, mac: "b8:ce:f6:00:00:02", gpu: 2, switch_port: leaf-01/p2}}
      - id: gsrh100-074
        gpus:
          - {{index: 0, uuid: GPU-58e8f5ea-13cc-013a-d88f-2bcf5ae8bc77, pci_bus_id: "00000000:1A:00.0", model: H100-SXM}}
          - {{index: 1, uuid: GPU-00000000-0000-0000-0000-0000000000cb, pci_bus_id: "0000:cb:00.0", model: H100-SXM}}
        nics:
          - {{name: mlx5_0, mac: "B8:CE:F6:00:00:03", gpu: 0, switch_port: leaf-01/p3}}
  - id: rack-02
    nodes:
      - id: {A30}
        gpus:
          - {{index: 0, uuid: GPU-265c9814-6156-355b-e589-ff2064894f16, model: A30}}
          - {{index: 1, uuid: GPU-2d20791a-b4a6-ba59-97f1-e95b99fe5b49, model: A30}}
        nics:
          - {{name: mlx5_0, gpu: 0, switch_port: leaf-02/p1}}
      - id: node-004
        gpus:
          - {{index: 0, uuid: GPU-fc60126e-514d-3522-2828-c5daa8e99d85, pci_bus_id: "00000000:B1:00.0"}}
          - {{index: 1, uuid: GPU-63bc0b91-2265-1b94-831c-15c41fe92675, pci_bus_id: "00000000:CA:00.0"}}
        nics:
          - {{name: mlx5_0, gpu: 0, switch_port: leaf-02/p2}}
          - {{name: mlx5_1, gpu: 1, switch_port: leaf-02/p3}}
switches:
  - {{id: leaf-01, tier: leaf, rack: rack-01}}
  - {{id: leaf-02, tier: leaf, rack: rack-02}}
  - {{id: spine-01, tier: spine}}
  - {{id: spine-02}}
links:
  - {{a: leaf-01/p33, b: spine-01/p1}}
  - {{a: spine-02/p1, b: leaf-01/p34}}
  - {{a: leaf-02/p33, b: spine-01/p2}}
  - {{a: leaf-02/p34, b: spine-02/p2}}
storage:
  - {{id: lustre-01, kind: lustre}}
  - {{id: nfs-01}}
jobs:
  - id: demo
    sla_id: gold
    storage: lustre-01
    owner: team-a
    model: {{params: 7.0e9, layers: 32, hidden: 4096, seq_len: 4096, vocab: 32000}}
    precision: BF16
    parallelism: {{dp: 2, tp: 2, pp: 2}}
    activation_recompute: selective
    ranks:
      - {{rank: 0, gpu: r6i3n0/gpu0, pod: demo-0, container: main}}
      - {{rank: 1, gpu: r6i3n0/gpu1, pod: demo-0, container: main}}
      - {{rank: 2, gpu: r6i3n0/gpu2, pod: demo-0, container: main}}
      - {{rank: 3, gpu: r6i3n0/gpu3, pod: demo-0, container: main}}
      - {{rank: 4, gpu: node-004/gpu0, pod: demo-1}}
      - {{rank: 5, gpu: NODE-004/GPU1, pod: demo-1}}
      - {{rank: 6, gpu: {A30}/gpu0, pod: demo-2}}
      - {{rank: 7, gpu: GPU-2d20791a-b4a6-ba59-97f1-e95b99fe5b49, pod: demo-2}}
    tokens_per_step: 1048576
    target_tokens: 1.5e12
    start: 2026-03-15T00:00:00Z
  - id: idle-job
    sla_id: bronze
    storage: nfs-01
"""
