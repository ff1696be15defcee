"""NVIDIA's Xid (GPU) and SXid (NVSwitch) catalogues: meaning, severity, recommended action.

The tables are package data (``ingest/data/xid_catalog.csv``, ``sxid_catalog.csv``) in suanli's
own compact schema ``code,mnemonic,meaning,severity,recommended_action``, derived from NVIDIA's
published Xid Catalog and Fabric Manager guide (docs/logs.md says how). Severity is ``fatal``,
``warning`` or ``info``; actions are ``RESET_GPU``, ``REBOOT_SYSTEM``, ``CHECK_USER_APP``,
``HW_INSPECTION``, ``UPDATE_SWFW`` or ``NONE``. A code missing from the catalogue gets an
"unknown" entry with severity ``warning``, never None from :func:`xid_info`.
"""

from __future__ import annotations

import csv
import functools
import io
from dataclasses import dataclass
from importlib import resources

__all__ = ["ACTIONS", "SEVERITIES", "XidInfo", "sxid_info", "xid_catalog", "xid_info"]

SEVERITIES = ("fatal", "warning", "info")
ACTIONS = ("RESET_GPU", "REBOOT_SYSTEM", "CHECK_USER_APP", "HW_INSPECTION", "UPDATE_SWFW", "NONE")


@dataclass(frozen=True)
class XidInfo:
    """One catalogue row. ``known`` is False for a code the catalogue does not list."""

    code: int
    mnemonic: str
    meaning: str
    severity: str
    recommended_action: str
    known: bool = True


def _load(name: str) -> dict[int, XidInfo]:
    text = resources.files("suanli.ingest").joinpath("data", name).read_text(encoding="utf-8")
    rows = (line for line in io.StringIO(text) if not line.startswith("#"))
    out: dict[int, XidInfo] = {}
    for row in csv.DictReader(rows):
        out[int(row["code"])] = XidInfo(int(row["code"]), row["mnemonic"], row["meaning"], row["severity"],
                                        row["recommended_action"])
    return out


@functools.cache
def xid_catalog() -> dict[int, XidInfo]:
    """Every Xid the catalogue lists, by code."""
    return _load("xid_catalog.csv")


@functools.cache
def _sxid_catalog() -> dict[int, XidInfo]:
    return _load("sxid_catalog.csv")


def _unknown(code: int, what: str) -> XidInfo:
    return XidInfo(code, f"UNKNOWN_{what}", f"unknown {what} {code} (not in the catalogue)", "warning",
                   "HW_INSPECTION", known=False)


def xid_info(code: int) -> XidInfo:
    """Catalogue entry of an Xid code; an "unknown Xid" entry (severity warning) for unlisted codes."""
    return xid_catalog().get(code) or _unknown(code, "Xid")


def sxid_info(code: int) -> XidInfo:
    """Catalogue entry of an NVSwitch SXid code; an "unknown SXid" entry (severity warning) if unlisted."""
    return _sxid_catalog().get(code) or _unknown(code, "SXid")
