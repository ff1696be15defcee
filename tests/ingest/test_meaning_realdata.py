"""What third-party records mean (issue 12 item 4): NVSwitch SXids on their switch, AER of a root
port on the GPU behind it, Xid 45 linked to its cause, "Fatal" raising an Xid's severity.

Expected values are read off the files in ../shared/realdata (SOURCE.md says where each comes
from) and NVIDIA's SXid catalogue (Fabric Manager user guide DU-09883-001), never off the code.
"""

from __future__ import annotations

from pathlib import Path

from suanli.ingest.log_classify import classify
from suanli.ingest.logs import LogConfig, read_log
from suanli.ingest.records import Event, IngestReport
from suanli.inventory import Inventory, parse_inventory
from tests.conftest import shared_path

_INV = """
cluster: t
racks:
  - id: r1
    nodes:
      - id: h
        gpus:
          - {index: 0, uuid: GPU-00000000-0000-0000-0000-000000000000, pci_bus_id: "00000000:03:00.0"}
          - {index: 1, uuid: GPU-00000000-0000-0000-0000-000000000001, pci_bus_id: "00000000:dc:00.0"}
        nvswitches:
          - {index: 0, pci_bus_id: "00000000:05:00.0"}
          - {index: 1}
          - {index: 2, pci_bus_id: "00000000:07:00.0"}
          - {index: 3, pci_bus_id: "00000000:04:00.0"}
"""
_BARE = """
cluster: t
racks:
  - id: r1
    nodes:
      - id: h
        gpus:
          - {index: 0, uuid: GPU-00000000-0000-0000-0000-000000000000, pci_bus_id: "00000000:03:00.0"}
"""


def _events(inv: Inventory, *parts: str) -> list[Event]:
    path: Path = shared_path("realdata", *parts)
    return list(read_log(path, inv.resolver, IngestReport(), LogConfig(default_host="h")))


def _lines(*parts: str) -> list[str]:
    """The file's lines without their ``[  38.174242] `` dmesg stamp."""
    text = shared_path("realdata", *parts).read_text()
    return [line.split("] ", 1)[1] if line.startswith("[") else line for line in text.splitlines()]


# -- NVSwitch SXid ------------------------------------------------------------------------------

def test_sxid_12028_goes_to_the_switch_its_device_name_names() -> None:
    # "nvidia-nvswitch1: SXid (PCI:0000:84:00.0): 12028, Data {0x000001c0, ...}"; the inventory
    # lists nvswitch1 without an address: the kernel's device name alone finds it
    evs = [e for e in _events(parse_inventory(_INV), "third-party", "logs", "gpud-pr338-sxid12028-decode-iso.log")]
    assert [(e.kind, e.code, e.entity_kind, e.entity_id) for e in evs] == [("sxid", 12028, "nvswitch", "h/nvswitch1")]
    # catalogue: 12028 "egress nonposted PRIV error", fatal, reboot (FM guide)
    assert (evs[0].severity, evs[0].attrs["action"]) == ("fatal", "REBOOT_SYSTEM")
    assert evs[0].attrs["data"].startswith("0x000001c0, 0x00bd5c8a")
    assert evs[0].attrs["pci_bus_id"] == "0000:84:00.0"


def test_sxid_without_listed_switches_stays_on_the_node() -> None:
    evs = _events(parse_inventory(_BARE), "third-party", "logs", "gpud-pr338-sxid12028-decode-iso.log")
    assert [(e.entity_kind, e.entity_id) for e in evs] == [("node", "h")]


def test_sxid_22013_records_on_nvswitch3_by_address_or_name() -> None:
    evs = _events(parse_inventory(_INV), "third-party", "logs", "nvtrust-124-sxid22013-three-line-records.log")
    sx = [e for e in evs if e.kind == "sxid"]
    # 9 lines: the driver banner, then 8 SXid 22013 lines of nvidia-nvswitch3 (PCI 0000:04:00.0),
    # which the record assembly joins into the three records of links 44, 45 and 46
    assert len(sx) == 3 and {e.entity_id for e in sx} == {"h/nvswitch3"}
    assert {e.severity for e in sx} == {"warning"}              # "Non-fatal"; catalogue: warning
    assert sorted(e.attrs["link"] for e in sx) == [44, 45, 46]


def test_sxid_three_line_record_joined_is_one_reading() -> None:
    # nvtrust-124 after the banner: Data{0x2b}, then "Non-fatal, Link 44 ...", "Severity 0 Engine
    # instance 44 ...", "Data {0x0000002c, ...}": NVSwitch prints a record as its Fatal/Non-fatal
    # line, its Severity line and its Data line (the order of gpud's README record), and the data's
    # first word is the link (0x2c = 44); the first Data{0x2b} is the tail of link 43's record
    lines = _lines("third-party", "logs", "nvtrust-124-sxid22013-three-line-records.log")
    cls = classify("\n".join(lines[2:5]))
    assert (cls.kind, cls.code, cls.severity, cls.pci) == ("sxid", 22013, "warning", "0000:04:00.0")
    assert cls.attrs["text"] == "Non-fatal, Link 44 Minion Link DLREQ interrupt"
    assert (cls.attrs["link"], cls.attrs["engine_instance"], cls.attrs["sxid_severity"]) == (44, 44, 0)
    assert cls.attrs["data"].startswith("0x0000002c, 0x0000002c, 0x00000000")


