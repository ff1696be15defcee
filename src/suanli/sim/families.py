"""Every simulated metric family: the DCGM ones and the network, host and probe ones, with noise."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from suanli.sim.metrics import Family, World, dcgm_families
from suanli.sim.metrics_net import net_families
from suanli.sim.nuisances import counter_noise

__all__ = ["families"]


def families(w: World) -> Iterator[Family]:
    """Every family, error counters with the history and background counts of ``w.nz``."""
    for fam in itertools.chain(dcgm_families(w), net_families(w)):
        fam.values = counter_noise(fam.name, fam.labels, fam.values, w.ts, w.nz, w.seed, w.noise_log)
        yield fam
