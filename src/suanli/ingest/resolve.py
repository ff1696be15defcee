"""Exporter labels -> canonical entity ids (spec/telemetry.md, spec/inventory.md "Canonical entity ids").

``series_key(metric, labels, resolver)`` is called once per distinct label set (the parsers cache
it), so it may be thorough. It never raises: a series it cannot map gets ``entity_kind=None`` and
is kept (the loader counts it; ``suanli check`` lists it).

Mapping (first rule that applies):

========================================  ===============================  ===========
metric / labels                           entity                           kind
========================================  ===============================  ===========
``DCGM_*``: ``UUID``; (host, ``gpu``);    the GPU                          gpu
(host, ``pci_bus_id``)
``node_infiniband_*``: host + ``device``  the NIC                          nic
``suanli_switch_port_*``: ``switch`` +    the switch port                  switch_port
``port``
``suanli_port_pre_fec_ber``               switch side -> switch_port,      switch_port /
                                          NIC side (``node``, ``nic``)     nic
``suanli_rdma_retransmits_total``         (``node``, ``nic``)              nic
``suanli_pcie_aer_errors_total``          (``node``, ``pci_bus_id``): the  gpu / node
                                          GPU when the bus id is a GPU's,
                                          else the node (upstream port)
``suanli_link_latency_seconds``           ``src`` node, ``peer_id`` =      node
                                          ``dst`` node
``suanli_storage_read_latency_seconds``   ``storage``                      storage
``suanli_sla_latency_seconds``            ``sla_id``                       sla
anything else with a host label           the node                         node
========================================  ===============================  ===========

The host comes from ``Hostname`` / ``hostname`` (dcgm-exporter), ``node``, ``host``, or the host
part of ``instance`` (``node-001:9100`` -> ``node-001``; a fully qualified name is also tried by
its first label).

DCGM blank sentinels (``DcgmBlank``) are "no data" markers that dcgm-exporter prints as numbers;
:func:`dcgm_blank_to_nan` turns them into NaN for ``DCGM_*`` metrics only (a byte counter of
another exporter may legitimately exceed 2**47).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from suanli.ingest.records import SeriesKey

__all__ = ["DCGM_BLANK", "DcgmBlank", "InventoryLookups", "LabelError", "ResolverLike", "dcgm_blank_to_nan",
           "host_of", "is_dcgm_blank", "parse_labels", "series_key"]


class ResolverLike(Protocol):
    """The part of ``suanli.inventory.Resolver`` this module uses (docs/architecture.md)."""

    def node(self, host: str, /) -> str | None: ...

    def gpu(self, *, uuid: str | None = None, host: str | None = None, index: int | None = None,
            pci_bus_id: str | None = None) -> str | None: ...

    def nic(self, *, host: str | None = None, device: str | None = None,
            mac: str | None = None) -> str | None: ...

    def port(self, switch: str, port: str) -> str | None: ...


@dataclass(frozen=True)
class DcgmBlank:
    """DCGM's "no reading" sentinels (dcgm_structs.h DCGM_INT32_BLANK / DCGM_INT64_BLANK / DCGM_FP64_BLANK)."""

    int32_min: float = float(0x7FFFFFF0)
    """Smallest 32-bit sentinel (DCGM_INT32_BLANK = 0x7ffffff0; NOT_FOUND, NOT_SUPPORTED, ... follow)."""
    int32_max: float = float(0x7FFFFFFF)
    """Largest 32-bit sentinel (INT32_MAX)."""
    float_min: float = 140737488355328.0
    """DCGM_FP64_BLANK = 2**47; every float >= this is a sentinel. The 64-bit integer sentinels
    (from 0x7ffffffffffffff0) are above it too."""


DCGM_BLANK = DcgmBlank()


