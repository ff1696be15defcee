"""The diagnosis sweep: every category, healthy runs and two-fault runs, over seeds and sizes, with
every nuisance on and the scenario variants (fault shapes, one or two jobs, a job that finishes,
spare nodes, an unprobed storage, two GPU generations) spread over the runs so that each category
meets each of its variants."""

from __future__ import annotations

from dataclasses import dataclass

from suanli.sim.faults import CATEGORIES
from suanli.sim.jobs import JobRequest
from suanli.sim.nuisances import Nuisances
from suanli.sim.scenarios import SHAPES, FaultRequest, Scenario

__all__ = ["PAIRS", "SEEDS", "SIZES", "SweepRun", "sweep_runs"]

SEEDS = (1, 2, 3)
SIZES = (8, 16, 32, 128)
MINUTES = 20.0
# Two faults at once: every category appears in a pair; the second starts 60-120 s after the first.
PAIRS: tuple[tuple[str, str], ...] = (
    ("switch_port_errors", "gpu_thermal"), ("storage_slow", "nvlink_degradation"),
    ("optical_degradation", "gpu_memory_degradation"), ("nic_down", "gpu_straggler"),
    ("collective_hang", "pcie_riser"), ("oom", "gpu_lost"), ("gpu_memory_failure", "switch_port_errors"),
    ("pcie_riser", "storage_slow"), ("optical_degradation", "nvswitch_fault"),
)

# Categories whose running faults the sweep writes with ``quiet_logs``: an NVLink that went bad before
# the window logged its Xid 74 then, so only its bandwidth against its peers' shows it in the window.
QUIET_WHEN_RUNNING: frozenset[str] = frozenset({"nvlink_degradation"})


@dataclass(frozen=True)
class SweepRun:
    """One run of the sweep: what to simulate and with which nuisances."""

    kind: str                  # healthy | single | pair
    scenario: Scenario
    seed: int
    nodes: int
    minutes: float
    nuisances: Nuisances

    @property
    def label(self) -> str:
        return f"{self.scenario.name} seed {self.seed} nodes {self.nodes}"


def _shape(category: str, k: int) -> str:
    shapes = SHAPES.get(category, ("step",))
    return shapes[k % len(shapes)]


def _single(cat: str, v: int) -> FaultRequest:
    shape = _shape(cat, v)
    return FaultRequest(cat, shape=shape, quiet_logs=shape == "running" and cat in QUIET_WHEN_RUNNING)


def _scenario(name: str, faults: tuple[FaultRequest, ...], k: int, jobs: int) -> Scenario:
    storage_probe = not (k % 2 == 1 and any(f.category == "storage_slow" for f in faults))
    return Scenario(name, f"sweep run {k}", faults, tuple(JobRequest() for _ in range(jobs)), nodes=8, minutes=MINUTES,
                    spare_nodes=1 + k % 3, gpu_model="A100-SXM" if k % 3 == 2 else "H100-SXM",
                    storage_probe=storage_probe, finish_job=k % 3 == 1)


def sweep_runs(seeds: tuple[int, ...] = SEEDS, sizes: tuple[int, ...] = SIZES,
               minutes: float = MINUTES) -> list[SweepRun]:
    """Every category, a healthy run and two two-fault runs, for each seed and size."""
    out: list[SweepRun] = []
    for si, seed in enumerate(seeds):
        for zi, nodes in enumerate(sizes):
            k = si * len(sizes) + zi        # labels and pairs: one per seed and size
            v = si + zi                     # variants: a Latin square, so no variant sticks to one size
            nz = Nuisances.sweep().varied(v)

            def run(kind: str, sc: Scenario, seed: int = seed, nodes: int = nodes, nz: Nuisances = nz) -> SweepRun:
                return SweepRun(kind, sc, seed, nodes, minutes, nz)

            out.append(run("healthy", _scenario("healthy", (), v, 1 + v % 2)))
            for cat in CATEGORIES:
                out.append(run("single", _scenario(cat, (_single(cat, v),), v, 1 + v % 2)))
            for p in (2 * k, 2 * k + 1):
                a, b = PAIRS[p % len(PAIRS)]
                faults = (_single(a, v + p), FaultRequest(b, delay_s=60.0 + 20.0 * (p % 4)))
                out.append(run("pair", _scenario(f"{a}+{b}", faults, v + p, 2)))
    return out
