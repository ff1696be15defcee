"""Log time formats of spec/telemetry.md on the real files in shared/realdata/third-party/logs (and
others of shared/realdata): every expected time worked out by hand from the line, the zone's
offset on that date and, for raw dmesg, node-exporter's ``node_boot_time_seconds``."""

from __future__ import annotations

import math
import os
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from suanli.errors import InputError
from suanli.ingest.load import load_paths
from suanli.ingest.log_time import boot_times_from_metrics
from suanli.ingest.logs import LogConfig, parse_log_lines, read_log
from suanli.ingest.records import Event, IngestReport
from suanli.inventory import parse_inventory
from suanli.store.duck import DuckStore
from tests.conftest import shared_path


def _third(name: str) -> Path:
    return shared_path("realdata", "third-party", "logs", name)


def _read(path: Path, **config: object) -> tuple[list[Event], IngestReport]:
    report = IngestReport()
    return list(read_log(path, None, report, LogConfig(**config))), report  # type: ignore[arg-type]


def _at(*args: int, tz: timezone = UTC, micro: int = 0) -> float:
    return datetime(*args, microsecond=micro, tzinfo=tz).timestamp()  # type: ignore[misc]


def _inventory(folder: Path, extra: str = "", gpus: int = 1) -> Path:
    gpu_lines = "".join(f"          - {{index: {i}, uuid: GPU-{i:08d}, pci_bus_id: '00000000:{0x18 + i:02X}:00.0', "
                        "model: H100-SXM}\n" for i in range(gpus))
    path = folder / "inventory.yaml"
    path.write_text(f"cluster: t\n{extra}racks:\n  - id: r1\n    nodes:\n      - id: node-001\n"
                    f"        gpus:\n{gpu_lines}")
    return path


def _e2e() -> Path:
    return shared_path("realdata", "third-party", "metrics", "node_exporter-e2e-output.txt")


BOOT = 1418183276.0             # node_exporter-e2e-output.txt line 750: node_boot_time_seconds 1.418183276e+09


# -- local time: dmesg -T, ISO without an offset, the inventory's timezone ---------------------

def test_dmesg_T_is_utc_by_default_and_local_in_the_inventory_zone(tmp_path: Path) -> None:
    log = _third("ogkm-446-xid119-gsp-rpc-dmesg-T.log")
    events, report = _read(log)
    xids = [e for e in events if e.kind == "xid"]
    # 7 lines "[Fri Mar  3 04:44:24 2023]" ... 45 s apart
    assert [e.ts for e in xids] == [_at(2023, 3, 3, 4, 44, 24) + 45 * i for i in range(7)]
    assert report.unresolved.get("log_time") is None
    # Los Angeles on 3 March 2023 is PST, UTC-8 (DST began 12 March): 04:44:24 local = 12:44:24Z
    inv = _inventory(tmp_path, "timezone: America/Los_Angeles\n")
    store = DuckStore(None)
    load_paths([inv, log], store)
    got = sorted(e.ts for e in store.events(kinds=["xid"]))
    assert got[0] == _at(2023, 3, 3, 4, 44, 24, tz=timezone(timedelta(hours=-8)))
    assert got[0] == _at(2023, 3, 3, 12, 44, 24)


def test_dmesg_T_in_summer_time() -> None:
    # Berlin on 26 April 2026 is CEST, UTC+2: "[Sun Apr 26 23:12:26 2026]" = 21:12:26Z
    events, _ = _read(_third("vllm-40652-xid119-gsp-banner-domain0001-dmesg-T.log"), timezone="Europe/Berlin")
    xids = sorted((e.ts, e.attrs["pci_bus_id"]) for e in events if e.kind == "xid")
    assert xids == [(_at(2026, 4, 26, 21, 12, 26), "0001:6c:00.0"), (_at(2026, 4, 26, 21, 13, 11), "0001:96:00.0")]


def test_iso_without_offset_is_local_time() -> None:
    # nv-hostengine writes "2026-06-10 03:10:16.478" without a zone; Shanghai is UTC+8 all year
    events, _ = _read(_third("dcgm-issue303-nv-hostengine.log"), timezone="Asia/Shanghai")
    assert [e.ts for e in events] == [_at(2026, 6, 9, 19, 10, 16, micro=478000)] * 2
    assert [e.source for e in events] == ["dcgm-issue303-nv-hostengine.log:1", "dcgm-issue303-nv-hostengine.log:3"]


