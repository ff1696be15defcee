"""Every threshold, default and prior of the decision engine (docs/decisions.md explains each).

Priors are Beta(a, b) pseudo-counts per category, deliberately weak (a + b = 5 pseudo-incidents)
so that a handful of the cluster's own incidents outweighs them. They are judgement, written down
so a person can check and change them, not measurements.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["DEFAULT_CONFIG", "DEFAULT_PRIORS", "ESCALATES_TO", "GENERIC_PRIOR", "CategoryPrior", "DecisionConfig"]

Beta = tuple[float, float]


@dataclass(frozen=True)
class CategoryPrior:
    """What suanli believes about a category before it has seen any of the cluster's own."""

    clear: Beta
    """P(the fault clears by itself, with no action)."""
    clear_mean_s: float
    """Mean time to clear when it does (exponential): a thermal episode, a load spike."""
    escalate: Beta
    """P(a fault left alone that does not clear crashes its job within the horizon)."""
    reset_fix: Beta
    """P(a GPU reset fixes it)."""
    restart_fix: Beta
    """P(restarting the job in place, on the same GPUs, fixes it)."""


def _p(clear: Beta, clear_mean_s: float, escalate: Beta, reset_fix: Beta, restart_fix: Beta) -> CategoryPrior:
    return CategoryPrior(clear, clear_mean_s, escalate, reset_fix, restart_fix)


RARE: Beta = (0.2, 4.8)   # mean 0.04: "almost never", still shrinkable by history
LOW: Beta = (0.5, 4.5)    # 0.1
SOME: Beta = (1.0, 4.0)   # 0.2
QUARTER: Beta = (1.25, 3.75)
HALF: Beta = (2.5, 2.5)
LIKELY: Beta = (3.0, 2.0)  # 0.6
MOST: Beta = (4.0, 1.0)   # 0.8

#: Per category (spec/diagnosis.md). Clearing: thermal episodes and storage load spikes pass; a
#: fail-slow link or optic sometimes recovers; a link that went down often comes back (flap);
#: broken memory, a lost GPU or a stuck-low clock do not. Resets: NVIDIA's Xid catalogue asks
#: for a GPU reset for DBEs, row-remap failures (48, 64, 95) and NVLink errors (74), a reboot
#: for a GPU off the bus (79). A hang with no hardware cause usually clears on restart.
DEFAULT_PRIORS: dict[str, CategoryPrior] = {
    "gpu_memory_degradation": _p(RARE, 3600.0, SOME, SOME, RARE),
    "gpu_memory_failure": _p(RARE, 3600.0, (2.0, 3.0), LIKELY, LOW),
    "gpu_lost": _p(RARE, 3600.0, RARE, (2.0, 3.0), LOW),
    "gpu_thermal": _p(LIKELY, 900.0, LOW, LOW, LOW),
    "pcie_riser": _p(LOW, 1800.0, SOME, LOW, RARE),
    "gpu_straggler": _p(LOW, 1800.0, RARE, (1.5, 3.5), SOME),
    "nvlink_degradation": _p(LOW, 1800.0, LOW, (1.5, 3.5), RARE),
    "nvswitch_fault": _p(LOW, 1800.0, SOME, RARE, RARE),
    "switch_port_errors": _p(QUARTER, 1800.0, LOW, RARE, RARE),
    "optical_degradation": _p(QUARTER, 1800.0, SOME, RARE, RARE),
    "nic_down": _p(QUARTER, 300.0, RARE, RARE, LOW),
    "storage_slow": _p(LIKELY, 900.0, RARE, RARE, RARE),
    "collective_hang": _p(RARE, 3600.0, RARE, LOW, MOST),
    "oom": _p(RARE, 3600.0, RARE, RARE, SOME),
}
GENERIC_PRIOR: CategoryPrior = _p(LOW, 1800.0, LOW, LOW, LOW)
"""For a category the table does not list (the evidence says so)."""

#: What a hardware fault of each category can turn into on the same entity (escalation in history).
ESCALATES_TO: dict[str, frozenset[str]] = {
    "gpu_memory_degradation": frozenset({"gpu_memory_failure", "gpu_lost"}),
    "gpu_memory_failure": frozenset({"gpu_memory_failure", "gpu_lost"}),
    "gpu_thermal": frozenset({"gpu_lost", "gpu_memory_failure"}),
    "pcie_riser": frozenset({"gpu_lost", "pcie_riser"}),
    "gpu_straggler": frozenset({"gpu_lost", "gpu_memory_failure"}),
    "nvlink_degradation": frozenset({"gpu_lost", "nvswitch_fault"}),
    "switch_port_errors": frozenset({"nic_down"}),
    "optical_degradation": frozenset({"nic_down"}),
}


@dataclass(frozen=True)
class DecisionConfig:
    horizon_s: float = 4 * 3600.0
    """Planning horizon: the time within which a person is expected to repair the suspect part.
    Every option is costed until then; beyond it all options are healthy again."""
    default_gpu_hour_price: float = 2.0
    """Price per GPU-hour when the inventory gives none (the impact measure's default)."""
    default_currency: str = "USD"
    default_checkpoint_interval_s: float = 1800.0
    """Work between checkpoints (healthy seconds) when no ``checkpoint_save`` spans say."""
    default_restart_s: float = 600.0
    """Process start to first step after a restart (init + checkpoint load) when none was seen."""
    requeue_s: float = 300.0
    """Scheduler time to requeue a whole job elsewhere (reschedule, node drain)."""
    pod_replace_s: float = 120.0
    """Time to start one replacement pod on a spare GPU (a per-GPU drain, a retired GPU)."""
    gpu_reset_s: float = 60.0
    """``nvidia-smi -r`` and the driver coming back."""
    node_reboot_s: float = 600.0
    """A node reboot: firmware, the OS, the driver and the node back in the scheduler."""
    default_elastic: bool = False
    """Whether a job can shrink when there is no spare capacity (else it stalls)."""
    default_spare_gpus: int = 0
    """Spare GPUs when unknown: none (the conservative side)."""
    idle_gpu_value: float = 1.0
    """Share of a GPU-hour's price lost per healthy GPU a drain leaves idle (1: every hour sells)."""
    stall_steps: float = 3.0
    """A job whose last step ended more than this many healthy steps ago has stalled."""
    recent_steps: int = 5
    """Steps after the onset whose median is the job's current pace."""
    min_baseline_steps: int = 3
    """Steps before the onset needed for a healthy pace."""
    may_clear_at: float = 0.2
    """A category whose posterior P(clears by itself) reaches this waits by the stopping rule."""
    lookback_s: float = 30 * 86400.0
    """History read for posteriors."""
    repeat_window_s: float = 24 * 3600.0
    repeat_count: int = 3
    """This many incidents on the same GPU within the window (this one included) escalate."""
    reboot_limit: int = 2
    """The same reset-asking code after this many resets/reboots of the GPU escalates."""
    reboot_window_s: float = 7 * 86400.0
    software_spread: int = 3
    """The same code on this many distinct GPUs within the repeat window points at software."""
    remediation_merge_s: float = 600.0
    """A GPU reset and a node reboot of its node this close together are one remediation."""
    priors: dict[str, CategoryPrior] = field(default_factory=lambda: dict(DEFAULT_PRIORS))


DEFAULT_CONFIG = DecisionConfig()
