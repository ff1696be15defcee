"""Equal-cost paths through the switch fabric, from per-switch uplink tables (no graph search per call).

A path between two NICs is the ordered list of entity ids it crosses:
``src nic, src leaf port, [leaf uplink port, link, spine port, spine port, link, dst-leaf uplink port],
dst leaf port, dst nic``. Two NICs on one leaf do not cross a spine. Between leaves, every shortest
switch route (every spine both leaves reach, in a 2-tier fabric) and every parallel cable on each hop
is one equal-cost path. Deeper fabrics work too: shortest switch routes come from a BFS over the
(small) switch graph, once per leaf pair, then cached.
"""

from __future__ import annotations

import itertools
import zlib
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from suanli.inventory.catalog import Inventory

__all__ = ["Fabric", "FabricConfig", "stable_index"]

Hop = tuple[str, str, str]                      # (local port, link id, remote port)


@dataclass(frozen=True)
class FabricConfig:
    """Limits of path enumeration."""

    max_paths_per_pair: int = 4096
    """At most this many equal-cost paths per NIC pair (deep fabrics with many parallel cables multiply)."""


def stable_index(key: str, n: int) -> int:
    """A deterministic choice in ``range(n)`` from ``key`` (CRC-32, unlike Python's salted ``hash``)."""
    return zlib.crc32(key.encode("utf-8")) % n if n > 0 else 0


class Fabric:
    """Switch adjacency with parallel cables, NIC attachment, and cached switch-to-switch segments."""

    def __init__(self, inv: Inventory, config: FabricConfig | None = None) -> None:
        self.config = config or FabricConfig()
        self.nic_port: dict[str, str] = {c.id: c.switch_port for c in inv.nics.values() if c.switch_port}
        self.port_nic: dict[str, str] = {p: n for n, p in self.nic_port.items()}
        self.port_switch: dict[str, str] = {}
        for port in inv.ports:
            head, _, _ = port.partition("/")
            self.port_switch[port] = head
        self.adj: dict[str, dict[str, list[Hop]]] = {sid: {} for sid in inv.switches}
        self.port_link: dict[str, str] = {}
        for link in sorted(inv.links, key=lambda lk: lk.id):
            sa, sb = self.port_switch[link.a], self.port_switch[link.b]
            self.port_link[link.a] = self.port_link[link.b] = link.id
            self.adj.setdefault(sa, {}).setdefault(sb, []).append((link.a, link.id, link.b))
            self.adj.setdefault(sb, {}).setdefault(sa, []).append((link.b, link.id, link.a))
        self._segments: dict[tuple[str, str], list[tuple[str, ...]]] = {}

    def switch_routes(self, src: str, dst: str) -> list[list[str]]:
        """Every shortest route of switches from ``src`` to ``dst`` (both included), sorted."""
        if src == dst:
            return [[src]]
        dist = {dst: 0}
        queue = deque([dst])
        while queue:
            cur = queue.popleft()
            for nxt in self.adj.get(cur, {}):
                if nxt not in dist:
                    dist[nxt] = dist[cur] + 1
                    queue.append(nxt)
        if src not in dist:
            return []
        routes: list[list[str]] = []
        stack: list[list[str]] = [[src]]
        while stack:
            route = stack.pop()
            here = route[-1]
            if here == dst:
                routes.append(route)
                continue
            for nxt in self.adj[here]:
                if dist.get(nxt, -1) == dist[here] - 1:
                    stack.append([*route, nxt])
        return sorted(routes)

    def segments(self, src_switch: str, dst_switch: str) -> list[tuple[str, ...]]:
        """The middle parts of every equal-cost path between two switches (cached per pair).

        Each is ``(uplink port, link, spine port, spine port, link, downlink port)`` in a 2-tier fabric;
        ``[()]`` for one switch; ``[]`` when they are not connected.
        """
        key = (src_switch, dst_switch)
        cached = self._segments.get(key)
        if cached is not None:
            return cached
        out: list[tuple[str, ...]] = []
        for route in self.switch_routes(src_switch, dst_switch):
            hops = [self.adj[a][b] for a, b in itertools.pairwise(route)]
            for choice in itertools.product(*hops):
                out.append(tuple(x for hop in choice for x in hop))
                if len(out) >= self.config.max_paths_per_pair:
                    break
            if len(out) >= self.config.max_paths_per_pair:
                break
        self._segments[key] = out
        return out

    def nic_paths(self, src_nic: str, dst_nic: str) -> list[list[str]]:
        """Every equal-cost path between two cabled NICs ([] when either is not cabled or unreachable)."""
        sp, dp = self.nic_port.get(src_nic), self.nic_port.get(dst_nic)
        if sp is None or dp is None or src_nic == dst_nic:
            return []
        segs = self.segments(self.port_switch[sp], self.port_switch[dp])
        return [[src_nic, sp, *seg, dp, dst_nic] for seg in segs]

    def nic_entities(self, src_nic: str, dst_nic: str) -> set[str]:
        """The union of all equal-cost paths between two NICs."""
        out: set[str] = set()
        for path in self.nic_paths(src_nic, dst_nic):
            out.update(path)
        return out

    def middle_entities(self, src_switch: str, dst_switch: str) -> set[str]:
        """Ports and links strictly between two leaves over all their equal-cost paths."""
        return {x for seg in self.segments(src_switch, dst_switch) for x in seg}

    def leaf_of(self, nic: str) -> str | None:
        port = self.nic_port.get(nic)
        return self.port_switch[port] if port is not None else None

    def ports_of_switch(self, switch: str, ports: Iterable[str]) -> set[str]:
        return {p for p in ports if self.port_switch.get(p) == switch}
