"""Load and validate inventory.yaml (spec/inventory.md) into an :class:`Inventory`.

Every problem a user can cause is one :class:`~suanli.errors.InputError` naming the file, the line
and the key path: ``inventory.yaml:7: racks[0].nodes[0].gpus[3].uuid: missing``. Unknown keys are
kept (``Inventory.extra``, ``Job.extra``) and otherwise ignored.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml

from suanli.errors import InputError
from suanli.inventory._fields import KeyPath, Reader
from suanli.inventory._jobs import parse_jobs
from suanli.inventory.catalog import Inventory
from suanli.inventory.gpus import PRECISION_KEYS, merge_spec
from suanli.inventory.model import (
    Gpu,
    GpuModelSpec,
    Link,
    Nic,
    Node,
    NvSwitch,
    Rack,
    Storage,
    Switch,
    gpu_id,
    nic_id,
    nvswitch_id,
)
from suanli.inventory.normalize import mac_key, pci_key

__all__ = ["load_inventory", "parse_inventory"]

_SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TOP_KEYS = {"cluster", "currency", "timezone", "gpu_models", "racks", "switches", "links", "storage", "jobs"}


def load_inventory(path: str | Path) -> Inventory:
    """Read and validate an inventory file; InputError names the file when it cannot be read."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such file", file=str(p)) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected inventory.yaml", file=str(p)) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason})", file=str(p)) from None
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", file=str(p)) from None
    return parse_inventory(text, source=str(p))


def parse_inventory(text: str, source: str = "inventory.yaml") -> Inventory:
    """Parse inventory YAML text; ``source`` names the file in error messages."""
    if not text.strip():
        raise InputError("empty file: expected a mapping with cluster, racks, switches, jobs", file=source)
    try:
        doc = yaml.load(text, Loader=_SAFE_LOADER)  # libyaml when present: same safe semantics, ~10x faster
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or "invalid syntax"
        line = mark.line + 1 if mark is not None else None
        raise InputError(f"not valid YAML: {problem}", file=source, line=line) from None
    except ValueError as exc:                   # an integer past Python's 4,300-digit limit
        long = re.search(r"\d{4301,}", text)
        line = text.count("\n", 0, long.start()) + 1 if long else None
        raise InputError(f"a number suanli cannot read ({str(exc).split(';')[0]})", file=source, line=line) from None
    rd = Reader(text, source)
    if not isinstance(doc, Mapping):
        rd.fail((), "expected a YAML mapping with cluster, racks, switches, jobs at the top")
    cluster = rd.req_text(doc, "cluster", ())
    currency = rd.text_of(doc, "currency", ()) or "USD"
    timezone = _timezone(rd, doc)
    gpu_models = _gpu_models(rd, doc)
    switches = _switches(rd, doc)
    storage = _storage(rd, doc)
    racks = _racks(rd, doc, switches)
    _check_switch_racks(rd, switches, {r.id for r in racks})
    links = _links(rd, doc, switches, {c.switch_port: c.id for r in racks for n in r.nodes for c in n.nics
                                       if c.switch_port})
    switches = _infer_tiers(switches, racks)
    nodes_gpus = {g.id: g for r in racks for n in r.nodes for g in n.gpus}
    uuids = {g.uuid.lower(): g.id for g in nodes_gpus.values() if g.uuid}
    uuids.update({gid.lower(): gid for gid in nodes_gpus})      # rank gpus: any case of the canonical id
    jobs = parse_jobs(rd, doc, set(nodes_gpus), uuids, set(storage))
    extra = {k: v for k, v in doc.items() if k not in _TOP_KEYS}
    return Inventory(cluster=cluster, currency=currency, gpu_models=gpu_models, racks=racks,
                     switches=switches, links=links, storage=storage, jobs=jobs, source=source,
                     extra=extra, timezone=timezone)


def _timezone(rd: Reader, doc: Mapping[str, Any]) -> str | None:
    """The optional IANA zone of log lines written in local time (spec/inventory.md)."""
    name = rd.text_of(doc, "timezone", ())
    if name is None:
        return None
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        rd.fail(("timezone",), f"unknown IANA time zone {name!r} (e.g. UTC, Asia/Shanghai)")
    return name


def _gpu_models(rd: Reader, doc: Mapping[str, Any]) -> dict[str, GpuModelSpec]:
    raw = doc.get("gpu_models")
    if raw is None:
        return {}
    out: dict[str, GpuModelSpec] = {}
    for name, body in rd.mapping(raw, ("gpu_models",)).items():
        path: KeyPath = ("gpu_models", str(name))
        obj = rd.mapping(body if body is not None else {}, path)
        tflops: dict[str, float] = {}
        for key, precision in PRECISION_KEYS.items():
            value = rd.number(obj, key, path)
            if value is not None:
                tflops[precision] = value
        raw_tflops = obj.get("tflops")
        if raw_tflops is not None:
            for prec in rd.mapping(raw_tflops, (*path, "tflops")):
                value = rd.number(raw_tflops, prec, (*path, "tflops"))
                if value is not None:
                    tflops[str(prec).lower()] = value
        out[str(name)] = merge_spec(str(name), tflops, rd.number(obj, "tdp_w", path),
                                    rd.number(obj, "gpu_hour_price", path))
    return out