class InventoryLookups:
    """``inventory.resolver`` plus storage and SLA ids (which the Resolver has no lookup for)."""

    def __init__(self, inventory: Any) -> None:
        self._r = inventory.resolver
        self._storage = set(getattr(inventory, "storage", {}) or {})
        self._slas = set(getattr(inventory, "slas", set()) or set())
        self._slas |= {j.sla_id for j in (getattr(inventory, "jobs", {}) or {}).values()
                       if getattr(j, "sla_id", None)}

    def node(self, host: str, /) -> str | None:
        return self._r.node(host)  # type: ignore[no-any-return]

    def gpu(self, *, uuid: str | None = None, host: str | None = None, index: int | None = None,
            pci_bus_id: str | None = None) -> str | None:
        return self._r.gpu(uuid=uuid, host=host, index=index, pci_bus_id=pci_bus_id)  # type: ignore[no-any-return]

    def nic(self, *, host: str | None = None, device: str | None = None,
            mac: str | None = None) -> str | None:
        return self._r.nic(host=host, device=device, mac=mac)  # type: ignore[no-any-return]

    def port(self, switch: str, port: str) -> str | None:
        return self._r.port(switch, port)  # type: ignore[no-any-return]

    def storage(self, name: str) -> str | None:
        return name if name in self._storage else None

    def sla(self, name: str) -> str | None:
        return name if name in self._slas else None

_HOST_LABELS = ("Hostname", "hostname", "node", "host", "instance", "host_name")


def is_dcgm_blank(value: float, blank: DcgmBlank = DCGM_BLANK) -> bool:
    """True for a DCGM sentinel value (NaN and -Inf are not sentinels)."""
    return value >= blank.float_min or blank.int32_min <= value <= blank.int32_max


def dcgm_blank_to_nan(values: npt.NDArray[np.float64], blank: DcgmBlank = DCGM_BLANK) -> None:
    """Replace DCGM sentinels by NaN, in place."""
    with np.errstate(invalid="ignore"):
        mask = (values >= blank.float_min) | ((values >= blank.int32_min) & (values <= blank.int32_max))
    values[mask] = math.nan


def host_of(labels: Mapping[str, str], resolver: ResolverLike | None) -> tuple[str | None, str | None]:
    """(raw host text, canonical node id or None) from the host-like labels."""
    raw: str | None = None
    for name in _HOST_LABELS:
        text = labels.get(name)
        if not text:
            continue
        if name == "instance":
            text = _strip_port(text)
        raw = raw or text
        if resolver is None:
            continue
        node = resolver.node(text) or ("." in text and resolver.node(text.split(".", 1)[0])) or None
        if node:
            return text, node
    return raw, None


def _strip_port(instance: str) -> str:
    if instance.startswith("["):                       # [::1]:9100
        return instance[1:].split("]", 1)[0]
    host, sep, port = instance.rpartition(":")
    return host if sep and port.isdigit() else instance


