"""Log records: scenario folders, multi-line records, heads of each spelling, collapse, robustness."""

from __future__ import annotations

import dataclasses
import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from suanli.errors import InputError
from suanli.ingest.log_classify import classify
from suanli.ingest.log_head import parse_head
from suanli.ingest.logs import LogConfig, parse_log_lines, read_log
from suanli.ingest.otlp import OtlpConfig, read_otlp
from suanli.ingest.records import Event, IngestReport
from tests.conftest import examples, shared_path
from tests.ingest.test_logs_support import InventoryResolver

SCENARIOS = ("healthy", "switch_port_errors", "pcie_riser")
T0 = datetime(2026, 3, 15, 2, 15, 3, 123456, tzinfo=UTC)


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


def _parse(lines: list[str], resolver: InventoryResolver | None = None,
           config: LogConfig | None = None) -> tuple[list[Event], IngestReport]:
    report = IngestReport()
    return list(parse_log_lines(lines, "t.log", resolver, report, config)), report


# -- the public scenarios -------------------------------------------------------------------

@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_logs_parse_with_zero_rejects(name: str) -> None:
    folder = shared_path("scenarios", name)
    truth = json.loads((folder / "truth.json").read_text())
    resolver = InventoryResolver.load(folder / "inventory.yaml")
    for file, key in (("kernel.log", "kernel_records"), ("trainer.log", "trainer_records")):
        report = IngestReport()
        events = list(read_log(folder / file, resolver, report))
        assert report.rejected == 0 and report.unresolved == {}
        # records before AER details are merged and repeats collapsed: the simulator's own count
        assert report.loaded["log_records"] == truth["files"][key]
        assert sum(e.count for e in events) <= truth["files"][key]
        assert all(math.isfinite(e.ts) and e.entity_id for e in events)
    hardware = [e for e in read_log(folder / "kernel.log", resolver, IngestReport())
                if e.kind in ("xid", "aer", "sxid")]
    faults = {f["root_cause"]["id"] for f in truth["faults"] if f["root_cause"]["kind"] == "gpu"}
    if name == "healthy":
        assert hardware == []
    # every hardware record names the GPU truth.json says is faulty (or there is none)
    assert {e.entity_id for e in hardware} <= faults


def test_pcie_riser_aer_lines_land_on_the_faulty_gpu() -> None:
    folder = shared_path("scenarios", "pcie_riser")
    resolver = InventoryResolver.load(folder / "inventory.yaml")
    aer = [e for e in read_log(folder / "kernel.log", resolver, IngestReport()) if e.kind == "aer"]
    assert aer and {e.entity_id for e in aer} == {"node-002/gpu5"}
    assert {e.severity for e in aer} == {"corrected"}
    raw = (folder / "kernel.log").read_text().splitlines()
    headers = sum(1 for line in raw if "AER:" in line and "error message received" in line)
    suppressed = sum(1 for line in raw if "errors suppressed" in line)
    # header records (collapsed repeats counted) + suppression notices = AER records in the file
    assert sum(e.count for e in aer) == headers + suppressed


def test_trainer_iterations_and_checkpoints() -> None:
    folder = shared_path("scenarios", "pcie_riser")
    resolver = InventoryResolver.load(folder / "inventory.yaml")
    events = list(read_log(folder / "trainer.log", resolver, IngestReport()))
    it = [e for e in events if e.kind == "iteration"]
    assert it[0].attrs["elapsed_ms"] == 5166.1 and it[0].attrs["iteration"] == 50640   # line 1 by hand
    ck = [e for e in events if e.kind == "checkpoint"]
    assert [(e.attrs["phase"], e.attrs["iteration"]) for e in ck[:2]] == [("start", 30502), ("end", 30502)]
    assert {e.entity_id for e in ck} == {"mpt-30b-rlhf-rm", "llama-13b-rlhf-rm"}
    # the UserWarning and its indented source line: one event of 2 lines
    warn = [e for e in events if "UserWarning" in e.message]
    assert len(warn) == 1 and warn[0].attrs["lines"] == 2


# -- records and heads ----------------------------------------------------------------------

def test_traceback_is_one_event_with_oom_on_the_gpu() -> None:
    res = InventoryResolver({"racks": [{"id": "r", "nodes": [{"id": "node-012", "gpus": [{"index": 3}]}]}],
                             "jobs": [{"id": "llama"}]})
    lines = [
        f"{_iso(T0)} node-012 python3[4242]: Traceback (most recent call last):",
        '  File "/app/train.py", line 10, in <module>',
        "    loss.backward()",
        '  File "/torch/_tensor.py", line 522, in backward',
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total "
        "capacity of 79.11 GiB of which 1.50 GiB is free.",
        f"{_iso(T0 + timedelta(seconds=1))} node-012 kernel: something else",
    ]
    events, report = _parse(lines, res)
    assert len(events) == 2
    oom = events[0]
    assert (oom.kind, oom.entity_kind, oom.entity_id, oom.attrs["lines"]) == ("cuda_oom", "gpu", "node-012/gpu3", 5)
    assert oom.attrs["bytes_requested"] == 2 * 2**30
    assert oom.ts == T0.timestamp() and oom.source == "t.log:1"
    assert report.loaded["log_lines"] == 6


