"""Collective groups derived from a job's parallelism, in Megatron-LM's default order tp-cp-ep-dp-pp.

Tensor-parallel ranks are adjacent, the pipeline stage varies slowest:
``rank = ((((pp_i * dp + dp_i) * ep + ep_i) * cp + cp_i) * tp + tp_i``, which for cp = ep = 1 is
``pp_i * (dp * tp) + dp_i * tp + tp_i`` (spec/inventory.md). A group of kind ``k`` holds the ranks
that differ only in their ``k`` coordinate, listed in ring order (increasing ``k`` coordinate).

Group ids name the job, the kind and the fixed coordinates, slowest first, as the training probe
writes them in ``nccl_group_id``: ``llama/dp/pp0-tp3`` (cp and ep appear only when > 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

__all__ = ["DIMS_FAST_TO_SLOW", "CollectiveGroup", "megatron_groups"]

#: Dimensions in Megatron-LM order, fastest varying first.
DIMS_FAST_TO_SLOW: tuple[str, ...] = ("tp", "cp", "ep", "dp", "pp")
_ALWAYS = ("tp", "dp", "pp")


@dataclass(frozen=True)
class CollectiveGroup:
    """One communicator: its id (``job/dp/pp0-tp3``), kind and global ranks in ring order."""

    id: str
    kind: str
    ranks: tuple[int, ...]

    @property
    def is_ring(self) -> bool:
        """dp/tp/cp/ep talk in rings (last member back to first); pp only between adjacent stages."""
        return self.kind != "pp"

    def neighbour_pairs(self) -> list[tuple[int, int]]:
        """The rank pairs that exchange data: consecutive members, plus the wrap-around for a ring."""
        r = self.ranks
        pairs = [(r[i], r[i + 1]) for i in range(len(r) - 1)]
        if self.is_ring and len(r) > 2:
            pairs.append((r[-1], r[0]))
        return pairs


def _sizes(parallelism: Mapping[str, int]) -> dict[str, int]:
    return {d: max(1, int(parallelism.get(d, 1))) for d in DIMS_FAST_TO_SLOW}


def megatron_groups(job_id: str, parallelism: Mapping[str, int]) -> dict[str, list[CollectiveGroup]]:
    """Groups by kind: always ``tp``, ``dp``, ``pp``; ``cp`` and ``ep`` only when their size is > 1."""
    sizes = _sizes(parallelism)
    slow_to_fast = DIMS_FAST_TO_SLOW[::-1]
    world = 1
    for n in sizes.values():
        world *= n
    grid = np.arange(world, dtype=np.int64).reshape([sizes[d] for d in slow_to_fast])
    out: dict[str, list[CollectiveGroup]] = {}
    for kind in slow_to_fast[::-1]:
        if kind not in _ALWAYS and sizes[kind] == 1:
            continue
        axis = slow_to_fast.index(kind)
        others = [d for d in slow_to_fast if d != kind]
        named = [d for d in others if d in _ALWAYS or sizes[d] > 1]
        moved = np.moveaxis(grid, axis, -1).reshape(-1, sizes[kind])
        coords = np.ndindex(*[sizes[d] for d in others])
        groups: list[CollectiveGroup] = []
        for row, coord in zip(moved, coords, strict=True):
            fixed = dict(zip(others, coord, strict=True))
            label = "-".join(f"{d}{fixed[d]}" for d in named)
            groups.append(CollectiveGroup(id=f"{job_id}/{kind}/{label}", kind=kind,
                                          ranks=tuple(int(x) for x in row)))
        out[kind] = groups
    return out
