"""Reading one GPU's hardware signals out of the store: DCGM series, PCIe AER counters, Xid and AER
events, each attached to its GPU. The only module of the health analysis that talks to the store.

Series are attached by the GPU ingest resolved for them. An Xid or AER event ingest left on its
node is matched here by a GPU's PCI address in its message (a root port's AER report can name
the device below it; ingest keeps such a report on the node).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from suanli.analysis.health import detect as hd
from suanli.analysis.health import events as hw
from suanli.analysis.window import Window
from suanli.ingest.records import Event, SeriesKey
from suanli.inventory.model import Gpu, Job
from suanli.store.api import Store

__all__ = ["GAUGES", "InventoryLike", "collect"]

_GPU_METRICS = (hw.SBE, hw.DBE, hw.REMAP_CORR, hw.REMAP_UNCORR, hw.REMAP_FAIL, hw.XID_ERRORS,
                hw.PCIE_REPLAY, hw.NVLINK_BW, hw.THROTTLE, hw.GPU_TEMP, hw.MEMORY_TEMP, hw.SM_CLOCK,
                hw.POWER, hw.GPU_UTIL)
GAUGES = (hw.GPU_TEMP, hw.POWER, hw.SM_CLOCK, hw.GPU_UTIL, hw.MEMORY_TEMP)
_PCI = re.compile(r"(?:[0-9a-f]{4,8}:)?([0-9a-f]{2}:[0-9a-f]{2})(?:\.[0-7])?", re.IGNORECASE)


class InventoryLike(Protocol):
    @property
    def gpus(self) -> Mapping[str, Gpu]: ...
    @property
    def jobs(self) -> Mapping[str, Job]: ...


def _gpu_of_key(key: SeriesKey) -> str | None:
    """The GPU ingest resolved the series to, if any."""
    return key.entity_id if key.entity_kind == "gpu" and key.entity_id else None


def _merge(pairs: list[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]]) -> hd.Pair:
    if len(pairs) == 1:                 # the usual case: one series, in time order as the store reads it
        ts = np.asarray(pairs[0][0], dtype=np.float64)
        if not (ts[1:] < ts[:-1]).any() and not np.isnan(ts).any():
            return ts, hw.clean(pairs[0][1])
    ts = np.concatenate([p[0] for p in pairs]).astype(np.float64)
    v = np.concatenate([p[1] for p in pairs]).astype(np.float64)
    order = np.argsort(ts, kind="stable")
    return ts[order], hw.clean(v[order])


def collect(store: Store, inventory: InventoryLike, window: Window) -> dict[str, hd.GpuData]:
    """Each GPU's DCGM series, PCIe AER counters and Xid / AER events in the window."""
    start, end = window
    by_pci: dict[tuple[str, str], str] = {}
    for g in inventory.gpus.values():
        m = _PCI.search(g.pci_bus_id or "")
        if m:
            by_pci[(g.node, m.group(1).lower())] = g.id
    data = {g.id: hd.GpuData(g.id, g.node) for g in inventory.gpus.values()}
    raw: dict[tuple[str, str], list[tuple[Any, Any]]] = {}
    for metric in (*_GPU_METRICS, hw.CLOCKS_EVENT, hw.PCIE_AER):
        for s in store.series(metric, start=start, end=end):
            gid = _gpu_of_key(s.key)
            if gid is None or gid not in data:
                continue
            sub = hw.THROTTLE if metric == hw.CLOCKS_EVENT else metric
            sub = sub if metric != hw.PCIE_AER else f"aer:{s.key.label('severity') or 'unknown'}"
            raw.setdefault((gid, sub), []).append((s.ts, s.values))
    for (gid, sub), pairs in raw.items():
        target = data[gid].aer if sub.startswith("aer:") else data[gid].series
        target[sub.removeprefix("aer:")] = _merge(pairs)
    for ev in store.events(kinds=["xid", "aer"], start=start, end=end):
        gid = _gpu_of_event(ev, by_pci)
        if gid in data:
            data[gid].events.append(hw.hw_event(ev, gid))
    per_code: dict[str, list[hw.HwEvent]] = {}
    for metric in (hw.XID_COUNT, hw.XID_ACTIVE):
        for s in store.series(metric, start=start, end=end):
            gid = _gpu_of_key(s.key)
            if gid in data:
                per_code.setdefault(gid, []).extend(hw.dcgm_xid_events(metric, s.key.label, gid, s.ts, s.values))
    for d in data.values():         # the kernel's Xid lines are the fuller record; else dcgm-exporter's
        if not any(e.kind == "xid" for e in d.events):
            d.events.extend(per_code.get(d.gpu_id) or _last_code_xids(d))
    return data


def _last_code_xids(d: hd.GpuData) -> list[hw.HwEvent]:
    if hw.XID_ERRORS not in d.series:
        return []
    return hw.dcgm_xid_events(hw.XID_ERRORS, lambda _: None, d.gpu_id, *d.series[hw.XID_ERRORS])


def _gpu_of_event(ev: Event, by_pci: Mapping[tuple[str, str], str]) -> str | None:
    if ev.entity_kind == "gpu":
        return ev.entity_id
    host = ev.host or (ev.entity_id if ev.entity_kind == "node" else None) or ""
    for m in _PCI.finditer(ev.message):
        gid = by_pci.get((host, m.group(1).lower()))
        if gid:
            return gid
    return None