@pytest.mark.parametrize(("line", "ts", "host", "message"), [
    ("2026-03-15T02:15:03.123456+00:00 node-012 kernel: NVRM: x", T0.timestamp(), "node-012", "NVRM: x"),
    ("2026-03-15T04:15:03.123456+02:00 node-012 kernel: m", T0.timestamp(), "node-012", "m"),
    ("2026-03-15T02:15:03,123456+00:00 NVRM: y", T0.timestamp(), None, "NVRM: y"),
    ("kern  :warn  : 2026-03-15T02:15:03,123456+00:00 NVRM: y", T0.timestamp(), None, "NVRM: y"),
    ("Mar 15 02:15:03 node-012 kernel: [68183.615790] pcieport x", T0.timestamp() - 0.123456, "node-012",
     "pcieport x"),
    ("[Sun Mar 15 02:15:03 2026] NVRM: z", T0.timestamp() - 0.123456, None, "NVRM: z"),
    ("[Mar 15 2026 02:15:03] [INFO] [tid 1] fm", T0.timestamp() - 0.123456, None, "[INFO] [tid 1] fm"),
])
def test_heads_with_absolute_time(line: str, ts: float, host: str | None, message: str) -> None:
    head = parse_head(line, 2026)
    assert head is not None
    assert head.ts == pytest.approx(ts, abs=1e-6) and head.host == host and head.message == message


@pytest.mark.parametrize(("line", "uptime", "message"), [
    ("[ 1843.308145] NVRM: a", 1843.308145, "NVRM: a"),
    ("<6>[    2.608284] mlx5_core b", 2.608284, "mlx5_core b"),
    ("6,3964,206764307,-;nvidia-nvswitch2: open", 206.764307, "nvidia-nvswitch2: open"),
])
def test_heads_with_uptime(line: str, uptime: float, message: str) -> None:
    head = parse_head(line, 2026)
    assert head is not None and math.isnan(head.ts)
    assert head.uptime_s == pytest.approx(uptime) and head.message == message


def test_uptime_placed_with_boot_time_and_delta_lines() -> None:
    boot = T0.timestamp() - 1000.0
    events, report = _parse(["[ 1000.000000] NVRM: a", "[  +0.500000] NVRM: b"], config=LogConfig(boot_time_s=boot))
    assert [e.ts for e in events] == [pytest.approx(T0.timestamp()), pytest.approx(T0.timestamp() + 0.5)]
    assert "log_time" not in report.unresolved
    events, report = _parse(["[ 1000.000000] NVRM: a"])
    assert math.isnan(events[0].ts) and report.unresolved["log_time"] == 1


def test_lines_without_heads_in_a_plain_file_stand_alone() -> None:
    events, _ = _parse(["first message", "second message", "  indented continuation", "", "third"])
    assert [e.message for e in events] == ["first message", "second message\n  indented continuation", "third"]


def test_xid_maps_to_gpu_by_pci_else_node() -> None:
    res = InventoryResolver({"racks": [{"id": "r", "nodes": [{"id": "node-012", "gpus": [
        {"index": 4, "pci_bus_id": "00000000:3B:00.0"}]}]}]})
    lines = [f"{_iso(T0)} node-012 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, "
             "GPU has fallen off the bus.",
             f"{_iso(T0)} node-012 kernel: NVRM: Xid (PCI:0000:99:00): 31, pid=1, name=p, MMU Fault",
             f"{_iso(T0)} node-099 kernel: NVRM: Xid (PCI:0000:3b:00): 31, pid=1, name=p, MMU Fault"]
    events, report = _parse(lines, res)
    assert [(e.code, e.entity_kind, e.entity_id) for e in events] == [
        (79, "gpu", "node-012/gpu4"), (31, "node", "node-012"), (31, None, None)]
    assert report.unresolved["events"] == 1


# -- collapse -------------------------------------------------------------------------------

