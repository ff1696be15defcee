"""Boolean network tomography: the smallest set of NICs, switch ports or links (possibly one
direction of one) that explains the anomalous node pairs without blaming healthy ones.

Each probed pair (src, dst) has a set of ECMP paths NIC -> leaf -> (spine -> leaf) -> NIC
(spec/inventory.md). Paths are never enumerated: a pair's path set is described by two token
sets, ``may`` (on at least one path) and ``must`` (on every path), built from per-node and
per-leaf-pair parts, so 1,280 nodes with tens of thousands of probed pairs stay cheap.

A token is an element id (``node-001/mlx5_0``, ``leaf-01/p3``, ``leaf-01/p33~spine-01/p1``) or
one direction of it (``@tx``/``@rx`` for a NIC, ``@in``/``@out`` for a switch port seen from
its switch, ``@fwd``/``@rev`` for a link along its sorted ends). Greedy set cover
(Duffield 2006, "Network tomography of binary network performance characteristics"): repeatedly
pick the token with the largest gain = newly explained anomalous pairs (token in ``may``)
- ``healthy_penalty`` x healthy pairs it cannot spare (token in ``must``)
- ``tie_penalty`` x healthy pairs it could touch (token in ``may``), until no gain is positive.
Tokens that explain exactly the same pairs are reported together as ``equivalents``: the
measurements cannot tell them apart.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from suanli.inventory.model import link_id

__all__ = ["FabricGraph", "Localisation", "TomographyConfig", "localise"]

I64 = npt.NDArray[np.int64]
_KIND_ORDER = {"link": 0, "switch_port": 1, "nic": 2}


@dataclass(frozen=True)
class TomographyConfig:
    """Weights of the greedy cover."""

    healthy_penalty: float = 1.0
    """Cost per healthy pair that every path of which crosses the element (it should be slow)."""
    tie_penalty: float = 1e-3
    """Cost per healthy pair that some path crosses: breaks ties towards the narrower hypothesis."""
    max_elements: int = 16
    """At most this many elements are returned (the rest stay unexplained)."""


@dataclass(frozen=True)
class Localisation:
    element: str
    kind: str                       # nic | switch_port | link
    direction: str | None           # None: both ways; tx/rx (nic), in/out (port), fwd/rev (link)
    equivalents: tuple[str, ...]    # other tokens explaining exactly the same pairs
    pairs: I64                      # indices (into the anomalous pair list given) it explains
    contradicted: int               # healthy pairs that should have been slow too


def _split(token: str) -> tuple[str, str | None]:
    elem, _, d = token.partition("@")
    return elem, (d or None)


@dataclass
class FabricGraph:
    """Leaf-spine fabric from the inventory: each node's NICs and their leaf ports, the links."""

    node_nics: dict[str, list[tuple[str, str]]]
    links: list[tuple[str, str]]
    kinds: dict[str, str] = field(default_factory=dict)
    segments: Callable[[str, str], list[tuple[str, ...]]] | None = None
    """Optional: equal-cost middle segments between two switches as (port, link, port) hops
    (``suanli.inventory`` ``Fabric.segments``, any depth); default: the 2-tier uplink tables."""
    _uplinks: dict[str, dict[str, list[tuple[str, str, str]]]] = field(default_factory=dict)
    _fab: dict[tuple[frozenset[str], frozenset[str]], tuple[frozenset[str], frozenset[str]]] = \
        field(default_factory=dict)

    def __post_init__(self) -> None:
        for nics in self.node_nics.values():
            for nic, port in nics:
                self.kinds[nic] = "nic"
                self.kinds[port] = "switch_port"
        for a, b in self.links:
            self.kinds[a] = self.kinds[b] = "switch_port"
            self.kinds[link_id(a, b)] = "link"
            for near, far in ((a, b), (b, a)):
                sw_near, sw_far = near.split("/")[0], far.split("/")[0]
                self._uplinks.setdefault(sw_near, {}).setdefault(sw_far, []).append((near, link_id(a, b), far))

    @staticmethod
    def _link_dir(lid: str, from_port: str) -> str:
        return "fwd" if lid.split("~")[0] == from_port else "rev"

    def leaves(self, node: str) -> frozenset[str]:
        return frozenset(p.split("/")[0] for _, p in self.node_nics.get(node, []))

    def src_part(self, node: str) -> tuple[frozenset[str], frozenset[str]]:
        toks = {t for nic, p in self.node_nics.get(node, []) for t in (nic, f"{nic}@tx", p, f"{p}@in")}
        return frozenset(toks), frozenset(toks if len(self.node_nics.get(node, [])) == 1 else ())

    def dst_part(self, node: str) -> tuple[frozenset[str], frozenset[str]]:
        toks = {t for nic, p in self.node_nics.get(node, []) for t in (nic, f"{nic}@rx", p, f"{p}@out")}
        return frozenset(toks), frozenset(toks if len(self.node_nics.get(node, [])) == 1 else ())

    def _side(self, hops: list[tuple[str, str, str]], up: bool) -> set[str]:
        out: set[str] = set()
        for near, lid, far in hops:
            if up:   # leaf port out, link near->far, spine port in
                out |= {near, f"{near}@out", lid, f"{lid}@{self._link_dir(lid, near)}", far, f"{far}@in"}
            else:    # spine port out (far), link far->near, leaf port in (near)
                out |= {far, f"{far}@out", lid, f"{lid}@{self._link_dir(lid, far)}", near, f"{near}@in"}
        return out

    def _seg_tokens(self, seg: tuple[str, ...]) -> set[str]:
        out: set[str] = set()
        for i in range(0, len(seg) - 2, 3):
            near, lid, far = seg[i], seg[i + 1], seg[i + 2]
            out |= {near, f"{near}@out", lid, f"{lid}@{self._link_dir(lid, near)}", far, f"{far}@in"}
        return out

    def _from_segments(self, la: frozenset[str], lb: frozenset[str],
                       fn: Callable[[str, str], list[tuple[str, ...]]]) -> tuple[frozenset[str], frozenset[str]]:
        may: set[str] = set()
        musts: list[set[str]] = []
        for a in la:
            for b in lb:
                toks = [self._seg_tokens(seg) for seg in fn(a, b)] if a != b else [set()]
                for t in toks:
                    may |= t
                musts.append(set.intersection(*toks) if toks else set())
        return frozenset(may), frozenset(set.intersection(*musts) if musts else set())

    def fabric_part(self, la: frozenset[str], lb: frozenset[str]) -> tuple[frozenset[str], frozenset[str]]:
        key = (la, lb)
        if key in self._fab:
            return self._fab[key]
        if self.segments is not None:
            self._fab[key] = self._from_segments(la, lb, self.segments)
            return self._fab[key]
        may: set[str] = set()
        musts: list[set[str]] = []
        for a in la:
            for b in lb:
                if a == b:
                    musts.append(set())
                    continue
                up, down = self._uplinks.get(a, {}), self._uplinks.get(b, {})
                spines = [s for s in up if s in down]
                for s in spines:
                    may |= self._side(up[s], True) | self._side(down[s], False)
                must: set[str] = set()
                if len(spines) == 1:
                    s = spines[0]
                    if len(up[s]) == 1:
                        must |= self._side(up[s], True)
                    if len(down[s]) == 1:
                        must |= self._side(down[s], False)
                musts.append(must)
        res = (frozenset(may), frozenset(set.intersection(*musts) if musts else set()))
        self._fab[key] = res
        return res

    def may(self, src: str, dst: str) -> frozenset[str]:
        return self.src_part(src)[0] | self.dst_part(dst)[0] | self.fabric_part(self.leaves(src), self.leaves(dst))[0]


