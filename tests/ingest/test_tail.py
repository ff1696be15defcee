"""Live log sources on real files: appends, rotation by rename, truncation, cut lines, a command's output."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from suanli.ingest.records import Event
from suanli.ingest.tail import CommandFollower, FileFollower, LogSource, LogTail, open_tail
from suanli.inventory import Inventory, load_inventory
from tests.conftest import shared_path

XID = ("2026-03-15T02:15:03.123456+00:00 node-001 kernel: NVRM: Xid (PCI:0000:3a:00): 79, pid=1234, "
       "name=python, GPU has fallen off the bus.\n")
AER = "2026-03-15T02:15:04.000001+00:00 node-001 kernel: pcieport 0000:3a:02.0: AER: Corrected error received: 0000:3a:00.0\n"
OOM = ("2026-03-15T02:16:00.000001+00:00 node-001 python[4242]: Traceback (most recent call last):\n"
       '  File "train.py", line 10, in <module>\n'
       "    main()\n"
       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")


@pytest.fixture(scope="module")
def inv() -> Inventory:
    return load_inventory(shared_path("scenarios", "switch_port_errors", "inventory.yaml"))


class _Sink:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.lock = threading.Lock()

    def __call__(self, events: list[Event]) -> None:
        with self.lock:
            self.events.extend(events)

    def wait(self, n: int, timeout_s: float = 10.0) -> list[Event]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.events) >= n:
                    return list(self.events)
            time.sleep(0.02)
        raise AssertionError(f"waited for {n} events, got {[(e.kind, e.source) for e in self.events]}")


def _append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write(text)


@pytest.fixture
def tail_of(inv: Inventory) -> Iterator[Callable[[Path], tuple[LogTail, _Sink]]]:
    tails: list[LogTail] = []

    def make(path: Path, **kw: object) -> tuple[LogTail, _Sink]:
        sink = _Sink()
        tail = LogTail(FileFollower(path, **kw), sink, resolver=inv.resolver,  # type: ignore[arg-type]
                       poll_s=0.02, flush_after_s=0.3)
        tail.start()
        tails.append(tail)
        return tail, sink

    yield make
    for t in tails:
        t.stop()


def test_follows_appends_rotation_and_truncation(tmp_path: Path,
                                                 tail_of: Callable[..., tuple[LogTail, _Sink]]) -> None:
    log = tmp_path / "kern.log"
    log.write_text("2026-03-15T02:00:00+00:00 node-001 kernel: written before the tail started\n")
    tail, sink = tail_of(log)
    time.sleep(0.1)
    _append(log, XID)
    (xid,) = sink.wait(1)
    assert (xid.kind, xid.code, xid.entity_id, xid.source) == ("xid", 79, "node-001/gpu2", "kern.log:2")

    _append(log, AER)                                   # written just before the rename: still read
    os.rename(log, tmp_path / "kern.log.1")
    log.write_text(OOM)
    got = sink.wait(3)
    aer, oom = got[1], got[2]
    assert (aer.kind, aer.source) == ("aer", "kern.log:3")
    assert (oom.kind, oom.source, oom.attrs["lines"]) == ("cuda_oom", "kern.log:1", 4)   # one record of 4 lines
    assert oom.message.endswith("Tried to allocate 2.00 GiB")

    os.truncate(log, 0)                                 # copytruncate
    time.sleep(0.1)
    _append(log, XID)
    got = sink.wait(4)
    assert (got[3].kind, got[3].source) == ("xid", "kern.log:1")
    health = tail.health
    assert health.rotations == 1 and health.truncations == 1
    assert health.lines == 1 + 1 + 4 + 1 and health.events == 4


def test_cut_line_waits_for_its_end_and_bad_bytes_do_not_stop(
        tmp_path: Path, tail_of: Callable[..., tuple[LogTail, _Sink]]) -> None:
    log = tmp_path / "node-001.dmesg.log"
    log.write_bytes(b"")
    _tail, sink = tail_of(log)
    time.sleep(0.1)
    _append(log, XID[:40])
    time.sleep(0.6)                                     # longer than flush_after_s: still not a line
    assert sink.events == []
    _append(log, XID[40:])
    with log.open("ab") as fh:
        fh.write(b"2026-03-15T02:15:05+00:00 node-001 kernel: \xff\xfe garbage \x00\n")
    got = sink.wait(2)
    assert got[0].kind == "xid" and got[0].code == 79
    assert "\ufffd" in got[1].message


def test_file_missing_at_start_is_read_from_its_start(tmp_path: Path,
                                                      tail_of: Callable[..., tuple[LogTail, _Sink]]) -> None:
    log = tmp_path / "later.log"
    _tail, sink = tail_of(log)
    time.sleep(0.1)
    log.write_text(XID + AER)
    got = sink.wait(2)
    assert [e.source for e in got] == ["later.log:1", "later.log:2"]


def test_from_start_reads_the_existing_lines(tmp_path: Path, tail_of: Callable[..., tuple[LogTail, _Sink]]) -> None:
    log = tmp_path / "kern.log"
    log.write_text(XID + OOM)
    _tail, sink = tail_of(log, from_start=True)
    got = sink.wait(2)
    assert [e.kind for e in got] == ["xid", "cuda_oom"]


def test_stop_delivers_what_was_written(tmp_path: Path, inv: Inventory) -> None:
    log = tmp_path / "kern.log"
    log.write_text("")
    sink = _Sink()
    tail = open_tail(LogSource(path=str(log)), sink, resolver=inv.resolver, flush_after_s=60.0)
    tail.start()
    time.sleep(0.5)
    _append(log, XID + AER)
    tail.stop()                                         # no quiet period: stop itself flushes
    assert [e.kind for e in sink.events] == ["xid", "aer"]


def test_a_callback_that_raises_does_not_stop_the_tail(tmp_path: Path, inv: Inventory) -> None:
    log = tmp_path / "kern.log"
    log.write_text("")
    seen: list[Event] = []

    def deliver(events: list[Event]) -> None:
        seen.extend(events)
        if len(seen) == 1:
            raise RuntimeError("consumer bug")

    tail = LogTail(FileFollower(log), deliver, resolver=inv.resolver, poll_s=0.02, flush_after_s=0.2)
    tail.start()
    time.sleep(0.1)
    _append(log, XID)
    time.sleep(0.5)
    _append(log, AER)
    deadline = time.monotonic() + 10
    while len(seen) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    tail.stop()
    assert [e.kind for e in seen] == ["xid", "aer"]
    assert tail.health.deliver_errors == 1 and "consumer bug" in str(tail.health.last_error)


def test_command_output_is_followed_and_the_command_restarted(inv: Inventory) -> None:
    # A real child process writing journalctl -o short-iso-precise lines, then exiting.
    script = f"import sys; sys.stdout.write({XID + OOM!r}); sys.stdout.flush()"
    follower = CommandFollower([sys.executable, "-c", script], name="journal", restart_s=0.2)
    sink = _Sink()
    tail = LogTail(follower, sink, resolver=inv.resolver, poll_s=0.02, flush_after_s=0.2)
    tail.start()
    got = sink.wait(4)                                  # two runs of the command: 2 events each
    tail.stop()
    assert [e.kind for e in got[:4]] == ["xid", "cuda_oom", "xid", "cuda_oom"]
    assert got[2].source == "journal:1"                 # the restarted command's lines count anew
    assert tail.health.restarts >= 1 and "exited with status 0" in str(tail.health.last_error)


def test_missing_command_is_an_error_not_a_crash() -> None:
    follower = CommandFollower(["/nonexistent/journalctl"], restart_s=0.05)
    time.sleep(0.2)
    assert follower.read() == []
    follower.close()
    assert follower.health.read_errors >= 1 and "/nonexistent/journalctl" in str(follower.health.last_error)