def _with_ids(rd: Reader, doc: Mapping[str, Any], key: str,
              what: str) -> Iterator[tuple[KeyPath, Mapping[str, Any], str]]:
    """(path, mapping, id) of each entry of the list ``key``; a repeated id fails."""
    seen: set[str] = set()
    for i, raw in enumerate(rd.seq(doc, key, ())):
        path: KeyPath = (key, i)
        obj = rd.mapping(raw, path)
        eid = rd.req_text(obj, "id", path)
        if eid in seen:
            rd.fail((*path, "id"), f"duplicate {what} id {eid!r}")
        seen.add(eid)
        yield path, obj, eid


def _switches(rd: Reader, doc: Mapping[str, Any]) -> dict[str, Switch]:
    out: dict[str, Switch] = {}
    for path, obj, sid in _with_ids(rd, doc, "switches", "switch"):
        if "/" in sid:
            rd.fail((*path, "id"), f"a switch id may not contain '/': {sid!r}")
        tier = (rd.text_of(obj, "tier", path) or "").lower()
        out[sid] = Switch(id=sid, tier=tier, rack=rd.text_of(obj, "rack", path))
    return out


def _check_switch_racks(rd: Reader, switches: dict[str, Switch], rack_ids: set[str]) -> None:
    for i, sw in enumerate(switches.values()):
        if sw.rack is not None and sw.rack not in rack_ids:
            rd.fail(("switches", i, "rack"), f"unknown rack {sw.rack!r}")


def _infer_tiers(switches: dict[str, Switch], racks: tuple[Rack, ...]) -> dict[str, Switch]:
    """A switch without ``tier``: ``leaf`` when a NIC is cabled to it, else ``spine``."""
    with_nics = {c.switch_port.partition("/")[0] for r in racks for n in r.nodes for c in n.nics
                 if c.switch_port}
    return {sid: sw if sw.tier else Switch(id=sid, tier="leaf" if sid in with_nics else "spine", rack=sw.rack)
            for sid, sw in switches.items()}


def _storage(rd: Reader, doc: Mapping[str, Any]) -> dict[str, Storage]:
    return {sid: Storage(id=sid, kind=rd.text_of(obj, "kind", path))
            for path, obj, sid in _with_ids(rd, doc, "storage", "storage")}


def _port_ref(rd: Reader, value: str, path: KeyPath, switches: dict[str, Switch]) -> str:
    switch, sep, port = value.partition("/")
    if not sep or not switch or not port:
        rd.fail(path, f"expected switch/port like leaf-01/p1, got {value!r}")
    if switch not in switches:
        rd.fail(path, f"unknown switch {switch!r}")
    return value


def _racks(rd: Reader, doc: Mapping[str, Any], switches: dict[str, Switch]) -> tuple[Rack, ...]:
    racks: list[Rack] = []
    seen: dict[str, set[str]] = {"node": set(), "uuid": set(), "mac": set(), "port": set()}
    for path, obj, rid in _with_ids(rd, doc, "racks", "rack"):
        nodes = tuple(_node(rd, n, (*path, "nodes", j), rid, switches, seen)
                      for j, n in enumerate(rd.seq(obj, "nodes", path)))
        racks.append(Rack(id=rid, pdu=rd.text_of(obj, "pdu", path), nodes=nodes))
    return tuple(racks)


