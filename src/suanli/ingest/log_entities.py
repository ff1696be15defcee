"""Alias resolution shared by the OTLP and log parsers.

``Resolver`` is the structural type of ``Inventory.resolver`` (docs/architecture.md): the parsers
only need these lookups, so they are typed against this protocol and never import the inventory
package's concrete class. ``CachedResolver`` memoises lookups (a 128-node scenario repeats the
same few thousand aliases millions of times) and accepts ``None`` for "no inventory".
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Protocol

__all__ = ["CachedResolver", "Resolver", "host_from_path", "normalise_pci"]

_CANONICAL_GPU = re.compile(r"^(?P<node>[^/\s]+)/gpu(?P<index>\d+)$")
_PCI = re.compile(r"^(?:(?P<domain>[0-9a-fA-F]{4,8}):)?(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})"
                  r"(?:\.(?P<fn>[0-7]))?$")


class Resolver(Protocol):
    """Alias -> canonical id lookups of the inventory (None when there is no such entity)."""

    def node(self, host: str, /) -> str | None: ...

    def gpu(self, *, uuid: str | None = None, host: str | None = None, index: int | None = None,
            pci_bus_id: str | None = None) -> str | None: ...

    def job(self, job_id: str, /) -> str | None: ...


@functools.lru_cache(maxsize=4096)
def normalise_pci(text: str) -> str | None:
    """``0000:3b:00``, ``00000000:3B:00.0``, ``3b:00.0`` -> ``0000:3b:00.0`` (None if not a PCI address).

    Xid lines name the device without the function (``PCI:0000:3b:00``): function 0 is meant.
    """
    m = _PCI.match(text.strip())
    if m is None:
        return None
    domain = (m.group("domain") or "0000")[-4:].lower()
    return f"{domain}:{m.group('bus').lower()}:{m.group('dev').lower()}.{m.group('fn') or '0'}"


class CachedResolver:
    """Memoising front of a :class:`Resolver`; without one, ids pass through where they are canonical."""

    def __init__(self, resolver: Resolver | None) -> None:
        self._resolver = resolver
        self._nodes: dict[str, str | None] = {}
        self._jobs: dict[str, str | None] = {}
        self._gpus: dict[tuple[str | None, str], str | None] = {}
        self._pci: dict[tuple[str | None, str], str | None] = {}

    @property
    def has_inventory(self) -> bool:
        return self._resolver is not None

    def node(self, host: str) -> str | None:
        try:
            return self._nodes[host]
        except KeyError:
            pass
        if self._resolver is None:
            out: str | None = host or None
        else:
            out = self._resolver.node(host)
            if out is None and "." in host:     # FQDN: try the short host name
                out = self._resolver.node(host.split(".", 1)[0])
        self._nodes[host] = out
        return out

    def job(self, job: str) -> str | None:
        try:
            return self._jobs[job]
        except KeyError:
            pass
        out = (job or None) if self._resolver is None else self._resolver.job(job)
        self._jobs[job] = out
        return out

    def gpu(self, value: str, host: str | None = None) -> str | None:
        """A GPU named by UUID, canonical id (``node-001/gpu3``) or PCI bus id (with the host)."""
        key = (host, value)
        try:
            return self._gpus[key]
        except KeyError:
            pass
        out = self._gpu_uncached(value, host)
        self._gpus[key] = out
        return out

    def _gpu_uncached(self, value: str, host: str | None) -> str | None:
        m = _CANONICAL_GPU.match(value)
        r = self._resolver
        if r is None:
            return value if m else None
        if m:
            node = self.node(m.group("node")) or m.group("node")
            return r.gpu(host=node, index=int(m.group("index")))
        if normalise_pci(value) is not None:
            return self.gpu_by_pci(value, host)
        return r.gpu(uuid=value)

    def nic_by_pci(self, pci: str, host: str | None) -> str | None:
        """The NIC at a PCI address on a host, when the resolver offers the optional
        ``nic(host=, pci_bus_id=)`` lookup (else None: the event stays on the node)."""
        norm = normalise_pci(pci)
        lookup = getattr(self._resolver, "nic", None)
        if norm is None or host is None or not callable(lookup):
            return None
        try:
            out = lookup(host=self.node(host) or host, pci_bus_id=norm)
        except TypeError:                  # a resolver whose nic() has no pci_bus_id keyword
            return None
        return out if isinstance(out, str) else None

    def gpu_by_pci(self, pci: str, host: str | None) -> str | None:
        """The GPU at a PCI address on a host (the address as an Xid or AER line writes it)."""
        key = (host, pci)
        try:
            return self._pci[key]
        except KeyError:
            pass
        out: str | None = None
        norm = normalise_pci(pci)
        if self._resolver is not None and norm is not None:
            node = self.node(host) if host else None
            out = self._resolver.gpu(host=node or host, pci_bus_id=norm)
        self._pci[key] = out
        return out


def host_from_path(path: Path, resolver: Resolver) -> str | None:
    """The node a log file or its folder is named after (``node-012.dmesg.log``, ``node-012/kernel.log``)."""
    name = path.name.removesuffix(".gz")
    for cand in (name.split(".", 1)[0], name.rsplit(".", 1)[0], path.parent.name):
        if cand:
            try:
                node = resolver.node(cand)
            except Exception:  # a resolver that chokes on odd names: no default host
                node = None
            if node is not None:
                return node
    return None
