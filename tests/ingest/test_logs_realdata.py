"""Real log lines from shared/realdata/logs: every file parses; hand-checked kinds, codes, numbers."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from suanli.ingest.logs import LogConfig, parse_log_lines, read_log
from suanli.ingest.records import Event, IngestReport
from tests.conftest import shared_path
from tests.ingest.test_logs_support import InventoryResolver


def _logs() -> list[Path]:
    root = shared_path("realdata", "logs")
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name != "SOURCE.md")


def _read(*parts: str, resolver: InventoryResolver | None = None,
          config: LogConfig | None = None) -> tuple[list[Event], IngestReport]:
    report = IngestReport()
    events = list(read_log(shared_path("realdata", "logs", *parts), resolver, report, config))
    return events, report


def _one_host(host: str, gpus: dict[int, str]) -> InventoryResolver:
    return InventoryResolver({"racks": [{"id": "r", "nodes": [{"id": host, "gpus": [
        {"index": i, "pci_bus_id": pci} for i, pci in gpus.items()]}]}]})


def test_every_real_log_file_parses() -> None:
    files = _logs()
    assert len(files) >= 20
    for path in files:
        report = IngestReport()
        events = list(read_log(path, None, report))
        n_lines = len(path.read_bytes().splitlines())
        assert report.rejected == 0, path
        assert report.loaded["log_lines"] == n_lines, path
        assert events, path
        assert sum(e.count for e in events) <= n_lines


def test_xid79_and_sxid_from_gpud_readme() -> None:
    res = _one_host("gpu-host", {2: "00000000:91:00.0"})
    events, _ = _read("gpud", "sxid-README-xid79-sxid20034-example.log", resolver=res,
                      config=LogConfig(default_host="gpu-host"))
    xids = [e for e in events if e.kind == "xid"]
    assert [(e.code, e.severity, e.entity_kind, e.entity_id) for e in xids] == \
        [(79, "fatal", "gpu", "gpu-host/gpu2")]
    assert xids[0].attrs["action"] == "REBOOT_SYSTEM"
    # "NVRM: GPU 0000:91:00.0: GPU has fallen off the bus." right after is the same failure
    dup = [e for e in events if e.attrs.get("duplicate_of")]
    assert len(dup) == 1 and dup[0].kind == "other"
    sxids = [e for e in events if e.kind == "sxid"]
    # 8 SXid lines of 3 switches, interleaved; the parts of one record join (same switch, one part
    # each, link = engine instance): nvswitch1 [Fatal L48]; nvswitch0 [Fatal L63 + Data],
    # [Fatal L62 + Severity 62]; nvswitch2 [Severity 60] (its Fatal line is not in the excerpt),
    # [Fatal L37 + Severity 37]
    assert sorted((e.attrs["nvswitch"], e.attrs.get("lines", 1)) for e in sxids) == [
        ("nvidia-nvswitch0", 2), ("nvidia-nvswitch0", 2), ("nvidia-nvswitch1", 1), ("nvidia-nvswitch2", 1),
        ("nvidia-nvswitch2", 2)]
    assert {e.code for e in sxids} == {20034}
    assert {e.attrs.get("link") for e in sxids} >= {48, 63, 37, 62}
    assert all(e.severity == "fatal" for e in sxids)


def test_fallen_off_bus_without_xid_is_one_multiline_event() -> None:
    res = _one_host("h", {0: "0000:b3:00.0"})
    events, _ = _read("kernel", "nvsentinel-155-fallen-off-bus-no-xid.log", resolver=res,
                      config=LogConfig(default_host="h"))
    assert len(events) == 3                       # 5 lines: one 3-line record + 2 one-line records
    lost = events[0]
    assert (lost.kind, lost.code, lost.entity_id, lost.attrs["inferred"]) == ("xid", 79, "h/gpu0", True)
    assert lost.message.count("\n") == 2 and lost.attrs["uptime_s"] == pytest.approx(1843.308145)


def test_xid13_and_xid109_dmesg_T() -> None:
    events, _ = _read("kernel", "gpud-pr46-dmesg-xid13-xid109-peermem.log")
    xids = [(e.code, e.severity, e.ts) for e in events if e.kind == "xid"]
    t13 = datetime(2024, 8, 30, 11, 43, 9, tzinfo=UTC).timestamp()
    t109 = datetime(2024, 8, 30, 11, 43, 14, tzinfo=UTC).timestamp()
    assert xids == [(13, "warning", t13)] * 3 + [(109, "warning", t109)]
    assert [e.attrs["process"] for e in events if e.code == 109] == ["pt_main_thread"]


def test_xid149_145_94_kmsg() -> None:
    events, _ = _read("kernel", "gpud-pr1174-kmsg-xid149-145-94.log")
    assert [(e.code, e.attrs["pci_bus_id"]) for e in events] == [
        (149, "0019:01:00.0"), (149, "0000:00:00.0"), (145, "0018:01:00.0"), (94, "0000:9b:00.0")]
    # severities: gpud's classification (xid-catalog/gpud-xid-severity-repair-actions.csv) rates 149
    # and 145 warnings, 94 fatal; "Fatal" in the two 149 lines' text raises them (issue 12 item 4)
    assert [e.severity for e in events] == ["fatal", "fatal", "warning", "fatal"]
    assert events[2].attrs["text"].startswith("RLW_RXPIPE Nonfatal")


def test_xid119_gsp_timeout_dmesg_T() -> None:
    events, _ = _read("gpud", "components__accelerator__nvidia__xid__testdata__dmesg-with-xid-119.log")
    xids = [e for e in events if e.kind == "xid"]
    assert {e.code for e in xids} == {119} and len(xids) == 5
    assert xids[0].ts == datetime(2025, 2, 23, 16, 24, 18, tzinfo=UTC).timestamp()
    assert xids[0].attrs["action"] == "RESET_GPU"


def test_aer_correctable_syslog() -> None:
    events, report = _read("kernel", "popos-3363-aer-correctable.log", config=LogConfig(assume_year=2023))
    # 8 lines = 2 AER reports of 4 lines (header, bus error, device status, error bit)
    assert len(events) == 2 and all(e.kind == "aer" and e.severity == "corrected" for e in events)
    assert [e.attrs["errors"] for e in events] == [["Timeout"], ["BadTLP"]]
    assert [e.attrs["error_type"] for e in events] == ["Data Link Layer"] * 2
    assert events[0].attrs["status"] == "00001000" and events[0].host == "bubz"
    assert events[0].ts == datetime(2023, 9, 19, 16, 18, 2, tzinfo=UTC).timestamp()
    assert report.unresolved.get("log_time") is None


def test_aer_uncorrected_fatal_on_the_gpu() -> None:
    res = _one_host("ws", {0: "0000:03:00.0"})
    events, _ = _read("kernel", "returnn-1500-aer-fatal-nvidia-gpu.log", resolver=res,
                      config=LogConfig(default_host="ws"))
    assert all(e.kind == "aer" for e in events)
    fatal_hdr = [e for e in events if "Uncorrected (Fatal)" in e.message]
    assert len(fatal_hdr) == 1 and fatal_hdr[0].severity == "fatal"
    assert fatal_hdr[0].attrs["errors"] == ["SDES", "CmpltTO"]
    gpu = {int(e.source.rsplit(":", 1)[1]): (e.entity_id, e.count, e.severity) for e in events
           if e.entity_kind == "gpu"}
    # "nvidia 0000:03:00.0: AER: can't recover" twice, identical: one event counted twice (line 1);
    # the root port 0000:00:03.0's report (line 4) and its later records (11, 12) follow the device
    # line after the report to that GPU; its line 3, before any device line, stays on the node
    assert gpu == {1: ("ws/gpu0", 2, "fatal"), 4: ("ws/gpu0", 1, "fatal"), 11: ("ws/gpu0", 1, None),
                   12: ("ws/gpu0", 1, "fatal")}


@pytest.mark.parametrize(("name", "ranks", "op", "timeout_ms"), [
    ("basicsr-737-watchdog-allreduce.log", [1, 0, 2], "ALLREDUCE", 600_000),
    ("llamafactory-6269-watchdog-reduce-scatter.log", [0, 4, 3], "_REDUCE_SCATTER_BASE", 600_000),
    ("llamafactory-7396-watchdog-allreduce.log", [0, 4], "ALLREDUCE", 600_000),
    ("ofa-271-watchdog-old-format-8xV100.log", [1, 3, 2, 6, 7], "ALLREDUCE", 1_800_000),
])
def test_nccl_watchdog_timeouts(name: str, ranks: list[int], op: str, timeout_ms: int) -> None:
    events, _ = _read("nccl", name)
    timeouts = [e for e in events if e.kind == "nccl_timeout"]
    assert [e.attrs["rank"] for e in timeouts] == ranks
    assert {e.attrs["op_type"] for e in timeouts} == {op}
    assert {e.attrs["timeout_ms"] for e in timeouts} == {timeout_ms}
    others = [e for e in events if e.kind != "nccl_timeout"]
    assert all(e.kind == "nccl_warn" for e in others)


def test_nccl_stale_rank_and_mixed_optypes() -> None:
    events, _ = _read("nccl", "pytorch-118369-watchdog-stale-rank.log")
    # lines 3 and 4 are identical (Rank 0, SeqNum=96125): one timeout, line 4 its duplicate (issue 12:
    # one timeout per (rank, sequence number), however many lines report it)
    timeouts = [e for e in events if e.kind == "nccl_timeout"]
    assert [(e.attrs["seq_num"], e.count) for e in timeouts] == [(96120, 1), (96117, 1), (96125, 1), (64088, 1)]
    dup = [e for e in events if e.kind != "nccl_timeout"]
    assert [(e.kind, e.source, e.attrs["duplicate_of"]) for e in dup] == [
        ("other", "pytorch-118369-watchdog-stale-rank.log:4", "nccl_timeout pytorch-118369-watchdog-stale-rank.log:3")]
    assert timeouts[0].attrs["ran_for_ms"] == 25_624_887
    mixed, _ = _read("nccl", "nccl-1409-watchdog-mixed-optypes.log")
    assert [(e.kind, e.attrs.get("op_type"), e.attrs.get("rank")) for e in mixed] == [
        ("nccl_timeout", "BROADCAST", 7), ("nccl_warn", None, 7), ("nccl_timeout", "ALLREDUCE", 3)]


def test_nccl_ib_completion_error() -> None:
    events, _ = _read("nccl", "nccl-1405-net-ib-completion-error.log")
    warns = [e for e in events if e.kind == "nccl_warn"]
    assert len(warns) == 3 and {(e.attrs["ib_status"], e.attrs["ib_vendor_err"]) for e in warns} == {(12, 129)}
    assert {e.host for e in warns} == {"kp-ddp-worker-0"}


def test_cuda_oom_bytes_requested() -> None:
    events, _ = _read("cuda-oom", "oom-messages-from-issues.txt")
    ooms = [e for e in events if e.kind == "cuda_oom"]
    assert len(ooms) == 9
    # GiB = 2**30 bytes, MiB = 2**20: 1.70 GiB = 1825361100.8, 2.26 GiB = 2426656522.24,
    # 32.00 MiB = 33554432, 22.00 MiB = 23068672
    got = [e.attrs["bytes_requested"] for e in ooms]
    assert got[:4] == [1825361101, 2426656522, round(55.57 * 2**30), 33554432]
    assert 23068672 in got
    assert all(e.attrs["gpu_index"] == 0 for e in ooms)
    assert ooms[1].attrs["total_bytes"] == 6 * 2**30              # old format "(GPU 0; 6.00 GiB total capacity"
    assert ooms[0].attrs["free_bytes"] == 0                        # "of which 0 bytes is free"
    ecc = [e for e in events if e.kind == "cuda_error"]
    assert len(ecc) == 1 and ecc[0].severity == "fatal"
    # the ECC RuntimeError and its 3 explanation lines: one record? no heads in this file, so
    # unindented lines stand alone; the message line itself is one event
    assert "uncorrectable ECC error" in ecc[0].message


def test_xid63_line_without_process_name() -> None:
    # ml-engineering's Xid 63 companion line has "pid=1896," and no "name=": two of them with
    # different pids are still one event
    line = shared_path("realdata", "nvidia-smi", "ml-engineering-xid63-companion-line.log").read_text().strip()
    report = IngestReport()
    events = list(parse_log_lines([line, line.replace("pid=1896", "pid=1897")], "x", None, report))
    assert [(e.kind, e.code, e.count, e.attrs["pid"]) for e in events] == [("xid", 63, 2, "1896")]
    assert events[0].attrs["text"].startswith("Row Remapper: New row marked")
