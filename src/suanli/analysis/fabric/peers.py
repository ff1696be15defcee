"""Which NICs and switch ports carry the same collective as a NIC or port at the same time: the
peers a fabric counter is judged against, from the inventory's jobs and their placement.

A job's data-parallel all-reduce leaves every node by the NIC of each GPU (its rail, the NIC's
name: ``mlx5_0`` on every node) and rail-matched NICs talk to each other, so the NICs of one job
on one rail, and the leaf ports they plug into, move the same bytes in the same steps. Errors
that all of them count alike are what those links do (their optics, their speed, the exporter's
counting), not one part's fault; one part clearly worse than the rest is. A NIC or port that no
multi-node job crosses, and a switch-to-switch port (ECMP spreads a collective over the uplinks
unevenly), has no peer and is judged on its own traffic alone.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from suanli.inventory.catalog import Inventory

__all__ = ["MAX_PEERS", "collective_peers"]

F64 = npt.NDArray[np.float64]


def _rails(inv: Inventory) -> dict[tuple[str, str], set[str]]:
    """(job, rail) -> the NICs of the job's GPUs on that rail, for jobs on more than one node."""
    topo = inv.topology
    out: dict[tuple[str, str], set[str]] = defaultdict(set)
    for job in inv.jobs.values():
        nics = {n for r in job.ranks if (n := topo.nic_for_gpu(r.gpu)) is not None}
        if len({inv.nics[n].node for n in nics}) < 2:
            continue                      # one node: its collectives never leave it
        for n in nics:
            out[(job.id, inv.nics[n].name)].add(n)
    return out


MAX_PEERS = 32
"""Peers per NIC or port at most: the median of 32 is as steady as that of thousands, and a
10,000-GPU job's rail would otherwise make the comparison quadratic in its size."""


def _near(members: list[str], i: int, k: int) -> list[str]:
    """The ``k`` members nearest ``members[i]`` in the list's order (wrapping), itself left out."""
    n = len(members)
    if n - 1 <= k:
        return members[:i] + members[i + 1:]
    return [members[(i + d) % n] for d in range(-(k // 2), k - k // 2 + 1) if d != 0][:k]


def collective_peers(inv: Inventory, max_peers: int = MAX_PEERS) -> dict[str, tuple[str, ...]]:
    """NIC id -> the other NICs of its job on its rail; NIC-facing switch port -> those NICs'
    ports (the first job of the inventory that places a rank behind it; sorted; at most
    ``max_peers``, the nearest in the rail's order)."""
    out: dict[str, tuple[str, ...]] = {}
    for (_, _), nics in sorted(_rails(inv).items()):
        members = sorted(nics)
        for i, n in enumerate(members):
            mates = _near(members, i, max_peers)
            out.setdefault(n, tuple(sorted(mates)))
            port = inv.nics[n].switch_port
            if port is not None:
                out.setdefault(port, tuple(sorted(p for m in mates if (p := inv.nics[m].switch_port) is not None)))
    return out