def _healthy_counts(graph: FabricGraph, healthy: Iterable[tuple[str, str]]) -> tuple[Counter[str], Counter[str]]:
    """Per token: healthy pairs it must cross (every path), and healthy pairs it may cross."""
    by_src: Counter[str] = Counter()
    by_dst: Counter[str] = Counter()
    by_lp: Counter[tuple[frozenset[str], frozenset[str]]] = Counter()
    leaves: dict[str, frozenset[str]] = {}
    for s, d in healthy:
        by_src[s] += 1
        by_dst[d] += 1
        ls = leaves.get(s) or leaves.setdefault(s, graph.leaves(s))
        ld = leaves.get(d) or leaves.setdefault(d, graph.leaves(d))
        by_lp[(ls, ld)] += 1
    must: Counter[str] = Counter()
    may: Counter[str] = Counter()
    parts: list[tuple[tuple[frozenset[str], frozenset[str]], int]] = []
    parts += [(graph.src_part(n), c) for n, c in by_src.items()]
    parts += [(graph.dst_part(n), c) for n, c in by_dst.items()]
    parts += [(graph.fabric_part(la, lb), c) for (la, lb), c in by_lp.items()]
    for (may_t, must_t), c in parts:
        for t in must_t:
            must[t] += c
        for t in may_t:
            may[t] += c
    return must, may


def _rank_key(graph: FabricGraph, token: str) -> tuple[int, int, str]:
    elem, d = _split(token)
    return (_KIND_ORDER.get(graph.kinds.get(elem, ""), 9), 0 if d is None else 1, token)


def localise(graph: FabricGraph, anomalous: Sequence[tuple[str, str]], healthy: Iterable[tuple[str, str]],
             config: TomographyConfig = TomographyConfig()) -> list[Localisation]:
    """Greedy cover of ``anomalous`` (src, dst) node pairs by fabric elements (see module doc)."""
    cover: dict[str, set[int]] = defaultdict(set)
    for i, (s, d) in enumerate(anomalous):
        for t in graph.may(s, d):
            cover[t].add(i)
    if not cover:
        return []
    must, may = _healthy_counts(graph, healthy)
    uncovered = set(range(len(anomalous)))
    out: list[Localisation] = []
    while uncovered and len(out) < config.max_elements:
        best, best_gain = "", 0.0
        for t in sorted(cover, key=lambda x: _rank_key(graph, x)):
            gain = (len(cover[t] & uncovered) - config.healthy_penalty * must[t] - config.tie_penalty * may[t])
            if gain > best_gain + 1e-9:
                best, best_gain = t, gain
        if not best:
            break
        same = tuple(t for t in sorted(cover) if t != best and cover[t] == cover[best]
                     and must[t] == must[best] and abs(may[t] - may[best]) < 1e-9)
        elem, direction = _split(best)
        out.append(Localisation(elem, graph.kinds.get(elem, "unknown"), direction, same,
                                np.array(sorted(cover[best]), dtype=np.int64), int(must[best])))
        uncovered -= cover[best]
    return out
