"""The NVSwitch unit: ``nvswitch_fault`` findings over a window."""

from __future__ import annotations

from dataclasses import dataclass, field

from suanli.analysis.findings import Finding
from suanli.analysis.nvswitch.findings import NVLINK_XIDS, NvSwitchConfig, nvswitch_findings
from suanli.analysis.result import EntityValues
from suanli.analysis.window import Window, resolve_window
from suanli.inventory import Inventory
from suanli.store.api import Store

__all__ = ["NvSwitchResult", "analyze"]


@dataclass
class NvSwitchResult:
    findings: list[Finding] = field(default_factory=list)
    sxid_counts: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per switch (or node): ``sxid_fatal`` and ``sxid_nonfatal`` records in the window."""

    def values(self) -> EntityValues:
        """``sxid_fatal`` / ``sxid_nonfatal`` per entity, for the rules' ``analysis`` conditions."""
        return {k: dict(v) for k, v in self.sxid_counts.items()}


def analyze(store: Store, inventory: Inventory, window: Window | None = None,
            config: NvSwitchConfig | None = None) -> NvSwitchResult:
    """NVSwitch findings from the SXid records in ``window`` (None: the data's extent), with the
    NVLink Xids of the GPUs behind each switch as its symptoms."""
    cfg = config if config is not None else NvSwitchConfig()
    win = resolve_window(store, window)
    if win is None:
        return NvSwitchResult()
    sxids = store.events(kinds=["sxid"], start=win.start, end=win.end)
    if not sxids:
        return NvSwitchResult()
    nvlink = [e for e in store.events(kinds=["xid"], start=win.start, end=win.end) if e.code in NVLINK_XIDS]
    findings, counts = nvswitch_findings(sxids, nvlink, inventory, cfg)
    return NvSwitchResult(findings, counts)
