"""Alias resolution: exporter labels, span attributes and log fields -> canonical entity ids.

Every lookup is a dict lookup in tables built once (spec/inventory.md, "Canonical entity ids").
All methods return the canonical id, or None when the inventory does not know the entity.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from suanli.inventory.model import EntityKind, rank_id

if TYPE_CHECKING:
    from suanli.inventory.catalog import Inventory

__all__ = ["Resolver", "mac_key", "pci_key"]

# [domain:]bus:device[.function], hex; the Xid form ``PCI:0000:3b:00`` has no function.
_PCI_RE = re.compile(
    r"^(?:pci:)?(?:(?P<dom>[0-9a-f]{1,8}):)?(?P<bus>[0-9a-f]{1,2}):(?P<dev>[0-9a-f]{1,2})(?:\.(?P<fn>[0-7]))?$"
)
_HEX = frozenset("0123456789abcdef")


def pci_key(text: str) -> tuple[int, int, int, int | None] | None:
    """``00000000:3B:00.0`` / ``0000:3b:00.0`` / ``3b:00.0`` / ``PCI:0000:3b:00`` -> (domain, bus, dev, fn).

    A missing domain is 0; a missing function is None. None when ``text`` is not a PCI address.
    """
    m = _PCI_RE.match(text.strip().lower())
    if m is None:
        return None
    fn = m.group("fn")
    return (int(m.group("dom") or "0", 16), int(m.group("bus"), 16), int(m.group("dev"), 16),
            int(fn) if fn is not None else None)


def mac_key(text: str) -> str | None:
    """A MAC in any case with ``:``, ``-`` or ``.`` separators (or none) -> 12 lower-case hex digits."""
    digits = "".join(ch for ch in text.lower() if ch not in ":-. ")
    return digits if len(digits) == 12 and set(digits) <= _HEX else None


def _host_candidates(text: str) -> list[str]:
    """``http://Node-001.cluster.local:9400/`` -> [``node-001.cluster.local``, ``node-001``]."""
    s = text.strip().lower()
    if "://" in s:
        s = s.split("://", 1)[1]
    s = s.split("/", 1)[0]
    if s.startswith("["):                      # [ipv6]:port
        s = s[1:].split("]", 1)[0]
    elif s.count(":") == 1:
        s = s.split(":", 1)[0]
    out = [s]
    if "." in s and not s.replace(".", "").isdigit():
        out.append(s.split(".", 1)[0])
    return out


