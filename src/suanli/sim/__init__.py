"""suanli.sim: the digital twin. Builds a cluster, runs its training jobs step by step, injects
faults at their root entities and writes a scenario folder (spec/telemetry.md) with truth.json."""

from suanli.sim.api import demo_cluster, list_scenarios, simulate, simulate_custom
from suanli.sim.cluster import MAX_NODES, MIN_NODES
from suanli.sim.jobs import JobRequest
from suanli.sim.nuisances import NoiseConfig, Nuisances
from suanli.sim.scenarios import SHAPES, FaultRequest, Scenario

__all__ = ["MAX_NODES", "MIN_NODES", "SHAPES", "FaultRequest", "JobRequest", "NoiseConfig", "Nuisances", "Scenario",
           "demo_cluster", "list_scenarios", "simulate", "simulate_custom"]