def _storm(gaps: dict[int, float]) -> list[str]:
    """100,000 Xid 95 lines 10 ms apart, round-robin over 3 GPUs; before line i wait gaps[i] s more."""
    out, t = [], T0
    for i in range(100_000):
        t += timedelta(seconds=0.01 + gaps.get(i, 0.0))
        bus = ("3b", "5d", "9a")[i % 3]
        out.append(f"{_iso(t)} node-001 kernel: NVRM: Xid (PCI:0000:{bus}:00): 95, pid={1000 + i}, "
                   "name=python, Uncontained: FBHUB. RST: Yes, D-RST: No")
    return out


@pytest.mark.slow
def test_xid95_storm_collapses_to_the_hand_counted_events() -> None:
    # lines 0..39,999, then 120 s of silence (> 60 s gap: new events), lines 40,000..69,999,
    # then 30 s of silence (< 60 s: same events), lines 70,000..99,999.
    # Per GPU (line i goes to GPU i % 3): run 1 = lines 0..39,999 -> 13,334 / 13,333 / 13,333;
    # run 2 = lines 40,000..99,999 -> 20,000 each. 3 GPUs x 2 runs = 6 events, 100,000 lines.
    lines = _storm({40_000: 120.0, 70_000: 30.0})
    res = InventoryResolver({"racks": [{"id": "r", "nodes": [{"id": "node-001", "gpus": [
        {"index": 0, "pci_bus_id": "0000:3b:00.0"}, {"index": 1, "pci_bus_id": "0000:5d:00.0"},
        {"index": 2, "pci_bus_id": "0000:9a:00.0"}]}]}]})
    events, report = _parse(lines, res)
    assert report.loaded["log_lines"] == 100_000
    got = sorted((e.entity_id or "", e.count) for e in events)
    assert got == sorted([("node-001/gpu0", 13_334), ("node-001/gpu1", 13_333), ("node-001/gpu2", 13_333),
                          ("node-001/gpu0", 20_000), ("node-001/gpu1", 20_000), ("node-001/gpu2", 20_000)])
    first = min((e for e in events if e.entity_id == "node-001/gpu0"), key=lambda e: e.ts)
    assert first.ts == pytest.approx((T0 + timedelta(seconds=0.01)).timestamp())
    # its last line is i = 39,999 (39,999 % 3 == 0), at T0 + 40,000 x 10 ms = T0 + 400 s
    assert first.last_ts == pytest.approx((T0 + timedelta(seconds=400.0)).timestamp(), abs=1e-5)
    assert all(e.severity == "fatal" and e.code == 95 for e in events)
    # with a 20 s gap the 30 s silence splits too: 3 runs per GPU
    events, _ = _parse(lines[:75_000], res, LogConfig(collapse_gap_s=20.0))
    assert len(events) == 9 and sum(e.count for e in events) == 75_000


def test_collapse_keeps_different_messages_apart_and_is_bounded() -> None:
    lines = [f"{_iso(T0 + timedelta(seconds=i))} n kernel: message {i % 5} pid={i}" for i in range(50)]
    events, _ = _parse(lines, config=LogConfig(max_pending=2))
    # 5 different messages cycling: with room for 2 open runs each line closes the oldest run
    assert len(events) == 50
    events, _ = _parse(lines)
    assert sorted(e.count for e in events) == [10] * 5


# -- never raises ----------------------------------------------------------------------------

XID_LINE = f"{_iso(T0)} node-1 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus."


@settings(max_examples=examples(200), deadline=None, derandomize=True)
@given(lines=st.lists(st.text(max_size=120), max_size=20), at=st.integers(0, 20))
def test_arbitrary_text_around_a_good_record(lines: list[str], at: int) -> None:
    # Junk never hides a good record: an Xid 79 line planted among arbitrary text is found once,
    # with its code, at its own line. Every event names its file:line inside the input, stands for
    # at most as many lines as there are, and every reject is one line naming t.log:N.
    at = min(at, len(lines))
    planted = [*lines[:at], XID_LINE, *lines[at:]]
    for text in (planted, [f"{_iso(T0)} node {line}" for line in lines]):
        events, report = _parse(text)
        n_lines = sum(1 + s.count("\n") for s in text)
        assert sum(e.count for e in events) <= n_lines
        for e in events:
            assert e.source.startswith("t.log:") and 1 <= int(e.source.split(":")[1]) <= n_lines
        assert report.rejected <= n_lines
        assert all(r.startswith("t.log:") and "\n" not in r for r in report.reasons)
    events, _ = _parse(planted)
    xids = [e for e in events if e.kind == "xid" and e.code == 79 and e.host == "node-1"]
    assert len(xids) == 1
    assert xids[0].ts == T0.timestamp()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=500))
def test_arbitrary_bytes_never_raise(tmp_path: Path, data: bytes) -> None:
    p = tmp_path / "x.log"
    p.write_bytes(data)
    report = IngestReport()
    list(read_log(p, None, report))
    # only a truncated gzip stream is a bad record here
    assert report.rejected == (1 if data.startswith(b"\x1f\x8b") and report.rejected else 0)