def test_inventory_timezone_is_read_and_checked() -> None:
    inv = parse_inventory("cluster: c\ntimezone: Asia/Shanghai\nracks: []\n")
    assert inv.timezone == "Asia/Shanghai" and "timezone" not in inv.extra
    assert parse_inventory("cluster: c\nracks: []\n").timezone is None
    with pytest.raises(InputError) as err:
        parse_inventory("cluster: c\ntimezone: Mars/Olympus\nracks: []\n", source="inv.yaml")
    assert "inv.yaml:2" in str(err.value) and "Mars/Olympus" in str(err.value)


# -- RFC 3164 syslog: local time without a year -----------------------------------------------

def test_syslog_zone_and_year_against_the_lines_own_epoch() -> None:
    # ik_llama.cpp's INFO lines carry their own epoch: "May 15 08:57:29 ... timestamp=1747317449",
    # and 1747317449 = 2025-05-15T13:57:29Z; Chicago in May is CDT, UTC-5: 08:57:29 local. The
    # anchor is an hour after (the window's end, as a caller that knows it passes it).
    log = _third("ik_llama-425-xid31-cuda-error-journal.log")
    events, report = _read(log, timezone="America/Chicago", reference_ts=1747317449.0 + 3600)
    assert [e.ts for e in events[:2]] == [1747317449.0, 1747317449.0]
    assert events[2].kind == "xid" and events[2].ts == 1747317449.0 + 7          # May 15 08:57:36
    assert report.unresolved.get("log_time") is None


def test_syslog_year_is_nearest_the_anchor_and_not_after_it() -> None:
    log = _third("dcgm-issue303-xid13-xid31-syslog.log")
    # "Jun 10 03:09:55": nv-hostengine's log of the same incident says 2026-06-10 03:10:16
    events, _ = _read(log, reference_ts=_at(2026, 6, 10, 3, 10, 16))
    assert {e.ts for e in events} == {_at(2026, 6, 10, 3, 9, 55)}
    # an anchor of 5 January 2026: June 2026 would be after it, June 2025 is the nearest before
    events, _ = _read(log, reference_ts=_at(2026, 1, 5, 0, 0, 0))
    assert {e.ts for e in events} == {_at(2025, 6, 10, 3, 9, 55)}
    # without an anchor, the file's modification time: the last 10 June at or before it
    mtime = datetime.fromtimestamp(os.stat(log).st_mtime, UTC)
    year = mtime.year if (mtime.month, mtime.day) >= (6, 10) else mtime.year - 1
    events, _ = _read(log)
    assert {e.ts for e in events} == {_at(year, 6, 10, 3, 9, 55)}


def test_syslog_year_rolls_over_at_new_year() -> None:
    lines = ["Dec 31 23:59:59 h kernel: a", "Jan  1 00:00:01 h kernel: b"]
    report = IngestReport()
    events = list(parse_log_lines(lines, "t.log", None, report, LogConfig(reference_ts=_at(2026, 1, 1, 0, 5, 0))))
    assert [e.ts for e in events] == [_at(2025, 12, 31, 23, 59, 59), _at(2026, 1, 1, 0, 0, 1)]


# -- seconds since boot: raw dmesg and /dev/kmsg, placed by node_boot_time_seconds ----------

def test_boot_time_is_read_from_node_exporter_output() -> None:
    # the e2e fixture names no host (no instance label): it is the boot time of "any host"
    assert boot_times_from_metrics([_e2e()], None) == {"": [BOOT]}


def test_raw_dmesg_placed_by_node_boot_time_seconds() -> None:
    store = DuckStore(None)
    report = load_paths([_e2e(), _third("nvtrust-124-sxid22013-three-line-records.log")], store)
    assert report.unresolved.get("log_time") is None
    sx = store.events(kinds=["sxid"])
    # records start at lines 2, 5, 8: "[   38.175561]", "[   38.183583]", "[   38.191863]"
    assert [e.ts for e in sx] == [BOOT + 38.175561, BOOT + 38.183583, BOOT + 38.191863]


def test_raw_dmesg_without_boot_time_is_counted_named_and_keeps_the_window() -> None:
    store = DuckStore(None)
    load_paths([shared_path("scenarios", "healthy")], store)
    window = store.time_range()
    log = _third("nvtrust-124-sxid22013-three-line-records.log")
    report = load_paths([log], store)
    # 9 lines, 4 records (line 1; SXid records at 2-4, 5-7, 8-9): none can be placed
    assert report.unresolved["log_time"] == 4
    named = [r for r in report.reasons if "not placed in time" in r]
    assert [r.split(": ", 1)[0] for r in named] == [f"{log.name}:{n}" for n in (1, 2, 5, 8)]
    assert all("node_boot_time_seconds" in r for r in named)
    assert store.time_range() == window
    assert all(math.isnan(e.ts) for e in store.events() if e.source.startswith(log.name))


