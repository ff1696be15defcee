"""Multi-line records (ingest/log_records.py) on the real files of shared/realdata/third-party/logs:
NVSwitch SXid parts, a journald-split CUDA error, C++ frames, NCCL timeouts counted once per (rank,
sequence number), and CUDA's device index attributed through the rank's GPU. Counts worked out by
reading the files line by line."""

from __future__ import annotations

from pathlib import Path

from suanli.ingest.logs import LogConfig, parse_log_lines, read_log
from suanli.ingest.records import Event, IngestReport
from tests.conftest import shared_path
from tests.ingest.test_logs_support import InventoryResolver


def _third(name: str) -> Path:
    return shared_path("realdata", "third-party", "logs", name)


def _read(path: Path, resolver: InventoryResolver | None = None,
          config: LogConfig | None = None) -> tuple[list[Event], IngestReport]:
    report = IngestReport()
    return list(read_log(path, resolver, report, config)), report


def _host(host: str, gpus: dict[int, str], ranks: dict[int, int] | None = None) -> InventoryResolver:
    """One node; ``ranks`` places job ``train``'s rank -> GPU index."""
    jobs = [{"id": "train", "ranks": [{"rank": r, "gpu": f"{host}/gpu{g}"} for r, g in (ranks or {}).items()]}]
    return InventoryResolver({"racks": [{"id": "r", "nodes": [{"id": host, "gpus": [
        {"index": i, "pci_bus_id": pci} for i, pci in gpus.items()]}]}], "jobs": jobs})


def test_sxid_printed_over_three_lines_is_one_event() -> None:
    events, report = _read(_third("nvtrust-124-sxid22013-three-line-records.log"))
    sx = [e for e in events if e.kind == "sxid"]
    # 8 SXid lines: Data / Non-fatal, Link 44 / Severity 0 Engine instance 44, the same for link
    # 45, then Data / Non-fatal, Link 46 (the excerpt ends before its Severity line)
    assert [(e.source.rsplit(":", 1)[1], e.attrs["lines"], e.attrs["link"]) for e in sx] == [
        ("2", 3, 44), ("5", 3, 45), ("8", 2, 46)]
    assert {(e.code, e.severity, e.attrs["nvswitch"]) for e in sx} == {(22013, "warning", "nvidia-nvswitch3")}
    assert sx[0].message.splitlines()[1].endswith("22013, Non-fatal, Link 44 Minion Link DLREQ interrupt")
    assert report.loaded["log_lines"] == 9 and report.loaded["log_records"] == 4


def test_sxid_in_one_line_stays_one_event() -> None:
    events, _ = _read(_third("gpud-pr338-sxid12028-decode-iso.log"))
    assert [(e.kind, e.code, e.attrs.get("lines", 1)) for e in events] == [("sxid", 12028, 1)]


def test_journald_split_cuda_error_is_one_event_on_its_device() -> None:
    # host "red" has one GPU, at 0000:01:00.0 (the Xid 31 line's address)
    res = _host("red", {0: "0000:01:00.0"})
    events, report = _read(_third("ik_llama-425-xid31-cuda-error-journal.log"), res)
    # lines 1-2 INFO, 3 Xid 31, 4-7 the CUDA error (message, 2 indented lines, "ggml-cuda.cu:110:
    # CUDA error"), 8 segfault, 9 its "Code:" bytes
    assert [e.source.rsplit(":", 1)[1] for e in events] == ["1", "2", "3", "4", "8", "9"]
    cuda = [e for e in events if e.kind == "cuda_error"]
    assert len(cuda) == 1 and cuda[0].attrs["lines"] == 4
    assert (cuda[0].entity_kind, cuda[0].entity_id, cuda[0].attrs["cuda_device"]) == ("gpu", "red/gpu0", 0)
    assert cuda[0].attrs["error"] == "an illegal memory access was encountered" and cuda[0].severity == "fatal"
    assert cuda[0].message.splitlines()[-1].endswith("ggml-cuda.cu:110: CUDA error")
    xid = [e for e in events if e.kind == "xid"]
    assert [(e.code, e.entity_id) for e in xid] == [(31, "red/gpu0")]
    assert report.loaded["log_records"] == 6


def test_cpp_frames_belong_to_their_record_and_are_no_warning() -> None:
    events, _ = _read(_third("sglang-1693-watchdog-allgather-cpp-frames.log"))
    # lines 1-4: frames #3-#6 of a dump whose head is not in the excerpt: one record, kind other;
    # line 5 blank; 6 terminate, 7 what(): the timeout, 8 Exception raised from, 9 frame #0
    assert [(e.kind, e.source.rsplit(":", 1)[1], e.attrs.get("lines")) for e in events] == [
        ("other", "1", 4), ("nccl_timeout", "6", 4)]
    t = events[1].attrs
    assert (t["rank"], t["seq_num"], t["op_type"], t["timeout_ms"], t["ran_for_ms"]) == \
        (5, 9141, "_ALLGATHER_BASE", 600_000, 600_020)
    assert (t["numel_in"], t["numel_out"]) == (19008, 152064)
    assert not [e for e in events if e.kind == "nccl_warn"]