def test_trainer_failures_land_on_the_job_rank() -> None:
    res = InventoryResolver({"racks": [{"id": "r", "nodes": [{"id": "node-003", "gpus": [{"index": 0}]}]}],
                             "jobs": [{"id": "llama", "ranks": [{"rank": 8, "gpu": "node-003/gpu0"}]}]})
    t = [_iso(T0 + timedelta(seconds=i)) for i in range(4)]
    lines = [
        f"{t[0]} node-003 python3[1234]: [rank8]:[E ProcessGroupNCCL.cpp:616] [Rank 8] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=307, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
        "ran for 600037 milliseconds before timing out.",
        f"{t[1]} node-003 python3[1234]: [rank8]: RuntimeError: CUDA error: uncorrectable ECC error encountered",
        f"{t[2]} node-003 python3[1234]: node-003:8:19 [0] NCCL WARN NET/IB : port down, IBV_EVENT_PORT_ERR",
        f"{t[3]} node-003 python3[1234]: [torch.distributed.elastic.agent.server.api] Worker group FAILED "
        "(collective_hang). 2/3 attempts left; will restart worker group",
    ]
    events, _ = _parse(lines, res)
    assert [(e.kind, e.entity_kind, e.entity_id) for e in events] == [
        ("nccl_timeout", "rank", "llama/rank8"), ("cuda_error", "rank", "llama/rank8"),
        ("nccl_warn", "job", "llama"), ("restart", "job", "llama")]
    assert events[0].attrs["seq_num"] == 307 and events[0].attrs["ran_for_ms"] == 600_037
    assert events[2].attrs["ib_event"] == "IBV_EVENT_PORT_ERR" and events[2].attrs["cuda_dev"] == 0


def test_spec_example_lines_and_aer_severities() -> None:
    res = InventoryResolver({"racks": [{"id": "r", "nodes": [{"id": "node-012", "gpus": [
        {"index": 2, "pci_bus_id": "00000000:3B:00.0"}]}]}]})
    lines = [  # spec/telemetry.md, "Log lines", then the other AER header spellings of the kernel
        "2026-03-15T02:15:03.123456+00:00 node-012 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, "
        "name=python, GPU has fallen off the bus.",
        "2026-03-15T02:15:04.000001+00:00 node-012 kernel: pcieport 0000:3a:02.0: AER: Corrected error "
        "received: 0000:3b:00.0",
        "2026-03-15T02:16:04.000001+00:00 node-012 kernel: pcieport 0000:3a:02.0: AER: Uncorrected (Non-Fatal) "
        "error received: 0000:3b:00.0",
        "2026-03-15T02:17:04.000001+00:00 node-012 kernel: pcieport 0000:3a:02.0: AER: Uncorrected (Fatal) "
        "error received: 0000:3b:00.0",
    ]
    events, report = _parse(lines, res)
    assert [(e.kind, e.code, e.severity, e.entity_id) for e in events] == [
        ("xid", 79, "fatal", "node-012/gpu2"), ("aer", None, "corrected", "node-012/gpu2"),
        ("aer", None, "uncorrected", "node-012/gpu2"), ("aer", None, "fatal", "node-012/gpu2")]
    assert events[1].ts == datetime(2026, 3, 15, 2, 15, 4, 1, tzinfo=UTC).timestamp()
    assert report.unresolved == {}


def test_the_inventory_packages_resolver_gives_the_same_entities() -> None:
    from suanli import inventory

    folder = shared_path("scenarios", "pcie_riser")
    real = inventory.load_inventory(folder / "inventory.yaml").resolver
    fake = InventoryResolver.load(folder / "inventory.yaml")
    for name in ("kernel.log", "trainer.log"):     # (the test resolver adds jobs_on_node: no iterations)
        got = [(e.kind, e.entity_kind, e.entity_id, e.count) for e in read_log(folder / name, real, IngestReport())
               if e.kind != "iteration"]
        want = [(e.kind, e.entity_kind, e.entity_id, e.count) for e in read_log(folder / name, fake, IngestReport())
                if e.kind != "iteration"]
        assert got == want and any(k == "aer" for k, *_ in got) == (name == "kernel.log")


def test_kubernetes_container_log_lines() -> None:
    head = parse_head("2026-03-15T02:15:03.123456789Z stderr F torch.OutOfMemoryError: CUDA out of memory.", 2026)
    assert head is not None and head.ident == "stderr"
    assert head.ts == pytest.approx(T0.timestamp() - 0.123456 + 0.123456789, abs=1e-6)
    assert head.message.startswith("torch.OutOfMemoryError")


