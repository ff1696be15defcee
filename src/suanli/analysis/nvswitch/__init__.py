"""NVSwitch faults from SXid records (spec/diagnosis.md ``nvswitch_fault``): a fatal SXid, or a
non-fatal one that keeps repeating, names the switch chip (``node-001/nvswitch2``), or the node
when the inventory does not list the node's switches."""

from suanli.analysis.nvswitch.adapter import NvSwitchResult, analyze
from suanli.analysis.nvswitch.findings import NvSwitchConfig, nvswitch_findings

__all__ = ["NvSwitchConfig", "NvSwitchResult", "analyze", "nvswitch_findings"]