def test_sxid_fatal_records_of_three_switches() -> None:
    # gpud README: SXid 20034 "LTSSM Fault Up" on nvswitch1 (06:00.0, listed by name only),
    # nvswitch0 (05:00.0) and nvswitch2 (07:00.0); 8 lines, all fatal, which the record assembly
    # joins into 5 records (test_logs_realdata: nvswitch1 one, nvswitch0 two, nvswitch2 two)
    evs = [e for e in _events(parse_inventory(_INV), "logs", "gpud", "sxid-README-xid79-sxid20034-example.log")
           if e.kind == "sxid"]
    per: dict[str | None, int] = {}
    for e in evs:
        per[e.entity_id] = per.get(e.entity_id, 0) + 1
    assert per == {"h/nvswitch1": 1, "h/nvswitch0": 2, "h/nvswitch2": 2}
    assert {e.severity for e in evs} == {"fatal"}
    lines = _lines("logs", "gpud", "sxid-README-xid79-sxid20034-example.log")
    joined = classify("\n".join([lines[10], lines[12]]))     # nvswitch0: "Fatal, Link 62", "Severity 1 ... 62"
    assert (joined.severity, joined.attrs["link"], joined.attrs["sxid_severity"]) == ("fatal", 62, 1)


# -- AER ----------------------------------------------------------------------------------------

def test_root_port_aer_goes_to_the_gpu_its_device_lines_name() -> None:
    # returnn-1500: pcieport 0000:00:03.0 reports "Multiple Uncorrected (Fatal) error received:
    # 0000:00:03.0" (itself), bits [ 5] SDES and [14] CmpltTO (First); the device line after it is
    # "nvidia 0000:03:00.0: AER: can't recover": the GPU at 03:00.0 is behind that port
    evs = [e for e in _events(parse_inventory(_BARE), "logs", "kernel", "returnn-1500-aer-fatal-nvidia-gpu.log")]
    head = next(e for e in evs if e.attrs.get("multiple"))
    assert (head.entity_kind, head.entity_id, head.severity) == ("gpu", "h/gpu0", "fatal")
    assert head.attrs["errors"] == ["SDES", "CmpltTO"] and head.attrs["first_error"] == "CmpltTO"
    later = [e for e in evs if "Root Port link has been reset" in e.message]
    assert [(e.entity_id) for e in later] == ["h/gpu0"]            # the port, remembered
    # the first "device recovery failed" comes before any device line: it stays on the node
    failed = {int(e.source.rsplit(":", 1)[1]): e.entity_id for e in evs if "device recovery failed" in e.message}
    assert failed == {3: "h", 12: "h/gpu0"}


def test_aer_bit_names_are_read_whole() -> None:
    # the kernel's aer.c names (aer_correctable_error_string / aer_uncorrectable_error_string);
    # popos-3363's real lines "[12] Timeout" and "[ 6] BadTLP" are one word
    text = ("pcieport 0000:00:03.1: AER: Corrected error received: 0000:03:00.0\n"
            "pcieport 0000:00:03.1:    [12] Replay Timer Timeout  \n"
            "pcieport 0000:00:03.1:    [ 5] Surprise Down Error    (First)")
    cls = classify(text)
    assert cls.attrs["errors"] == ["Replay Timer Timeout", "Surprise Down Error"]
    assert cls.attrs["first_error"] == "Surprise Down Error"
    real = [e for e in _events(parse_inventory(_BARE), "logs", "kernel", "popos-3363-aer-correctable.log")]
    assert [e.attrs.get("errors") for e in real if e.attrs.get("errors")] == [["Timeout"], ["BadTLP"]]


# -- Xid ----------------------------------------------------------------------------------------

def test_xid45_links_to_the_xid_that_caused_it() -> None:
    evs = _events(parse_inventory(_INV), "third-party", "logs", "ogkm-1150-xid45-caused-by-xid149-145.log")
    # 7 lines: dc:00 twice (caused by 149), ed:00, ba:00 twice each and 97:00 once (caused by 145)
    causes = sorted((e.attrs["pci_bus_id"], e.attrs["caused_by_xid"]) for e in evs)
    assert causes == [("0000:97:00.0", 145), ("0000:ba:00.0", 145), ("0000:ba:00.0", 145),
                      ("0000:dc:00.0", 149), ("0000:dc:00.0", 149), ("0000:ed:00.0", 145),
                      ("0000:ed:00.0", 145)]
    assert {e.entity_id for e in evs if e.attrs["pci_bus_id"] == "0000:dc:00.0"} == {"h/gpu1"}


def test_fatal_in_the_text_raises_an_xids_severity() -> None:
    # gpud PR 1174: two Xid 149 lines say "NETIR Fatal" / "NETIR_LINK_EVT Fatal"; the catalogue
    # rates 149 a warning. The Xid 145 line says "Nonfatal" and keeps the catalogue's warning;
    # the Xid 94 line (catalogue: fatal) stays fatal.
    evs = [e for e in _events(parse_inventory(_BARE), "logs", "kernel", "gpud-pr1174-kmsg-xid149-145-94.log")
           if e.kind == "xid"]
    assert [(e.code, e.severity) for e in evs] == [(149, "fatal"), (149, "fatal"), (145, "warning"), (94, "fatal")]
    # no "Fatal" in their text: the Xid 13 lines of gpud PR 46 keep the catalogue's warning
    x13 = [e for e in _events(parse_inventory(_BARE), "logs", "kernel", "gpud-pr46-dmesg-xid13-xid109-peermem.log")
           if e.code == 13]
    assert x13 and {e.severity for e in x13} == {"warning"}