def test_nic_link_down_lands_on_the_nic() -> None:
    res = InventoryResolver({"racks": [{"id": "r", "nodes": [{"id": "node-003", "gpus": [], "nics": [
        {"name": "mlx5_0", "pci_bus_id": "0000:19:00.0"}]}]}]})
    lines = [f"{_iso(T0)} node-003 kernel: mlx5_core 0000:19:00.0: Port module event[error]: module 0, Cable error",
             f"{_iso(T0)} node-003 kernel: mlx5_core 0000:19:00.0 ib0: Link down",
             f"{_iso(T0)} node-003 kernel: mlx5_core 0000:19:00.0: mlx5_fw_tracer_handle_traces:744:(pid 0): "
             "FWTracer: Events were lost"]
    events, _ = _parse(lines, res)
    assert [(e.kind, e.attrs.get("state"), e.entity_kind, e.entity_id) for e in events] == [
        ("nic_link", "module_error", "nic", "node-003/mlx5_0"), ("nic_link", "down", "nic", "node-003/mlx5_0"),
        ("other", None, "node", "node-003")]


def test_journald_stamped_traceback_is_one_event() -> None:
    # journald gives each line of a traceback its own timestamp; torchrun prefixes [rankN]:
    t = [_iso(T0 + timedelta(milliseconds=i)) for i in range(6)]
    p = "node-012 python3[4242]: [rank3]:"
    lines = [f"{t[0]} {p} Traceback (most recent call last):",
             f'{t[1]} {p}   File "/app/train.py", line 10, in <module>',
             f"{t[2]} {p}     loss.backward()",
             f"{t[3]} {p} torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 3 has a "
             "total capacity of 79.11 GiB of which 1.50 MiB is free.",
             f"{t[4]} {p}  [2026-03-15 02:15:03] iteration      100/ 5000000 | elapsed time per iteration (ms): 5.1 |",
             f"{t[5]} node-012 python3[999]:   File \"other.py\", line 1"]
    events, _ = _parse(lines)
    assert [(e.kind, e.attrs.get("lines", 1)) for e in events] == [("cuda_oom", 4), ("iteration", 1), ("other", 1)]
    assert events[0].attrs["bytes_requested"] == 20 * 2**20 and events[0].attrs["rank"] == 3


def test_every_config_field_is_documented() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "logs.md").read_text()
    missing = [f.name for cls in (LogConfig, OtlpConfig) for f in dataclasses.fields(cls)
               if f"`{f.name}`" not in doc]
    assert missing == []


def test_bom_priority_and_overlong_lines(tmp_path: Path) -> None:
    p = tmp_path / "k.log"
    p.write_text("\ufeff<134>1 2026-03-15T02:15:03.123456Z NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=p, "
                 "GPU has fallen off the bus.\n" + "2026-03-15T02:15:04Z node-1 kernel: " + "x" * 3_000_000 + "\n",
                 encoding="utf-8")
    report = IngestReport()
    events = list(read_log(p, None, report))
    assert (events[0].kind, events[0].code, events[0].ts) == ("xid", 79, T0.timestamp())
    assert len(events) == 2 and len(events[1].message) <= LogConfig().max_message_chars
    assert report.loaded["log_lines"] == 4          # the 3 MB line is read in 1 Mi-character pieces


@settings(max_examples=100, deadline=None)
@given(steps=st.lists(st.tuples(st.sampled_from(["node-1", "node-2"]),
                                st.sampled_from(["kauditd_printk_skb: 3 callbacks suppressed",
                                                 "NVRM: Xid (PCI:0000:3b:00): 95, pid=7, name=p, Uncontained",
                                                 "NVRM: Xid (PCI:0000:5d:00): 95, pid=8, name=p, Uncontained"]),
                                st.floats(min_value=0.0, max_value=200.0)), max_size=60),
       gap_s=st.sampled_from([1.0, 60.0]), pending=st.sampled_from([1, 3, 100]))
def test_collapse_conserves_records(steps: list[tuple[str, str, float]], gap_s: float, pending: int) -> None:
    t, lines = T0, []
    for host, msg, dt in steps:
        t += timedelta(seconds=dt)
        lines.append(f"{_iso(t)} {host} kernel: {msg}")
    events, report = _parse(lines, config=LogConfig(collapse_gap_s=gap_s, max_pending=pending))
    # every record is in exactly one event, and no event spans a silence longer than the gap
    assert sum(e.count for e in events) == len(lines) == report.loaded.get("log_records", 0)
    assert all(e.last_ts is not None and e.last_ts >= e.ts for e in events)
    assert all(e.last_ts - e.ts <= gap_s * (e.count - 1) + 1e-6 for e in events if e.last_ts is not None)


