"""Spellings of the same identifier, made comparable: labels, PCI addresses, MACs and host names.

Exporters, logs and the inventory write one device in many ways (``00000000:3B:00.0``,
``0000:3b:00``, ``PCI:0000:3b:00``; ``B8-CE-F6-00-00-01``, ``b8ce.f600.0001``; ``node-001:9100``,
``http://Node-001.cluster.local:9400/``). Every place that compares such text goes through here.
"""

from __future__ import annotations

import functools
import re

__all__ = ["GPU_INDEX_LABEL", "HOST_LABELS", "PCI_IN_TEXT", "PCI_LABEL", "UUID_LABELS", "host_candidates",
           "mac_key", "normalise_pci", "pci_key", "strip_port"]

HOST_LABELS = ("Hostname", "hostname", "node", "host", "instance", "host_name")
"""Labels that name the host of a series, in the order they are tried (dcgm-exporter writes
``Hostname``; Prometheus adds ``instance`` as ``host:port``)."""
UUID_LABELS = ("UUID", "uuid")
"""Labels that carry a GPU's UUID."""
GPU_INDEX_LABEL = "gpu"
"""dcgm-exporter's label for the GPU index on its host."""
PCI_LABEL = "pci_bus_id"
"""The label of a PCI bus id (dcgm-exporter, ``suanli_pcie_aer_errors_total``)."""

PCI_IN_TEXT = r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?"
"""A regex (no groups) for a PCI address inside free text (kernel lines). The domain is required
there, so that times such as ``02:15`` are never taken for one."""

# [domain:]bus:device[.function], hex; the Xid form ``PCI:0000:3b:00`` has no function.
_PCI_RE = re.compile(
    r"^(?:pci:)?(?:(?P<dom>[0-9a-f]{1,8}):)?(?P<bus>[0-9a-f]{1,2}):(?P<dev>[0-9a-f]{1,2})(?:\.(?P<fn>[0-7]))?$"
)
_HEX = frozenset("0123456789abcdef")


@functools.lru_cache(maxsize=4096)
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


def normalise_pci(text: str) -> str | None:
    """The canonical spelling ``0000:3b:00.0`` of a PCI address (None if ``text`` is not one).

    Xid lines name the device without the function (``PCI:0000:3b:00``): function 0 is meant.
    """
    key = pci_key(text)
    if key is None:
        return None
    dom, bus, dev, fn = key
    return f"{dom & 0xFFFF:04x}:{bus:02x}:{dev:02x}.{fn or 0}"


def mac_key(text: str) -> str | None:
    """A MAC in any case with ``:``, ``-`` or ``.`` separators (or none) -> 12 lower-case hex digits."""
    digits = "".join(ch for ch in text.lower() if ch not in ":-. ")
    return digits if len(digits) == 12 and set(digits) <= _HEX else None


def strip_port(instance: str) -> str:
    """``node-001:9100`` -> ``node-001``, ``[::1]:9100`` -> ``::1``; text without a numeric port as is."""
    if instance.startswith("["):                       # [::1]:9100
        return instance[1:].split("]", 1)[0]
    host, sep, port = instance.rpartition(":")
    return host if sep and port.isdigit() else instance


def host_candidates(text: str) -> list[str]:
    """``http://Node-001.cluster.local:9400/`` -> [``node-001.cluster.local``, ``node-001``]: the
    lower-case host, then (for a domain name, not an IP address) its first label."""
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
