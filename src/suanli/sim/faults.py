"""The fault library: one fault per category of spec/diagnosis.md, injected at its root entity.

A fault only changes the state of its root (a port's loss, a GPU's clock, a storage's latency, a
job's control flow); the timeline and telemetry read that state through real dependencies, so a
symptom appears wherever physics puts it and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from suanli.analysis import categories
from suanli.sim.physics import PhysicsConfig, ber_latency_s, ber_loss

__all__ = ["CATEGORIES", "ROOT_KIND", "Effects", "Fault"]

# Default magnitude per category (its meaning is in the comment).
DEFAULT_MAGNITUDE: dict[str, float] = {
    "gpu_memory_degradation": 20000.0,  # SBE per day at full ramp (10/day is already a warning)
    "gpu_memory_failure": 1.0,         # DBEs
    "gpu_lost": 1.0,
    "gpu_thermal": 0.72,               # SM clock factor when throttled
    "pcie_riser": 0.6,                 # NIC bandwidth factor through the flaky riser
    "gpu_straggler": 0.8,              # SM clock factor
    "nvlink_degradation": 0.6,         # NVLink bandwidth factor (-40 %)
    "nvswitch_fault": 0.75,            # NVLink factor of its node's GPUs: one chip of four lost (scenarios: 1 - 1/chips)
    "switch_port_errors": 1e-3,        # CRC error ratio
    "optical_degradation": 1e-8,       # pre-FEC BER reached (a failing optic: four decades up)
    "nic_down": 1.0,
    "storage_slow": 25.0,              # read latency factor
    "collective_hang": 1.0,
    "oom": 1.0,
}
# The categories the twin can inject (those with a magnitude), in the taxonomy's order, and the kind
# of entity each is injected at: the category table's first root-cause kind.
CATEGORIES: tuple[str, ...] = tuple(c for c in categories.CATEGORIES if c in DEFAULT_MAGNITUDE)
ROOT_KIND: dict[str, str] = {c: categories.root_kind(c) for c in CATEGORIES}


@dataclass
class Fault:
    """One injected fault; ``level(t)`` ramps from 0 at ``start_s`` to 1 after ``ramp_s``."""

    category: str
    root: str
    start_s: float
    magnitude: float
    end_s: float | None = None
    ramp_s: float = 60.0
    direction_rx: bool = True          # optical: the receiving side of the root degrades
    precursor_s: float = 0.0           # gpu_memory_failure: SBEs climb for this long before the DBE
    jobs: list[str] = field(default_factory=list)
    shape: str = "step"                # step | ramp | transient | running (suanli.sim.scenarios.SHAPES)
    quiet_logs: bool = False           # running: every kernel line it printed came before the window

    @property
    def kind(self) -> str:
        if self.category == "optical_degradation" and "/mlx5" in self.root:
            return "nic"
        return ROOT_KIND[self.category]

    def level(self, t: float | np.ndarray) -> np.ndarray:
        x = np.clip((np.asarray(t, dtype=np.float64) - self.start_s) / max(self.ramp_s, 1e-9), 0.0, 1.0)
        if self.end_s is not None:
            x = np.where(np.asarray(t) >= self.end_s, 0.0, x)
        return x

    def active(self, t: float) -> bool:
        return t >= self.start_s and (self.end_s is None or t < self.end_s)


class Effects:
    """State of every faulted entity as a function of time; unfaulted entities read as healthy."""

    def __init__(self, faults: list[Fault], cfg: PhysicsConfig) -> None:
        self.faults = faults
        self.cfg = cfg
        self.by_root: dict[str, list[Fault]] = {}
        self.switch_faults: dict[str, list[Fault]] = {}    # node -> faults on its NVSwitch chips
        for f in faults:
            self.by_root.setdefault(f.root, []).append(f)
            if f.category == "nvswitch_fault":
                self.switch_faults.setdefault(f.root.split("/")[0], []).append(f)

    def of(self, root: str, category: str) -> Fault | None:
        for f in self.by_root.get(root, ()):
            if f.category == category:
                return f
        return None

    def ber(self, entity: str, t: float | np.ndarray) -> np.ndarray:
        """Pre-FEC BER measured at ``entity`` (log-linear ramp between baseline and the fault's value)."""
        base = self.cfg.baseline_ber
        f = self.of(entity, "optical_degradation")
        lv = f.level(t) if f else np.zeros_like(np.asarray(t, dtype=np.float64))
        top = f.magnitude if f else base
        return np.asarray(base * (top / base) ** lv)

    def loss(self, entity: str, t: float, rx: bool) -> float:
        """Packet loss a packet suffers at ``entity``; ``rx`` says it is received there."""
        loss = 0.0
        for f in self.by_root.get(entity, ()):
            if f.category == "switch_port_errors":
                loss += f.magnitude * float(f.level(t))
            elif f.category == "optical_degradation" and rx == f.direction_rx:
                loss += ber_loss(self.cfg, float(self.ber(entity, t)))
        return loss

    def extra_latency_s(self, entity: str, t: float, rx: bool) -> float:
        f = self.of(entity, "optical_degradation")
        if f is None or rx != f.direction_rx:
            return 0.0
        return ber_latency_s(self.cfg, float(self.ber(entity, t)))

    def clock_factor(self, gpu: str, t: float) -> float:
        factor = 1.0
        for cat in ("gpu_thermal", "gpu_straggler"):
            f = self.of(gpu, cat)
            if f is not None:
                factor *= 1.0 - (1.0 - f.magnitude) * float(f.level(t))
        return factor

    def nvlink_level(self, gpu: str, t: float | np.ndarray) -> np.ndarray:
        """Share of its NVLink bandwidth a GPU keeps: its own links' fault times its node's switch faults
        (a broken NVSwitch chip takes its links to every GPU of the node)."""
        out = np.ones_like(np.asarray(t, dtype=np.float64))
        own = self.of(gpu, "nvlink_degradation")
        for f in ([own] if own else []) + self.switch_faults.get(gpu.split("/")[0], []):
            out = out * (1.0 - (1.0 - f.magnitude) * f.level(t))
        return out

    def nvlink_factor(self, gpu: str, t: float) -> float:
        return float(self.nvlink_level(gpu, t))

    def switch_fault_of(self, gpu: str) -> Fault | None:
        """The first fault on an NVSwitch chip of the GPU's node, if any."""
        return next(iter(self.switch_faults.get(gpu.split("/")[0], [])), None)

    def riser_factor(self, gpu: str, t: float) -> float:
        f = self.of(gpu, "pcie_riser")
        return 1.0 if f is None else 1.0 - (1.0 - f.magnitude) * float(f.level(t))

    def storage_factor(self, storage: str, t: float) -> float:
        f = self.of(storage, "storage_slow")
        return 1.0 if f is None else 1.0 + (f.magnitude - 1.0) * float(f.level(t))

    def down_at(self, entity: str, category: str) -> float | None:
        f = self.of(entity, category)
        return None if f is None else f.start_s

    def touched(self) -> set[str]:
        """Every faulted entity, and the GPUs behind a faulted NVSwitch chip (8 per node)."""
        return set(self.by_root) | {f"{n}/gpu{g}" for n in self.switch_faults for g in range(8)}