def test_boot_time_by_host_latest_boot_and_unknown_host(tmp_path: Path) -> None:
    inv = _inventory(tmp_path)
    metrics = tmp_path / "node.om"
    metrics.write_text("# TYPE node_boot_time_seconds gauge\n"
                       'node_boot_time_seconds{instance="node-001:9100"} 1.7e9 1700000100.000\n'
                       'node_boot_time_seconds{instance="node-001:9100"} 1.7000005e9 1700000600.000\n'
                       "# EOF\n")
    logs = tmp_path / "node-001.dmesg.log"           # the node is named by the file
    logs.write_text("[   12.500000] NVRM: a\n[  +0.250000] NVRM: b\n")
    other = tmp_path / "node-009.dmesg.log"          # a host no metric names
    other.write_text("[   12.500000] NVRM: c\n")
    store = DuckStore(None)
    report = load_paths([inv, metrics, logs, other], store)
    got = {e.message: e.ts for e in store.events()}
    # the latest boot, 1700000500: 12.5 s and then +0.25 s after it
    assert got["NVRM: a"] == 1700000512.5 and got["NVRM: b"] == 1700000512.75
    assert math.isnan(got["NVRM: c"]) and report.unresolved["log_time"] == 1


def test_kmsg_placed_by_boot_time() -> None:
    path = shared_path("realdata", "logs", "gpud", "pkg__kmsg__testdata__kmsg.1.log")
    events, report = _read(path, boot_times={"": (BOOT,)})
    first = next(e for e in events if e.source == f"{path.name}:1")
    # line 1 "6,3964,206764307,-;nvidia-nvswitch2: open (major=510)": 206764307 µs after boot
    assert first.ts == pytest.approx(BOOT + 206.764307, abs=1e-6)
    assert report.unresolved.get("log_time") is None
    _, unplaced = _read(path)
    assert unplaced.unresolved["log_time"] == unplaced.loaded["log_records"]


# -- absolute times with a zone: short-iso, dmesg --time-format iso, Talos ---------------------

def test_dmesg_iso_decode_prefix_and_short_iso_offsets() -> None:
    events, _ = _read(_third("gpud-pr338-sxid12028-decode-iso.log"), timezone="Asia/Shanghai")
    # "kern  :err   : 2025-01-25T10:34:54,859532+00:00": the offset wins over any timezone
    assert events[0].ts == _at(2025, 1, 25, 10, 34, 54, micro=859532)
    lines = ["2026-03-15T10:15:03+0800 node-012 kernel: a", "2026-03-15T02:15:04+0000 node-012 kernel: b"]
    got = list(parse_log_lines(lines, "t.log", None, IngestReport(), LogConfig(timezone="America/Chicago")))
    assert [e.ts for e in got] == [_at(2026, 3, 15, 2, 15, 3), _at(2026, 3, 15, 2, 15, 4)]


def test_talos_dmesg() -> None:
    # talosctl dmesg, as Talos' logging guide shows it: "ADDR: kern: LEVEL: [RFC3339Nano]: message"
    line = "172.20.1.2: kern:    info: [2021-11-10T10:09:37.662764956Z]: Command line: init_on_alloc=1"
    report = IngestReport()
    events = list(parse_log_lines([line], "talos.log", None, report, LogConfig(default_host="node-001")))
    assert events[0].ts == pytest.approx(_at(2021, 11, 10, 10, 9, 37) + 0.662764956, abs=1e-6)
    assert events[0].host == "node-001" and events[0].message == "Command line: init_on_alloc=1"
    assert events[0].attrs["level"] == "info"
    alone = list(parse_log_lines([line], "talos.log", None, IngestReport()))
    assert alone[0].host == "172.20.1.2"


def test_lines_without_any_time_are_not_given_one() -> None:
    events, report = _read(_third("instructglm-3-watchdog-no-prefix.log"))
    assert len(events) == 1 and math.isnan(events[0].ts)
    assert report.unresolved["log_time"] == 1
    assert report.reasons == ["instructglm-3-watchdog-no-prefix.log:1: not placed in time (no timestamp in its line)"]