def test_watchdog_timeout_without_rank_prefix() -> None:
    events, _ = _read(_third("instructglm-3-watchdog-no-prefix.log"))
    assert [(e.kind, e.attrs["seq_num"], e.attrs["op_type"], e.attrs["timeout_ms"], e.attrs["ran_for_ms"])
            for e in events] == [("nccl_timeout", 49, "ALLREDUCE", 18_000_000, 18_005_607)]


def test_older_wording_timeout_at_nccl_work_is_the_same_timeout() -> None:
    # PyTorch 2.1/2.2 ProcessGroupNCCL::workCleanupLoop: "[Rank N] Timeout at NCCL work: SEQ, last
    # enqueued NCCL work: E, last completed NCCL work: C."; the watchdog line of the same work first
    lines = ["2024-01-05T10:00:00.000000+00:00 n1 python3[7]: [Rank 3] Watchdog caught collective operation "
             "timeout: WorkNCCL(SeqNum=49, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600015 milliseconds "
             "before timing out.",
             "2024-01-05T10:00:00.100000+00:00 n1 python3[7]: [Rank 3] Timeout at NCCL work: 49, last enqueued "
             "NCCL work: 50, last completed NCCL work: 48.",
             "2024-01-05T10:00:01.000000+00:00 n1 python3[8]: [Rank 4] Timeout at NCCL work: 49, last enqueued "
             "NCCL work: 49, last completed NCCL work: 48."]
    events = list(parse_log_lines(lines, "t.log", None, IngestReport()))
    assert [(e.kind, e.attrs.get("rank"), e.attrs.get("seq_num")) for e in events] == [
        ("nccl_timeout", 3, 49), ("other", 3, 49), ("nccl_timeout", 4, 49)]
    assert events[1].attrs["duplicate_of"] == "nccl_timeout t.log:1"
    assert (events[2].attrs["last_enqueued"], events[2].attrs["last_completed"]) == (49, 48)


def test_collective_hang_counts_one_timeout_per_rank() -> None:
    folder = shared_path("scenarios", "collective_hang")
    resolver = InventoryResolver.load(folder / "inventory.yaml")
    events = list(read_log(folder / "trainer.log", resolver, IngestReport()))
    raw = [line for line in (folder / "trainer.log").read_text().splitlines() if "Watchdog caught" in line]
    # 72 lines report a timeout: 64 ranks' watchdog lines, and 8 "what():" lines of the terminate
    # that follows on 8 of them (same rank, same SeqNum)
    assert len(raw) == 72 and sum("what():" in line for line in raw) == 8
    timeouts = [e for e in events if e.kind == "nccl_timeout"]
    assert sum(e.count for e in timeouts) == 64
    assert len({e.attrs["rank"] for e in timeouts}) == 64
    # one rank's watchdog caught SeqNum=232743, the 63 others 232744
    assert sorted(e.attrs["seq_num"] for e in timeouts) == [232743] + [232744] * 63
    assert sum(1 for e in events if str(e.attrs.get("duplicate_of", "")).startswith("nccl_timeout")) == 8


def test_oom_gpu_n_is_a_device_index_not_an_inventory_index() -> None:
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
           "capacity of 79.11 GiB of which 1.50 GiB is free.")
    line = f"2026-03-15T02:15:03.000000+00:00 node-001 python3[42]: [rank5]: {oom}"
    # rank 5 runs on GPU index 3 of node-001: "GPU 0" is its only visible CUDA device
    res = _host("node-001", {i: f"0000:{0x18 + i:02x}:00.0" for i in range(8)}, ranks={5: 3})
    events = list(parse_log_lines([line], "t.log", res, IngestReport()))
    assert [(e.kind, e.entity_kind, e.entity_id, e.attrs["cuda_device"], e.attrs["rank"]) for e in events] == [
        ("cuda_oom", "gpu", "node-001/gpu3", 0, 5)]
    # no rank on an 8-GPU node: device 0 names no particular GPU, never node-001/gpu0
    bare = f"2026-03-15T02:15:03.000000+00:00 node-001 python3[42]: {oom}"
    events = list(parse_log_lines([bare], "t.log", res, IngestReport()))
    assert events[0].entity_id != "node-001/gpu0" and events[0].entity_kind in ("job", "node")


def test_oom_tracebacks_on_a_single_gpu_host() -> None:
    res = _host("ws", {0: "0000:01:00.0"})
    events, _ = _read(_third("oom-tracebacks-from-issues.log"), res, LogConfig(default_host="ws"))
    ooms = [e for e in events if e.kind == "cuda_oom"]
    # four sources, four OOM messages (lines 2, 6, 8, 12), each "GPU 0", on the host's one GPU
    assert [e.source.rsplit(":", 1)[1] for e in ooms] == ["2", "6", "8", "12"]
    assert {(e.entity_id, e.attrs["cuda_device"]) for e in ooms} == {("ws/gpu0", 0)}
    # 55.57 GiB, 496.00 MiB, 22.78 GiB, 30.29 GiB (GiB = 2**30, MiB = 2**20)
    assert [e.attrs["bytes_requested"] for e in ooms] == [
        round(55.57 * 2**30), 496 * 2**20, round(22.78 * 2**30), round(30.29 * 2**30)]
