"""Catalogue of the hardware the twin builds clusters from: GPU models, NIC speed, PCI layout.

Numbers are vendor data sheet values (dense, no sparsity): H100-SXM 989 bf16 TFLOP/s and 900 GB/s
NVLink (450 GB/s per direction); A100-SXM 312 TFLOP/s and 600 GB/s; H200 as H100 with 141 GB;
B200 2250 TFLOP/s and 1.8 TB/s NVLink 5. HBM bandwidth drives the optimizer phase. Idle SM clocks:
345 MHz (Hopper; the public samples show it), 210 MHz (A100); B200 is given Hopper's. NVSwitch chips
per HGX baseboard: 6 (A100), 4 (H100, H200), 2 (B200); every GPU has links to every chip.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GPU_CATALOG", "GPU_PCI_BUS", "NIC_PCI_BUS", "NVSWITCH_PCI_BUS", "SimGpuModel"]


@dataclass(frozen=True)
class SimGpuModel:
    """One GPU part as the twin needs it."""

    name: str                  # inventory model name (H100-SXM)
    dcgm_name: str             # modelName label dcgm-exporter writes
    bf16_tflops: float         # dense peak, TFLOP/s
    fp8_tflops: float
    tdp_w: float
    gpu_hour_price: float      # USD
    nvlink_Bps: float          # NVLink bandwidth per direction, bytes/s
    hbm_Bps: float             # HBM bandwidth, bytes/s
    memory_mib: int
    max_sm_clock_mhz: float
    nic_Bps: float             # bandwidth of one NIC of this node generation, bytes/s
    idle_sm_clock_mhz: float = 345.0   # SM clock with no process (nvidia-smi "Clocks" at idle)
    nvswitches: int = 4                # NVSwitch chips of the baseboard


GPU_CATALOG: dict[str, SimGpuModel] = {
    "H100-SXM": SimGpuModel("H100-SXM", "NVIDIA H100 80GB HBM3", 989, 1979, 700, 2.50,
                            450e9, 3.35e12, 81559, 1980, 50e9),
    "A100-SXM": SimGpuModel("A100-SXM", "NVIDIA A100-SXM4-80GB", 312, 312, 400, 1.60,
                            300e9, 2.0e12, 81920, 1410, 25e9, idle_sm_clock_mhz=210.0, nvswitches=6),
    "H200-SXM": SimGpuModel("H200-SXM", "NVIDIA H200", 989, 1979, 700, 3.20,
                            450e9, 4.8e12, 143771, 1980, 50e9),
    "B200": SimGpuModel("B200", "NVIDIA B200", 2250, 4500, 1000, 5.00,
                        900e9, 8.0e12, 183359, 1965, 100e9, nvswitches=2),
}

# PCI bus numbers of the eight GPUs and eight NICs on an HGX baseboard (one NIC per PCIe switch).
GPU_PCI_BUS: tuple[str, ...] = ("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB")
NIC_PCI_BUS: tuple[str, ...] = ("19", "2b", "3b", "5e", "9b", "ac", "bb", "dc")
# PCI bus numbers the twin gives the NVSwitch chips (its own choice: real baseboards differ).
NVSWITCH_PCI_BUS: tuple[str, ...] = ("05", "06", "07", "08", "09", "0a")