def _node(rd: Reader, raw: Any, path: KeyPath, rack: str, switches: dict[str, Switch],
          seen: dict[str, set[str]]) -> Node:
    obj = rd.mapping(raw, path)
    nid = rd.req_text(obj, "id", path)
    if nid.lower() in seen["node"]:
        rd.fail((*path, "id"), f"duplicate node id {nid!r}")
    if "/" in nid:
        rd.fail((*path, "id"), f"a node id may not contain '/': {nid!r}")
    seen["node"].add(nid.lower())
    gpus = _gpus(rd, obj, path, nid, seen)
    nics: list[Nic] = []
    names: set[str] = set()
    for k, rawn in enumerate(rd.seq(obj, "nics", path)):
        npath: KeyPath = (*path, "nics", k)
        nobj = rd.mapping(rawn, npath)
        name = rd.req_text(nobj, "name", npath)
        if name in names:
            rd.fail((*npath, "name"), f"duplicate nic name {name!r} on {nid}")
        names.add(name)
        mac = rd.text_of(nobj, "mac", npath)
        if mac is not None:
            _unique(rd, seen["mac"], mac_key(mac) or mac.strip().lower(), (*npath, "mac"), "mac")
        port = rd.text_of(nobj, "switch_port", npath)
        if port is not None:
            _port_ref(rd, port, (*npath, "switch_port"), switches)
            _unique(rd, seen["port"], port, (*npath, "switch_port"), "switch_port (two cables on one port)")
        gidx = rd.integer(nobj, "gpu", npath, minimum=0)
        nics.append(Nic(id=nic_id(nid, name), node=nid, name=name, mac=mac, gpu=gidx, switch_port=port,
                        pci_bus_id=rd.text_of(nobj, "pci_bus_id", npath)))
    return Node(id=nid, rack=rack, gpus=gpus, nics=tuple(nics), nvswitches=_nvswitches(rd, obj, path, nid))


def _nvswitches(rd: Reader, obj: Mapping[str, Any], path: KeyPath, nid: str) -> tuple[NvSwitch, ...]:
    """The node's optional ``nvswitches`` list: an index each (``nvidia-nvswitchN``), a PCI bus id
    where known; both unique on the node."""
    out: list[NvSwitch] = []
    indexes: set[int] = set()
    addresses: set[str] = set()
    for k, raw in enumerate(rd.seq(obj, "nvswitches", path)):
        spath: KeyPath = (*path, "nvswitches", k)
        sobj = rd.mapping(raw, spath)
        index = rd.integer(sobj, "index", spath, required=True, minimum=0)
        assert index is not None
        if index in indexes:
            rd.fail((*spath, "index"), f"duplicate nvswitch index {index} on {nid}")
        indexes.add(index)
        pci = rd.text_of(sobj, "pci_bus_id", spath)
        if pci is not None:
            key = pci_key(pci)
            if key is None:
                rd.fail((*spath, "pci_bus_id"), f"not a PCI bus id: {pci!r}")
            _unique(rd, addresses, str(key), (*spath, "pci_bus_id"), "nvswitch pci_bus_id")
        out.append(NvSwitch(id=nvswitch_id(nid, index), node=nid, index=index, pci_bus_id=pci))
    return tuple(out)


def _gpus(rd: Reader, obj: Mapping[str, Any], path: KeyPath, nid: str,
          seen: dict[str, set[str]]) -> tuple[Gpu, ...]:
    out: list[Gpu] = []
    indexes: set[int] = set()
    for k, raw in enumerate(rd.seq(obj, "gpus", path)):
        gpath: KeyPath = (*path, "gpus", k)
        gobj = rd.mapping(raw, gpath)
        index = rd.integer(gobj, "index", gpath, required=True, minimum=0)
        assert index is not None
        if index in indexes:
            rd.fail((*gpath, "index"), f"duplicate gpu index {index} on {nid}")
        indexes.add(index)
        uuid = rd.req_text(gobj, "uuid", gpath)
        _unique(rd, seen["uuid"], uuid.lower(), (*gpath, "uuid"), "gpu uuid")
        pdu_port = gobj.get("pdu_port")
        out.append(Gpu(id=gpu_id(nid, index), node=nid, index=index, uuid=uuid,
                       pci_bus_id=rd.text_of(gobj, "pci_bus_id", gpath), model=rd.text_of(gobj, "model", gpath),
                       pdu_port=pdu_port if isinstance(pdu_port, int | str) else None))
    return tuple(out)


def _links(rd: Reader, doc: Mapping[str, Any], switches: dict[str, Switch],
           nic_ports: dict[str, str]) -> tuple[Link, ...]:
    out: list[Link] = []
    used: set[str] = set()
    for i, raw in enumerate(rd.seq(doc, "links", ())):
        path: KeyPath = ("links", i)
        obj = rd.mapping(raw, path)
        a = _port_ref(rd, rd.req_text(obj, "a", path), (*path, "a"), switches)
        b = _port_ref(rd, rd.req_text(obj, "b", path), (*path, "b"), switches)
        if a == b:
            rd.fail((*path, "b"), f"a link cannot join a port to itself ({a})")
        for key, end in (("a", a), ("b", b)):
            if end in nic_ports:
                rd.fail((*path, key), f"port {end} is already cabled to nic {nic_ports[end]}")
            _unique(rd, used, end, (*path, key), "link end (two cables on one port)")
        out.append(Link(a=a, b=b))
    return tuple(out)


def _unique(rd: Reader, seen: set[str], value: str, path: KeyPath, what: str) -> None:
    if value in seen:
        rd.fail(path, f"duplicate {what} {value!r}")
    seen.add(value)

