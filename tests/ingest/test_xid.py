"""The Xid / SXid catalogues: coverage of NVIDIA's rows, hand-checked entries, unknown codes."""

from __future__ import annotations

import csv
from importlib import resources

from suanli.ingest.xid import ACTIONS, SEVERITIES, sxid_info, xid_catalog, xid_info
from tests.conftest import shared_path


def test_every_published_xid_code_is_in_the_catalogue() -> None:
    with shared_path("realdata", "xid-catalog", "nvidia-xid-catalog.csv").open() as fh:
        codes = {int(r["Code"]) for r in csv.DictReader(fh)}
    assert codes and codes <= set(xid_catalog())


def test_hand_checked_entries() -> None:
    # NVIDIA catalogue: 79 fallen off the bus -> RESTART_BM (a reboot); 48 DBE -> its reset workflow;
    # 95 uncontained -> RESET_GPU; 13 graphics exception -> RESTART_APP (the user's application).
    # Severity per gpud's classification: 79/48/95 Fatal, 13 Warning.
    assert (xid_info(79).severity, xid_info(79).recommended_action) == ("fatal", "REBOOT_SYSTEM")
    assert (xid_info(48).severity, xid_info(48).recommended_action) == ("fatal", "RESET_GPU")
    assert (xid_info(95).severity, xid_info(95).recommended_action) == ("fatal", "RESET_GPU")
    assert (xid_info(13).severity, xid_info(13).recommended_action) == ("warning", "CHECK_USER_APP")
    assert xid_info(79).mnemonic == "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS"
    assert xid_info(119).meaning == "GSP RPC Timeout"
    assert xid_info(92).recommended_action == "NONE"            # high SBE rate: IGNORE


def test_unknown_codes_are_warnings_not_none() -> None:
    info = xid_info(99_999)
    assert info is not None and not info.known and info.severity == "warning"
    assert "99999" in info.meaning
    assert not sxid_info(1).known


def test_sxid_entries() -> None:
    # NVSwitch SXid 20034 "LTSSM Fault Up": gpud Fatal, RebootSystem;HardwareInspection
    info = sxid_info(20034)
    assert (info.mnemonic, info.severity, info.recommended_action) == ("LTSSM Fault Up", "fatal", "REBOOT_SYSTEM")
    assert sxid_info(11012).severity == "warning"                # single-bit ECC, auto-corrected


def test_package_data_has_only_our_columns_and_values() -> None:
    for name in ("xid_catalog.csv", "sxid_catalog.csv"):
        text = resources.files("suanli.ingest").joinpath("data", name).read_text()
        rows = list(csv.DictReader(line for line in text.splitlines() if not line.startswith("#")))
        assert list(rows[0]) == ["code", "mnemonic", "meaning", "severity", "recommended_action"]
        assert {r["severity"] for r in rows} <= set(SEVERITIES)
        assert {r["recommended_action"] for r in rows} <= set(ACTIONS)