def _int_or_none(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None


def _lookup_named(resolver: Any, kind: str, name: str | None) -> str | None:
    """storage / sla ids: through ``resolver.<kind>()`` or ``resolver.kind_of()`` when the resolver
    has them; a resolver with neither accepts the name as the id."""
    if not name:
        return None
    fn = getattr(resolver, kind, None)
    if callable(fn):
        out = fn(name)
        return out if isinstance(out, str) else None
    kind_of = getattr(resolver, "kind_of", None)
    if callable(kind_of):
        return name if kind_of(name) == kind else None
    return name


def _gpu(labels: Mapping[str, str], resolver: ResolverLike, host: str | None) -> str | None:
    uuid = labels.get("UUID") or labels.get("uuid")
    if uuid and (found := resolver.gpu(uuid=uuid)):
        return found
    if host is None:
        return None
    index = _int_or_none(labels.get("gpu"))
    if index is not None and (found := resolver.gpu(host=host, index=index)):
        return found
    bus = labels.get("pci_bus_id")
    return resolver.gpu(host=host, pci_bus_id=bus) if bus else None


Resolved = tuple[str | None, str | None, str | None]          # kind, id, peer


def _resolve(metric: str, labels: Mapping[str, str], resolver: ResolverLike) -> Resolved:
    _, node = host_of(labels, resolver)
    if metric.startswith("DCGM_"):
        gpu = _gpu(labels, resolver, node)
        if gpu:
            return "gpu", gpu, None
        has_gpu_ids = any(k in labels for k in ("UUID", "uuid", "gpu", "pci_bus_id"))
        return ("node", node, None) if node and not has_gpu_ids else (None, None, None)
    if metric.startswith("node_infiniband_"):
        device = labels.get("device")
        nic = resolver.nic(host=node, device=device) if node and device else None
        return ("nic", nic, None) if nic else (None, None, None)
    switch, port = labels.get("switch"), labels.get("port")
    if metric.startswith("suanli_") and switch and port:
        found = resolver.port(switch, port)
        return ("switch_port", found, None) if found else (None, None, None)
    if metric in ("suanli_port_pre_fec_ber", "suanli_rdma_retransmits_total") or "nic" in labels:
        nic_name = labels.get("nic") or labels.get("device")
        nic = resolver.nic(host=node, device=nic_name) if node and nic_name else None
        return ("nic", nic, None) if nic else (None, None, None)
    if metric.startswith("suanli_pcie_aer_errors"):
        bus = labels.get("pci_bus_id")
        gpu = resolver.gpu(host=node, pci_bus_id=bus) if node and bus else None
        if gpu:
            return "gpu", gpu, None
        return ("node", node, None) if node else (None, None, None)
    if "src" in labels and "dst" in labels:
        src, dst = resolver.node(labels["src"]), resolver.node(labels["dst"])
        return ("node", src, dst) if src else (None, None, None)
    if "storage" in labels:
        found = _lookup_named(resolver, "storage", labels["storage"])
        return ("storage", found, None) if found else (None, None, None)
    if "sla_id" in labels:
        found = _lookup_named(resolver, "sla", labels["sla_id"])
        return ("sla", found, None) if found else (None, None, None)
    return ("node", node, None) if node else (None, None, None)


def series_key(metric: str, labels: Mapping[str, str], resolver: ResolverLike | None) -> SeriesKey:
    """The canonical key of one series; ``resolver=None`` (no inventory) leaves it unresolved."""
    pairs = tuple(sorted(labels.items()))
    if resolver is None:
        return SeriesKey(metric, pairs, None, None, None)
    try:
        kind, entity, peer = _resolve(metric, labels, resolver)
    except (TypeError, ValueError, KeyError, AttributeError):   # a resolver that chokes on odd text
        kind, entity, peer = None, None, None
    if entity is None:
        kind = None
    return SeriesKey(metric, pairs, kind, entity, peer)


# -- label-set text (``{a="x",b="y"}``), shared by the metrics parsers --------------------------------

_LABEL_RE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}


class LabelError(ValueError):
    """A label set that does not parse (the message says why)."""


_PAIR = re.compile(r'[ \t]*([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"((?:[^"\\]|\\.)*)"[ \t]*(,?)')
_UNESCAPE = re.compile(r"\\(.)")


def parse_labels(text: str, start: int = 0) -> tuple[dict[str, str], int]:
    """Parse ``{a="x",b="y\\n"}`` starting at ``text[start] == "{"``; returns labels and the index
    after ``}``. Escapes ``\\\\``, ``\\"``, ``\\n``; spaces around names and commas and a trailing
    comma are tolerated. Raises :class:`LabelError`."""
    labels: dict[str, str] = {}
    i = start + 1
    while True:
        m = _PAIR.match(text, i)
        if m is None:
            break
        name, value = m.group(1), m.group(2)
        if "\\" in value:
            value = _unescape(value)
        if name in labels:
            raise LabelError(f"duplicate label {name!r}")
        labels[name] = value
        i = m.end()
        if not m.group(3):
            break
    while i < len(text) and text[i] in " \t":
        i += 1
    if i < len(text) and text[i] == "}":
        return labels, i + 1
    raise LabelError(_why(text, i))


def _unescape(value: str) -> str:
    def one(m: re.Match[str]) -> str:
        if m.group(1) not in _ESCAPES:
            raise LabelError("bad escape in label value")
        return _ESCAPES[m.group(1)]
    return _UNESCAPE.sub(one, value)


def _why(text: str, i: int) -> str:
    """What is wrong at ``text[i]``, where the label pattern stopped matching."""
    eq = text.find("=", i)
    if eq < 0:
        return "label set not closed" if not text[i:].strip() else "label without '='"
    name = text[i:eq].strip().lstrip(",").strip()
    if not _LABEL_RE.match(name):
        return f"bad label name {name[:40]!r}"
    if not text[eq + 1:].lstrip(" \t").startswith('"'):
        return f"label {name!r}: value not quoted"
    if _PAIR.match(text, i) is None:
        return f"label {name!r}: unterminated value"
    return "expected ',' or '}' after a label"
