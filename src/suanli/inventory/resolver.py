"""Alias resolution: exporter labels, span attributes and log fields -> canonical entity ids.

The one resolver of suanli (``Inventory.resolver``): every lookup is a dict lookup in tables
built once (spec/inventory.md, "Canonical entity ids"), and every answer is memoised, because
ingest asks the same few thousand aliases millions of times. All methods return the canonical
id, or None when the inventory does not know the entity. Spellings are compared through
:mod:`suanli.inventory.normalize`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar, cast

from suanli.inventory.model import EntityKind, rank_id
from suanli.inventory.normalize import host_candidates, mac_key, pci_key

if TYPE_CHECKING:
    from suanli.inventory.catalog import Inventory

__all__ = ["MEMO_ENTRIES", "Resolver"]

MEMO_ENTRIES = 1 << 17
"""Answers a resolver remembers; past this the memo starts again (bounded memory on hostile input)."""

_P = ParamSpec("_P")
_R = TypeVar("_R")
_CANONICAL_GPU = re.compile(r"^(?P<node>[^/\s]+)/gpu(?P<index>\d+)$", re.IGNORECASE)
_NVSWITCH_DEVICE = re.compile(r"^(?:nvidia-)?nvswitch(?P<index>\d+)$", re.IGNORECASE)


def _memo(fn: Callable[Concatenate[Resolver, _P], _R]) -> Callable[Concatenate[Resolver, _P], _R]:
    """Remember a lookup's answer per arguments (the inventory never changes under a resolver)."""
    name = fn.__name__

    @functools.wraps(fn)
    def wrapper(self: Resolver, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        key = (name, args, tuple(kwargs.items()))
        try:
            return cast(_R, self._memo[key])
        except KeyError:
            pass
        except TypeError:                      # an unhashable argument: answer without remembering
            return fn(self, *args, **kwargs)
        out = fn(self, *args, **kwargs)
        if len(self._memo) >= MEMO_ENTRIES:
            self._memo.clear()
        self._memo[key] = out
        return out

    return wrapper


class Resolver:
    """O(1) alias lookups over one :class:`Inventory` (build once, share freely; read-only)."""

    def __init__(self, inv: Inventory) -> None:
        self._inv = inv
        self._memo: dict[object, object] = {}
        self._nodes = _node_aliases(inv)
        self._gpu_ids = {gid.lower(): gid for gid in inv.gpus}
        self._uuid = {g.uuid.lower(): g.id for g in inv.gpus.values() if g.uuid}
        self._gpu_index = {(g.node, g.index): g.id for g in inv.gpus.values()}
        self._gpu_pci: dict[tuple[str, int, int, int, int | None], str] = {}
        self._gpu_pci_nodom: dict[tuple[str, int, int, int | None], str] = {}
        self._gpu_any_domain: dict[tuple[str, int, int, int | None], set[str]] = {}
        for g in inv.gpus.values():
            key = pci_key(g.pci_bus_id) if g.pci_bus_id else None
            if key is None:
                continue
            dom, bus, dev, fn = key
            for f in {fn, None}:
                self._gpu_pci.setdefault((g.node, dom, bus, dev, f), g.id)
                self._gpu_pci_nodom.setdefault((g.node, bus, dev, f), g.id)
                self._gpu_any_domain.setdefault((g.node, bus, dev, f), set()).add(g.id)
        self._nic_name = {(c.node, c.name.lower()): c.id for c in inv.nics.values()}
        self._nic_mac = {k: c.id for c in inv.nics.values() if c.mac and (k := mac_key(c.mac))}
        self._nic_pci: dict[tuple[str, int, int, int], str] = {}
        for c in inv.nics.values():
            nkey = pci_key(c.pci_bus_id) if c.pci_bus_id else None
            if nkey is not None:
                self._nic_pci.setdefault((c.node, nkey[1], nkey[2], nkey[3] or 0), c.id)
        self._nvswitch_index = {(w.node, w.index): w.id for w in inv.nvswitches.values()}
        self._nvswitch_pci: dict[tuple[str, int, int, int], str] = {}
        for w in inv.nvswitches.values():
            wkey = pci_key(w.pci_bus_id) if w.pci_bus_id else None
            if wkey is not None:
                self._nvswitch_pci.setdefault((w.node, wkey[1], wkey[2], wkey[3] or 0), w.id)
        self._pod_node = _nodes_by_pod(inv)
        self._node_jobs = _jobs_by_node(inv)
        self._switches = {sid.lower(): sid for sid in inv.switches}
        self._ports = {p.lower(): p for p in inv.ports}
        self._jobs = {jid.lower(): jid for jid in inv.jobs}
        self._storage = {sid.lower(): sid for sid in inv.storage}
        self._slas = {sla.lower(): sla for sla in inv.slas}

    @_memo
    def node(self, host: str | None) -> str | None:
        """A node id from a host name, FQDN, ``instance`` (``host:port``) or URL, any case."""
        if not host:
            return None
        if host in self._inv.nodes:
            return host
        for cand in host_candidates(host):
            nid = self._nodes.get(cand)
            if nid is not None:
                return nid
        return None

    @_memo
    def gpu(self, uuid: str | None = None, host: str | None = None, index: int | str | None = None,
            pci_bus_id: str | None = None) -> str | None:
        """A gpu id from its UUID, or the host with its index or PCI bus id (any spelling; the
        domain and function must match where the address gives them)."""
        if uuid:
            gid = self._uuid.get(uuid.strip().lower())
            if gid is not None:
                return gid
        node = self.node(host) if host else None
        if node is None:
            return None
        if index is not None and index != "":
            try:
                gid = self._gpu_index.get((node, int(index)))
            except (TypeError, ValueError):
                gid = None
            if gid is not None:
                return gid
        if pci_bus_id:
            return self._gpu_by_pci(node, pci_bus_id)
        return None

    def _gpu_by_pci(self, node: str, pci_bus_id: str) -> str | None:
        key = pci_key(pci_bus_id)
        if key is None:
            return None
        dom, bus, dev, fn = key
        gid = self._gpu_pci.get((node, dom, bus, dev, fn))
        if gid is None and dom == 0:           # no domain given: match any domain on that node
            gid = self._gpu_pci_nodom.get((node, bus, dev, fn))
        return gid

    @_memo
    def gpu_in_any_domain(self, host: str | None, pci_bus_id: str | None) -> str | None:
        """The host's one GPU at the bus, device (and function, where given) of ``pci_bus_id`` in
        whatever PCI domain: the fallback for an address written with another domain than the
        file's (``0001:3b:00.0`` for ``0000:3b:00.0``). None when no GPU, or more than one, is there."""
        node = self.node(host) if host else None
        key = pci_key(pci_bus_id) if pci_bus_id else None
        if node is None or key is None:
            return None
        found = self._gpu_any_domain.get((node, key[1], key[2], key[3]), set())
        return next(iter(found)) if len(found) == 1 else None

    @_memo
    def gpu_any(self, text: str | None, host: str | None = None) -> str | None:
        """A gpu id from a canonical id (``node-001/gpu3``, its node written as any alias), a UUID
        (``resource.gpu.id``), or with ``host``: an index (``3``) or PCI bus id."""
        if not text:
            return None
        s = text.strip()
        gid = self._gpu_ids.get(s.lower()) or self._uuid.get(s.lower())
        if gid is not None:
            return gid
        m = _CANONICAL_GPU.match(s)
        if m is not None:
            return self.gpu(host=self.node(m.group("node")), index=int(m.group("index")))
        if host is None:
            return None
        if s.isdecimal():
            return self.gpu(host=host, index=int(s))
        return self.gpu(host=host, pci_bus_id=s)

    @_memo
    def nic(self, host: str | None = None, device: str | None = None, mac: str | None = None,
            pci_bus_id: str | None = None) -> str | None:
        """A nic id from (host, device name like ``mlx5_0``), from its MAC (any spelling), or from
        (host, PCI bus id of the NIC function, any spelling; domain ignored)."""
        if host and pci_bus_id:
            node = self.node(host)
            pkey = pci_key(pci_bus_id)
            if node is not None and pkey is not None:
                cid = self._nic_pci.get((node, pkey[1], pkey[2], pkey[3] or 0))
                if cid is not None:
                    return cid
        if host and device:
            node = self.node(host)
            if node is not None:
                cid = self._nic_name.get((node, device.strip().lower()))
                if cid is not None:
                    return cid
        if mac:
            key = mac_key(mac)
            if key is not None:
                return self._nic_mac.get(key)
        return None

    @_memo
    def nvswitch(self, host: str | None, device: str | None = None, pci_bus_id: str | None = None) -> str | None:
        """An nvswitch id from the host and the kernel's device name (``nvidia-nvswitch3``: index 3)
        or the chip's PCI bus id (domain ignored); None when the node does not list that chip."""
        node = self.node(host) if host else None
        if node is None:
            return None
        m = _NVSWITCH_DEVICE.match(device.strip()) if device else None
        if m is not None:
            wid = self._nvswitch_index.get((node, int(m.group("index"))))
            if wid is not None:
                return wid
        pkey = pci_key(pci_bus_id) if pci_bus_id else None
        return self._nvswitch_pci.get((node, pkey[1], pkey[2], pkey[3] or 0)) if pkey else None

    def node_of_pod(self, pod: str | None) -> str | None:
        """The node a Kubernetes pod of the inventory runs on (its ranks' GPUs all on one node)."""
        return self._pod_node.get(pod.strip()) if pod else None

    @_memo
    def switch(self, switch: str | None) -> str | None:
        """A switch id, any case (an FQDN's first label also matches)."""
        if not switch:
            return None
        for cand in host_candidates(switch):
            sid = self._switches.get(cand)
            if sid is not None:
                return sid
        return None

    @_memo
    def port(self, switch: str | None, port: str | int | None) -> str | None:
        """A switch_port id from the ``switch`` and ``port`` labels (``p17``, ``17``, ``leaf-01/p17``).

        Ports cabled in the file resolve to their id as written; other ports of a known switch
        resolve to ``switch/pN``.
        """
        if port is None or port == "":
            return None
        text = str(port).strip()
        head, sep, tail = text.partition("/")
        if sep and head and tail and self.switch(head) is not None:
            switch, text = head, tail
        sid = self.switch(switch)
        if sid is None:
            return None
        low = text.lower()
        num = low[1:] if low.startswith("p") else low
        candidates = [f"{sid}/{text}", f"{sid}/p{num}", f"{sid}/{num}"] if num.isdecimal() else [f"{sid}/{text}"]
        if num.isdecimal() and num != str(int(num)):
            candidates += [f"{sid}/p{int(num)}", f"{sid}/{int(num)}"]
        for cand in candidates:
            pid = self._ports.get(cand.lower())
            if pid is not None:
                return pid
        return f"{sid}/p{int(num)}" if num.isdecimal() else f"{sid}/{text}"

    def jobs_on_node(self, host: str | None) -> list[str]:
        """Jobs with a rank on a GPU of this node (sorted); [] for an unknown host."""
        node = self.node(host)
        return list(self._node_jobs.get(node, [])) if node else []

    @_memo
    def job(self, job_id: str | None) -> str | None:
        """A job id (exact, else case-insensitive)."""
        if not job_id:
            return None
        if job_id in self._inv.jobs:
            return job_id
        return self._jobs.get(job_id.strip().lower())

    def storage(self, name: str | None) -> str | None:
        """A storage id (``storage`` label), exact or case-insensitive."""
        return self._storage.get(name.strip().lower()) if name else None

    def sla(self, name: str | None) -> str | None:
        """An SLA id (``business.sla_id`` / ``sla_id`` label), exact or case-insensitive."""
        return self._slas.get(name.strip().lower()) if name else None

    def kind_of(self, entity_id: str) -> EntityKind | None:
        """The kind of a canonical id (:meth:`Inventory.kind_of`)."""
        return self._inv.kind_of(entity_id)

    def process_gpu(self, host: str | None, job: str | None, rank: int | None) -> str | None:
        """The GPU a process's CUDA device is (a device index is not an inventory index): the GPU
        the inventory gives the job's rank, else the node's only GPU, else None."""
        jid = self.job(job)
        if jid is not None and rank is not None:
            for rk in self._inv.jobs[jid].ranks:
                if rk.rank == rank:
                    return rk.gpu
        node = self.node(host)
        gpus = self._inv.nodes[node].gpus if node is not None else ()
        return gpus[0].id if len(gpus) == 1 else None

    def rank(self, job: str | None, rank: int | str | None) -> str | None:
        """``job/rankN`` for a known job and a rank >= 0 (listed in the file or not)."""
        jid = self.job(job)
        if jid is None or rank is None or isinstance(rank, bool):
            return None
        try:
            n = int(rank)
        except (TypeError, ValueError):
            return None
        return rank_id(jid, n) if n >= 0 else None


def _node_aliases(inv: Inventory) -> dict[str, str]:
    """Lower-case node ids, and the host name of node ids written as FQDNs (when unambiguous)."""
    nodes = {nid.lower(): nid for nid in inv.nodes}
    short: dict[str, list[str]] = {}
    for nid in inv.nodes:
        if "." in nid:
            short.setdefault(nid.split(".", 1)[0].lower(), []).append(nid)
    for name, ids in short.items():
        if len(ids) == 1:
            nodes.setdefault(name, ids[0])
    return nodes


def _nodes_by_pod(inv: Inventory) -> dict[str, str]:
    """pod -> node, for pods whose ranks all sit on GPUs of one node."""
    nodes: dict[str, set[str]] = {}
    for job in inv.jobs.values():
        for rk in job.ranks:
            gpu = inv.gpus.get(rk.gpu)
            if rk.pod and gpu is not None:
                nodes.setdefault(rk.pod, set()).add(gpu.node)
    return {pod: next(iter(ns)) for pod, ns in nodes.items() if len(ns) == 1}


def _jobs_by_node(inv: Inventory) -> dict[str, list[str]]:
    node_jobs: dict[str, set[str]] = {}
    for job in inv.jobs.values():
        for rk in job.ranks:
            gpu = inv.gpus.get(rk.gpu)
            if gpu is not None:
                node_jobs.setdefault(gpu.node, set()).add(job.id)
    return {n: sorted(js) for n, js in node_jobs.items()}