@pytest.mark.parametrize(("message", "kind", "code", "pci"), [
    ("NVRM: Xid (0000:03:00): 13, 0000 00000000 0000a0c0 00000160 00000000", "xid", 13, "0000:03:00"),  # old driver
    ("NVRM: Xid (PCI:0000:3a:00): 74, pid=3034, name=python3, NVLink: fatal error detected on link 3(0x0, 0x0)",
     "xid", 74, "0000:3a:00"),
    ("NVRM: Xid (PCI:0000:3a:00): 48, pid=3034, name=python3, An uncorrectable double bit error (DBE) has been "
     "detected on GPU in the framebuffer at partition 0, subpartition 0.", "xid", 48, "0000:3a:00"),
    ("nvidia-nvswitch3: SXid (PCI:0000:08:00.0): 12028, Non-fatal, Link 44 egress non-posted PRIV error",
     "sxid", 12028, "0000:08:00.0"),
    ("pcieport 0000:00:01.1: AER: Corrected error message received from 0000:01:00.0", "aer", None, "0000:01:00.0"),
    ("NCCL WARN Cuda failure 'out of memory'", "nccl_warn", None, None),
    ("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity)",
     "cuda_oom", None, None),
    ("some unrelated line", "other", None, None),
])
def test_classification_table(message: str, kind: str, code: int | None, pci: str | None) -> None:
    got = classify(message)
    assert (got.kind, got.code, got.pci) == (kind, code, pci)