class Resolver:
    """O(1) alias lookups over one :class:`Inventory` (build once, share freely; read-only)."""

    def __init__(self, inv: Inventory) -> None:
        self._inv = inv
        self._nodes = {nid.lower(): nid for nid in inv.nodes}
        short: dict[str, list[str]] = {}
        for nid in inv.nodes:                  # node ids written as FQDNs also answer to their host name
            if "." in nid:
                short.setdefault(nid.split(".", 1)[0].lower(), []).append(nid)
        for name, ids in short.items():
            if len(ids) == 1:
                self._nodes.setdefault(name, ids[0])
        self._gpu_ids = {gid.lower(): gid for gid in inv.gpus}
        self._uuid = {g.uuid.lower(): g.id for g in inv.gpus.values() if g.uuid}
        self._gpu_index = {(g.node, g.index): g.id for g in inv.gpus.values()}
        self._gpu_pci: dict[tuple[str, int, int, int, int | None], str] = {}
        self._gpu_pci_nodom: dict[tuple[str, int, int, int | None], str] = {}
        for g in inv.gpus.values():
            key = pci_key(g.pci_bus_id) if g.pci_bus_id else None
            if key is None:
                continue
            dom, bus, dev, fn = key
            for f in {fn, None}:
                self._gpu_pci.setdefault((g.node, dom, bus, dev, f), g.id)
                self._gpu_pci_nodom.setdefault((g.node, bus, dev, f), g.id)
        self._nic_name = {(c.node, c.name.lower()): c.id for c in inv.nics.values()}
        self._nic_mac = {k: c.id for c in inv.nics.values() if c.mac and (k := mac_key(c.mac))}
        self._nic_pci: dict[tuple[str, int, int, int], str] = {}
        for c in inv.nics.values():
            nkey = pci_key(c.pci_bus_id) if c.pci_bus_id else None
            if nkey is not None:
                self._nic_pci.setdefault((c.node, nkey[1], nkey[2], nkey[3] or 0), c.id)
        node_jobs: dict[str, set[str]] = {}
        for job in inv.jobs.values():
            for rk in job.ranks:
                gpu = inv.gpus.get(rk.gpu)
                if gpu is not None:
                    node_jobs.setdefault(gpu.node, set()).add(job.id)
        self._node_jobs = {n: sorted(js) for n, js in node_jobs.items()}
        self._switches = {sid.lower(): sid for sid in inv.switches}
        self._ports = {p.lower(): p for p in inv.ports}
        self._jobs = {jid.lower(): jid for jid in inv.jobs}
        self._storage = {sid.lower(): sid for sid in inv.storage}
        self._slas = {sla.lower(): sla for sla in inv.slas}

    def node(self, host: str | None) -> str | None:
        """A node id from a host name, FQDN, ``instance`` (``host:port``) or URL, any case."""
        if not host:
            return None
        if host in self._inv.nodes:
            return host
        for cand in _host_candidates(host):
            nid = self._nodes.get(cand)
            if nid is not None:
                return nid
        return None

    def gpu(self, uuid: str | None = None, host: str | None = None, index: int | str | None = None,
            pci_bus_id: str | None = None) -> str | None:
        """A gpu id from its UUID, or the host with its index or PCI bus id (any spelling)."""
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

    def gpu_any(self, text: str | None, host: str | None = None) -> str | None:
        """A gpu id from a canonical id (``node-001/gpu3``), a UUID (``resource.gpu.id``), or
        with ``host``: an index (``3``) or PCI bus id."""
        if not text:
            return None
        s = text.strip()
        gid = self._gpu_ids.get(s.lower()) or self._uuid.get(s.lower())
        if gid is not None or host is None:
            return gid
        if s.isdigit():
            return self.gpu(host=host, index=int(s))
        return self.gpu(host=host, pci_bus_id=s)

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

    def switch(self, switch: str | None) -> str | None:
        """A switch id, any case (an FQDN's first label also matches)."""
        if not switch:
            return None
        for cand in _host_candidates(switch):
            sid = self._switches.get(cand)
            if sid is not None:
                return sid
        return None

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
        candidates = [f"{sid}/{text}", f"{sid}/p{num}", f"{sid}/{num}"] if num.isdigit() else [f"{sid}/{text}"]
        if num.isdigit() and num != str(int(num)):
            candidates += [f"{sid}/p{int(num)}", f"{sid}/{int(num)}"]
        for cand in candidates:
            pid = self._ports.get(cand.lower())
            if pid is not None:
                return pid
        return f"{sid}/p{int(num)}" if num.isdigit() else f"{sid}/{text}"

    def jobs_on_node(self, host: str | None) -> list[str]:
        """Jobs with a rank on a GPU of this node (sorted); [] for an unknown host."""
        node = self.node(host)
        return list(self._node_jobs.get(node, [])) if node else []

    def job(self, job_id: str | None) -> str | None:
        """A job id (exact, else case-insensitive)."""
        if not job_id:
            return None
        if job_id in self._inv.jobs:
            return job_id
        return self._jobs.get(job_id.strip().lower())

    def storage(self, name: str | None) -> str | None:
        """A storage id (``storage`` label), exact or case-insensitive."""
        return self._named(self._storage, name)

    def sla(self, name: str | None) -> str | None:
        """An SLA id (``business.sla_id`` / ``sla_id`` label), exact or case-insensitive."""
        return self._named(self._slas, name)

    @staticmethod
    def _named(table: dict[str, str], name: str | None) -> str | None:
        return table.get(name.strip().lower()) if name else None

    def kind_of(self, entity_id: str) -> EntityKind | None:
        """The kind of a canonical id (:meth:`Inventory.kind_of`)."""
        return self._inv.kind_of(entity_id)

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
