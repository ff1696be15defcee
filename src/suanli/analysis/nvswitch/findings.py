"""SXid records -> ``nvswitch_fault`` findings (pure functions over events).

What counts (NVIDIA Fabric Manager user guide, DU-09883-001, "NVSwitch SXid errors"): a fatal
SXid means the switch, and the NVLink traffic of every GPU of the node through it, is broken until
the switch and its GPUs are reset; a non-fatal SXid is corrected by the hardware, and only a run of
them (``repeat_min`` records in the window) says the switch or one of its links is going bad.
Severity is the record's own (``Fatal`` / ``Non-fatal``), else the SXid catalogue's.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from suanli.analysis.categories import policy
from suanli.analysis.findings import Finding, Symptom
from suanli.ingest.records import Event
from suanli.ingest.xid import sxid_info
from suanli.inventory import Inventory

__all__ = ["NVLINK_XIDS", "NvSwitchConfig", "nvswitch_findings"]

NVLINK_XIDS = frozenset({74, *range(144, 151)})
"""GPU Xids of NVLink errors (74; 144-150 on Blackwell): what a switch fault shows as on its GPUs."""


@dataclass(frozen=True)
class NvSwitchConfig:
    repeat_min: int = 5
    """Non-fatal SXid records on one switch in the window that make a finding (fewer: corrected
    noise, e.g. a link training at boot)."""
    max_evidence: int = 6
    """Evidence lines per finding at most (the rest are counted in the last line)."""


def _root(ev: Event, inventory: Inventory) -> tuple[str, str] | None:
    """The switch the record names, else its node (spec/diagnosis.md: the node when the switch is unknown)."""
    if ev.entity_kind == "nvswitch" and ev.entity_id:
        return "nvswitch", ev.entity_id
    node = ev.entity_id if ev.entity_kind == "node" else inventory.resolver.node(ev.host) if ev.host else None
    return ("node", node) if node else None


def _describe(root_id: str, ev: Event) -> str:
    info = sxid_info(ev.code or 0)
    where = f" link {ev.attrs['link']}" if "link" in ev.attrs else ""
    times = f" x{ev.count}" if ev.count > 1 else ""
    dev = f" ({ev.attrs['nvswitch']})" if ev.attrs.get("nvswitch") else ""
    return (f"{root_id}{dev} SXid {ev.code} ({info.mnemonic}, {ev.severity or info.severity}){where}{times} "
            f"[{ev.source}]")


def _symptoms(root: tuple[str, str], nvlink: Sequence[Event], inventory: Inventory) -> tuple[Symptom, ...]:
    node = root[1] if root[0] == "node" else inventory.nvswitches[root[1]].node
    return tuple(Symptom("gpu", e.entity_id, f"Xid {e.code}", e.ts) for e in nvlink
                 if e.entity_kind == "gpu" and e.entity_id and e.entity_id.split("/")[0] == node)


def nvswitch_findings(sxids: Sequence[Event], nvlink: Sequence[Event], inventory: Inventory,
                      config: NvSwitchConfig) -> tuple[list[Finding], dict[str, dict[str, float]]]:
    """One finding per switch with a fatal SXid or ``repeat_min`` non-fatal ones; per-entity counts."""
    by_root: dict[tuple[str, str], list[Event]] = defaultdict(list)
    for ev in sxids:
        root = _root(ev, inventory)
        if root is not None and ev.code is not None and math.isfinite(ev.ts):     # unplaced records: no onset
            by_root[root].append(ev)
    findings: list[Finding] = []
    counts: dict[str, dict[str, float]] = {}
    conf = policy("nvswitch_fault").confidence
    for root, evs in sorted(by_root.items()):
        evs.sort(key=lambda e: e.ts)
        fatal = [e for e in evs if (e.severity or sxid_info(e.code or 0).severity) == "fatal"]
        nonfatal = sum(e.count for e in evs) - sum(e.count for e in fatal)
        counts[root[1]] = {"sxid_fatal": float(sum(e.count for e in fatal)), "sxid_nonfatal": float(nonfatal)}
        if not fatal and nonfatal < config.repeat_min:
            continue
        shown = (fatal or evs)[: config.max_evidence]
        evidence = [_describe(root[1], e) for e in shown]
        if len(evs) > len(shown):
            evidence.append(f"{root[1]}: {len(evs)} SXid records in all ({len(fatal)} fatal)")
        onset = fatal[0].ts if fatal else evs[0].ts
        findings.append(Finding("nvswitch_fault", root[0], root[1], onset, None,
                                conf.strong if fatal else conf.weak, tuple(evidence), "nvswitch",
                                detected_at=onset, symptoms=_symptoms(root, nvlink, inventory),
                                extra={"codes": sorted({e.code for e in evs if e.code is not None})}))
    return findings, counts