def test_dmesg_file_named_after_its_node(tmp_path: Path) -> None:
    res = InventoryResolver({"racks": [{"id": "r", "nodes": [{"id": "node-012", "gpus": [
        {"index": 1, "pci_bus_id": "0000:91:00.0"}]}]}]})
    line = "[6781741.548779] NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
    for path in (tmp_path / "node-012.dmesg.log", tmp_path / "node-012" / "kernel.log"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(line + "\n")
        (ev,) = list(read_log(path, res, IngestReport()))
        assert (ev.host, ev.entity_id) == ("node-012", "node-012/gpu1")


def test_a_missing_file_is_one_input_error(tmp_path: Path) -> None:
    for reader in (read_log, read_otlp):
        with pytest.raises(InputError, match=r"nope\.log: cannot read"):
            list(reader(tmp_path / "nope.log", None, IngestReport()))


def test_xid_and_aer_carry_their_gpu_whatever_the_domain_or_where_the_text_names_it() -> None:
    from suanli.inventory import parse_inventory

    inv = parse_inventory("cluster: c\nracks:\n  - id: r\n    nodes:\n      - id: node-001\n        gpus:\n"
                          "          - {index: 0, uuid: GPU-a, pci_bus_id: '00000000:18:00.0'}\n")
    t = [_iso(T0 + timedelta(seconds=i)) for i in range(3)]
    lines = [
        f"{t[0]} node-001 kernel: NVRM: Xid (PCI:0001:18:00): 79, pid=1, name=python, GPU has fallen off the bus.",
        f"{t[1]} node-001 kernel: pcieport 0000:17:01.0: AER: device recovery failed for 0000:18:00.0",
        f"{t[2]} node-001 kernel: pcieport 0000:17:01.0: AER: device recovery failed",
    ]
    events, _ = _parse(lines, inv.resolver, LogConfig(aer_downstream_bus=False))
    placed = [(e.kind, e.entity_kind, e.entity_id, e.attrs.get("entity_via")) for e in events]
    assert placed == [
        ("xid", "gpu", "node-001/gpu0", "a PCI address in the record, any domain"),
        ("aer", "gpu", "node-001/gpu0", "a PCI address in the record, any domain"),
        ("aer", "node", "node-001", None),                 # names no GPU's address: stays on the node
    ]
    assert events[0].attrs["pci_bus_id"] == "0001:18:00.0"


def test_every_size_unit() -> None:
    # SI prefixes are powers of 10, binary ones powers of 2 (IEC 80000-13)
    from suanli.ingest.log_classify import parse_bytes

    want = {"B": 1, "bytes": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15,
            "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50}
    assert {u: parse_bytes("1", u) for u in want} == want
    assert parse_bytes("1.5", "KiB") == 1536


def test_an_aer_report_in_kernel_order_keeps_every_detail_line() -> None:
    # The bus error line, then the device's status/mask, then the error bits: each adds its part.
    text = ("pcieport 0000:00:03.0: AER: Uncorrected (Fatal) error received: 0000:00:03.0\n"
            "pcieport 0000:00:03.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, "
            "(Receiver ID)\n"
            "pcieport 0000:00:03.0:   device [8086:2f08] error status/mask=00004020/00000000\n"
            "pcieport 0000:00:03.0:    [ 5] SDES                   (First)\n"
            "pcieport 0000:00:03.0:    [14] CmpltTO")
    c = classify(text)
    assert (c.kind, c.severity, c.pci) == ("aer", "fatal", "0000:00:03.0")
    assert {k: c.attrs[k] for k in ("error_type", "agent", "vendor_device", "status", "mask", "errors",
                                    "first_error")} == {
        "error_type": "Transaction Layer", "agent": "Receiver ID", "vendor_device": "8086:2f08",
        "status": "00004020", "mask": "00000000", "errors": ["SDES", "CmpltTO"], "first_error": "SDES"}


def test_zeros_are_values() -> None:
    # Counters and indices that may be 0 are read as 0, not rejected.
    nccl = classify("[rank0]:[E ProcessGroupNCCL.cpp:1] [Rank 0] Exception (either an error or timeout) "
                    "detected by watchdog at work: 1, last enqueued NCCL work: 0, last completed NCCL work: 0.")
    assert (nccl.attrs["seq_num"], nccl.attrs["last_enqueued"], nccl.attrs["last_completed"]) == (1, 0, 0)
    ib = classify("h:1:2 [0] transport/net_ib.cc:1 NCCL WARN NET/IB : Got completion from peer 10.0.0.2 with "
                  "error 0, opcode 0, len 0, vendor err 0")
    assert (ib.attrs["ib_status"], ib.attrs["ib_vendor_err"]) == (0, 0)
    old = classify("[Rank 0] Watchdog timed out. Timeout at NCCL work: 1, last enqueued NCCL work: 0, "
                   "last completed NCCL work: 0.")
    assert (old.kind, old.attrs["last_enqueued"], old.attrs["last_completed"]) == ("nccl_timeout", 0, 0)
    sup = classify("pcieport 0000:00:03.0: AER: 0 Correctable errors suppressed")
    assert (sup.kind, sup.attrs["suppressed"]) == ("aer", 0)
    ck = classify("successfully loaded checkpoint from /ckpt at iteration 0")
    assert (ck.kind, ck.attrs["iteration"]) == ("checkpoint", 0)
    it = classify(" iteration        0/       0 | consumed samples: 0 |")
    assert (it.kind, it.attrs["iteration"], it.attrs["train_iters"]) == ("iteration", 0, 0)


def test_a_nic_link_line_names_its_netdev_when_it_has_one() -> None:
    with_dev = classify("mlx5_core 0000:3b:00.0 ens1f0: Link down")
    bare = classify("mlx5_core 0000:3b:00.0: Link down")
    assert (with_dev.kind, with_dev.attrs.get("netdev"), with_dev.attrs["state"]) == ("nic_link", "ens1f0", "down")
    assert bare.kind == "nic_link" and "netdev" not in bare.attrs
    # a link going down is fatal for what runs over it; coming up is information
    assert (with_dev.severity, classify("mlx5_core 0000:3b:00.0 ens1f0: Link up").severity) == ("fatal", "info")


def test_a_bus_error_line_alone_gives_the_severity() -> None:
    # No "AER: ... error received" head: the bus error line's severity decides. "Non-Fatal)" also
    # ends in "Fatal)", but it is uncorrected, not fatal.
    def bus(sev: str) -> str:
        return f"pcieport 0000:00:03.0: PCIe Bus Error: severity={sev}, type=Transaction Layer, (Requester ID)"

    got = [classify(bus(s)).severity for s in ("Uncorrected (Non-Fatal)", "Uncorrected (Fatal)", "Corrected")]
    assert got == ["uncorrected", "fatal", "corrected"]
    # a detail line merged on its own says that it added something
    from suanli.ingest.log_classify import Classified, add_aer_detail

    assert add_aer_detail(Classified("aer"), bus("Corrected")) is True
    assert add_aer_detail(Classified("aer"), "pcieport 0000:00:03.0: something else") is False


def test_each_aer_detail_line_kind_counts_as_detail() -> None:
    from suanli.ingest.log_classify import Classified, add_aer_detail

    for line in ("pcieport 0000:00:03.0:   device [8086:2f08] error status/mask=00004020/00000000",
                 "pcieport 0000:00:03.0:    [ 5] SDES                   (First)"):
        out = Classified("aer")
        assert add_aer_detail(out, line) is True, line
    assert out.attrs == {"errors": ["SDES"], "first_error": "SDES"}


def test_sxid_severity_and_a_record_of_only_detail_lines() -> None:
    head = "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, "
    fatal = classify(head + "Fatal, Link 31 ingress error")
    warn = classify(head + "Non-fatal, Link 31 egress non-posted PRIV error")
    assert (fatal.severity, warn.severity) == ("fatal", "warning")
    # only the Severity and Data lines of a report: the text is the first of them
    only = classify(head + "Severity 1 Engine instance 3 Sub-engine instance 00\n" + head + "Data {0x1, 0x2}")
    assert only.attrs["text"] == "Severity 1 Engine instance 3 Sub-engine instance 00"
    assert (only.attrs["engine_instance"], only.attrs["link"], only.attrs["data"]) == (3, 3, "0x1, 0x2")


def test_optional_parts_are_absent_when_the_line_lacks_them() -> None:
    # the older NCCL timeout without the enqueued/completed part; a checkpoint with and without its path
    assert classify("[Rank 3] Watchdog timed out. Timeout at NCCL work: 5.").attrs == {"seq_num": 5}
    to = classify("saving checkpoint at iteration 100 to /ckpt/iter_100")
    bare = classify("saving checkpoint at iteration 100")
    assert (to.attrs["phase"], to.attrs["iteration"], to.attrs.get("path")) == ("start", 100, "/ckpt/iter_100")
    assert bare.kind == "checkpoint" and "path" not in bare.attrs


def test_more_zeros_and_which_sxid_lines_join() -> None:
    # WorkNCCL fields, the older timeout's work number, an SXid link/engine 0 and a linked Xid 0 are 0
    work = classify("[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=0, OpType=BROADCAST, "
                    "NumelIn=0, NumelOut=0, Timeout(ms)=600000) ran for 600001 milliseconds before timing out.")
    assert (work.kind, work.attrs["seq_num"], work.attrs["numel_in"], work.attrs["op_type"]) == (
        "nccl_timeout", 0, 0, "BROADCAST")
    assert classify("[Rank 0] Watchdog timed out. Timeout at NCCL work: 0.").attrs == {"seq_num": 0}
    head = "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, "
    sx = classify(head + "Non-fatal, Link 0 egress non-posted PRIV error")
    assert (sx.attrs["link"], sx.severity) == (0, "warning")
    xid = classify("NVRM: Xid (PCI:0000:3b:00): 45, pid=1, name=python, Ch 00000008, caused by previous Xid 0")
    assert xid.attrs["caused_by_xid"] == 0
    # another code's line from the same switch is another record's: only 12028's lines join
    two = classify(head + "Non-fatal, Link 31 egress non-posted PRIV error\n"
                   "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 30 LTSSM Fault Up")
    assert (two.code, two.severity, two.attrs["link"]) == (12028, "warning", 31)
    # an AER with only its suppressed count is a report, not a detail line; bare error bits are
    sup = classify("pcieport 0000:00:03.0: AER: 3 Correctable errors suppressed")
    bits = classify("pcieport 0000:00:03.0:    [ 0] RxErr                  (First)")
    assert (sup.attrs["detail_only"], bits.attrs["detail_only"]) == (False, True)
    # any other "AER: ..." line is the port's own report too, not a detail of another
    assert classify("pcieport 0000:00:03.0: AER: enabled with IRQ 26").attrs["detail_only"] is False


def test_codes_and_durations_of_0_and_sxid_link_from_its_engine() -> None:
    # The classifier's bounds are >= 0 for codes and durations: 0 is read, not rejected.
    assert classify("NVRM: Xid (PCI:0000:3b:00): 0, pid=1, name=python, test").code == 0
    head = "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): "
    assert classify(head + "0, Non-fatal, Link 1 test").code == 0
    ran = classify("[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE) "
                   "ran for 0 milliseconds before timing out.")
    assert ran.attrs["ran_for_ms"] == 0
    # The link is the engine instance only when no "Link N" names it; with neither, no link.
    both = classify(head + "12028, Non-fatal, Link 31 error\n" + head + "12028, Severity 1 Engine instance 3")
    neither = classify(head + "12028, Fatal, internal error")
    assert (both.attrs["link"], both.attrs["engine_instance"]) == (31, 3)
    assert both.attrs["text"] == "Non-fatal, Link 31 error"       # the text line, not the Severity one
    w0 = classify("[Rank 0] Exception (either an error or timeout) detected by watchdog at work: 0, "
                  "last enqueued NCCL work: 0, last completed NCCL work: 0.")
    assert w0.attrs["seq_num"] == 0
    assert "link" not in neither.attrs


def test_an_iteration_field_without_a_colon_is_skipped_not_the_end() -> None:
    it = classify(" iteration        1/      10 | consumed samples: 8 | skipped | learning rate: 1.0E-04 |")
    assert (it.attrs["consumed_samples"], it.attrs["learning_rate"]) == (8.0, 1e-4)
