"""One place for the spellings of PCI addresses, MACs and hosts (worked out by hand from the
forms exporters, kernels and inventories write)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from suanli.inventory import mac_key, normalise_pci, pci_key
from suanli.inventory.normalize import PCI_IN_TEXT, host_candidates, strip_port


def test_key_helpers() -> None:
    assert pci_key("00000000:3B:00.0") == (0, 0x3B, 0, 0)
    assert pci_key("PCI:0019:01:00") == (0x19, 1, 0, None)
    assert pci_key("3b:00.0") == (0, 0x3B, 0, 0)
    assert pci_key("3b:00.9") is None
    assert mac_key("B8-CE-F6-00-00-01") == "b8cef6000001"
    assert mac_key("b8:ce:f6") is None


@given(st.integers(0, 0xFFFF), st.integers(0, 0xFF), st.integers(0, 0x1F), st.integers(0, 7))
def test_pci_spellings_agree(dom: int, bus: int, dev: int, fn: int) -> None:
    spellings = [f"{dom:08x}:{bus:02x}:{dev:02x}.{fn}", f"{dom:08X}:{bus:02X}:{dev:02X}.{fn}",
                 f"{dom:04x}:{bus:02x}:{dev:02x}.{fn}", f"PCI:{dom:04X}:{bus:02x}:{dev:02x}.{fn}"]
    assert {pci_key(s) for s in spellings} == {(dom, bus, dev, fn)}
    assert pci_key(f"{dom:04x}:{bus:02x}:{dev:02x}") == (dom, bus, dev, None)
    if dom == 0:
        assert pci_key(f"{bus:02x}:{dev:02x}.{fn}") == (0, bus, dev, fn)


@pytest.mark.parametrize(("text", "canonical"), [
    ("00000000:3B:00.0", "0000:3b:00.0"),       # dcgm-exporter's 8-digit domain
    ("0000:3b:00", "0000:3b:00.0"),             # an Xid line names the device: function 0
    ("PCI:0000:3B:00", "0000:3b:00.0"),
    ("3b:00.1", "0000:3b:00.1"),                # no domain: domain 0
    ("00010000:18:00.0", "0000:18:00.0"),       # a wide domain keeps its last four digits
    ("0019:01:00.7", "0019:01:00.7"),
    ("3b:00.9", None),                          # functions go up to 7
    ("node-001", None),
])
def test_normalise_pci(text: str, canonical: str | None) -> None:
    assert normalise_pci(text) == canonical


def test_pci_in_text_needs_the_domain() -> None:
    found = re.findall(PCI_IN_TEXT, "pcieport 0000:17:01.0: AER: at 02:15 from 0000:18:00.0 and 18:00.1")
    assert found == ["0000:17:01.0", "0000:18:00.0"]


@pytest.mark.parametrize(("text", "host"), [
    ("node-001:9100", "node-001"), ("[::1]:9100", "::1"), ("node-001", "node-001"),
    ("a:b", "a:b"), ("10.0.0.7:9400", "10.0.0.7"),
])
def test_strip_port(text: str, host: str) -> None:
    assert strip_port(text) == host


@pytest.mark.parametrize(("text", "out"), [
    ("http://Node-001.cluster.local:9400/metrics", ["node-001.cluster.local", "node-001"]),
    ("node-001:9100", ["node-001"]),
    ("10.0.0.7", ["10.0.0.7"]),                 # an IP address has no short name
    ("[fe80::1]:9100", ["fe80::1"]),
])
def test_host_candidates(text: str, out: list[str]) -> None:
    assert host_candidates(text) == out


def test_mac_spellings() -> None:
    for text in ("b8:ce:f6:00:00:01", "B8-CE-F6-00-00-01", "b8ce.f600.0001", "B8CEF6000001"):
        assert mac_key(text) == "b8cef6000001"
    assert mac_key("zz:ce:f6:00:00:01") is None
