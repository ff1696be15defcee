"""Xid parsing and the Xid -> category table (issue 20), checked against NVIDIA's catalogue as
gpud extracted it (``../shared/realdata/xid-catalog/nvidia-xid-catalog.csv``)."""

from __future__ import annotations

import csv
import re

import pytest

from suanli.analysis.health.events import xid_category
from suanli.ingest.log_classify import classify
from tests.conftest import shared_path

MEM_FAIL, MEM_DEG, LOST, NVLINK = "gpu_memory_failure", "gpu_memory_degradation", "gpu_lost", "nvlink_degradation"

#: Every hardware Xid of the catalogue, its category, and the catalogue's own words that put it
#: there (the mnemonic / description must say so: checked below, so the table cannot drift from
#: the catalogue). All other catalogue codes are application, driver or informational: None.
EXPECTED: dict[int, tuple[str, str]] = {
    48: (MEM_FAIL, "Double Bit ECC Error"),
    63: (MEM_FAIL, "GPU memory remapping event"),      # a row was remapped: a failed row
    64: (MEM_FAIL, "GPU memory remapping failure"),    # no spare row left
    94: (MEM_FAIL, "Contained memory error"),
    95: (MEM_FAIL, "Uncontained memory error"),
    140: (MEM_FAIL, "ECC Unrecovered Error"),          # gpud: Fatal, RebootSystem;HardwareInspection
    92: (MEM_DEG, "High single-bit ECC error rate"),   # correctable: degradation, not failure
    79: (LOST, "GPU has fallen off the bus"),
    119: (LOST, "GSP RPC Timeout"),
    120: (LOST, "GSP Error"),
    74: (NVLINK, "NVLINK Error"),
    **{c: (NVLINK, "NVLINK: ") for c in range(144, 151)},   # SAW, RLW, TLW, TREX, NVLPW_CTRL, NETIR, MSE
}
#: Catalogue codes that name hardware but get no category of their own, and why.
NO_CATEGORY_WHY: dict[int, str] = {
    171: "Additional to Xid 48",      # detail of a DBE already reported as Xid 48: not a second fault
    172: "Additional to Xid 48",
    31: "GPU memory page fault",      # an application's bad pointer (RESTART_APP), not the DRAM
    58: "Unused",                     # FB_MEMORY_ERROR: unused
    108: "Unused",                    # NVLINK_REMOTE_TRANSLATION_ERROR: unused
    137: "NVLink Privilege Error",    # the application's access (gpud: CheckUserAppAndGPU)
}


def _catalogue() -> dict[int, str]:
    path = shared_path("realdata", "xid-catalog", "nvidia-xid-catalog.csv")
    with path.open(encoding="utf-8") as fh:
        return {int(r["Code"]): f'{r["Mnemonic"]} | {r["Description"]}' for r in csv.DictReader(fh)}


def test_the_expected_table_is_what_the_catalogue_says() -> None:
    cat = _catalogue()
    for code, (_, words) in {**EXPECTED, **{c: ("", w) for c, w in NO_CATEGORY_WHY.items()}}.items():
        assert code in cat and words in cat[code], (code, cat.get(code))


def test_every_catalogue_code_has_its_category() -> None:
    cat = _catalogue()
    assert len(cat) >= 170
    wrong = {c: xid_category(c) for c in cat if xid_category(c) != EXPECTED.get(c, (None,))[0]}
    assert wrong == {}
    # and nothing outside the catalogue is classified
    assert xid_category(0) is None and xid_category(9999) is None


def test_no_other_catalogue_row_reads_like_hardware_memory_bus_or_link() -> None:
    # A coarse reading of the catalogue: words that name a hardware part. Every row with one is
    # either in EXPECTED or explained in NO_CATEGORY_WHY (or is marked Unused).
    hw = re.compile(r"\bECC\b|remapping|memory error|DRAM|SRAM|fallen off|\bGSP\b|\bNVLINK\b", re.I)
    loose = [c for c, text in _catalogue().items()
             if hw.search(text) and c not in EXPECTED and c not in NO_CATEGORY_WHY and "| Unused" not in text]
    # 155 NVLINK_SW_DEFINED_ERROR is software-defined (gpud: Warning), not a degrading link
    assert sorted(loose) == [155]


@pytest.mark.parametrize(("line", "pid", "process", "code", "pci"), [
    # quoted pid (driver wrote pid='<unknown>'): the quotes are syntax, not part of the value
    ("NVRM: Xid (PCI:0000:38:00): 13, pid='<unknown>', name=<unknown>, Graphics Exception: ESR 0x1",
     "<unknown>", "<unknown>", 13, "0000:38:00"),
    ("NVRM: Xid (PCI:0000:61:00): 119, pid=1365232, name=nvidia-smi, Timeout after 6s of waiting",
     "1365232", "nvidia-smi", 119, "0000:61:00"),
    ("NVRM: Xid (PCI:0000:ed:00): 45, pid='1818992', name=python3, Ch 00000010",
     "1818992", "python3", 45, "0000:ed:00"),
])
def test_xid_line_fields(line: str, pid: str, process: str, code: int, pci: str) -> None:
    got = classify(line)
    assert (got.kind, got.code) == ("xid", code)
    assert got.attrs["pid"] == pid
    assert got.attrs["process"] == process
    assert got.pci == pci
    # the rest of the line, after pid and name, is the Xid's text
    assert got.attrs["text"] == line.split(f"name={process}, ")[1]


def test_catalogue_entries_are_known_and_immutable() -> None:
    import dataclasses

    from suanli.ingest.xid import xid_catalog, xid_info

    assert all(info.known for info in xid_catalog().values())
    assert xid_info(48).known and not xid_info(9999).known
    # the catalogue is cached and shared: an entry cannot be changed in place
    with pytest.raises(dataclasses.FrozenInstanceError):
        xid_info(48).severity = "info"  # type: ignore[misc]
