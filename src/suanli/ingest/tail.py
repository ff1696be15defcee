"""Live log sources: files followed across rotation and truncation, and ``journalctl -f``.

A follower turns a growing source into lines: :class:`FileFollower` reads what a file gained since
the last look, like ``tail -F``; :class:`CommandFollower` reads the standard output of a command
(``journalctl -f -o short-iso-precise``), restarting it when it exits. A :class:`LogTail` feeds
those lines to suanli's log parser (:func:`suanli.ingest.logs.parse_log_lines`) on its own
thread and hands the events to a callback, so multi-line records (a traceback, an NVRM dump) stay
one event as in files.

Rotation: when the path names another file (``mv kern.log kern.log.1`` and a new ``kern.log``),
the old file is read to its end first, then the new one from its start. Truncation
(``copytruncate``, ``> file``): when the file became shorter than what was read, it is read again
from its start. A record never spans two files. A file missing at start is waited for (and read
from its start when it appears). A last line without its newline is held until it is completed,
or until the file is rotated away.

Live latency: the parser completes a record when the next one starts, and collapses repeats; a
source quiet for ``flush_after_s`` flushes both, so an event is delivered at most about that long
after its last line was written (repeats further apart than that become separate events).
Nothing raises into the loop: read errors are counted in :class:`TailHealth`, an exception of the
callback too.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol

from suanli.ingest.log_config import LogConfig
from suanli.ingest.log_entities import host_from_path
from suanli.ingest.logs import parse_log_lines
from suanli.ingest.records import Event, IngestReport
from suanli.inventory import Resolver

__all__ = ["JOURNAL_COMMAND", "CommandFollower", "FileFollower", "FileStart", "LineSource", "LogSource", "LogTail", "TailHealth",
           "open_tail"]

JOURNAL_COMMAND: tuple[str, ...] = ("journalctl", "-f", "-o", "short-iso-precise", "--no-pager", "--lines=0")
"""The command a ``journal:`` log source runs (its ``args`` are appended)."""

@dataclass(frozen=True)
class FileStart:
    """Marks, in a follower's output, that the lines after it come from a new file (or a restarted
    command), the first of them being line ``skipped + 1`` (a file first opened at its end)."""

    skipped: int = 0


Item = str | FileStart


@dataclass
class TailHealth:
    """What a follower and its tail have seen."""

    lines: int = 0
    events: int = 0
    rotations: int = 0
    truncations: int = 0
    restarts: int = 0
    read_errors: int = 0
    deliver_errors: int = 0
    last_error: str | None = None


class LineSource(Protocol):
    """A follower: :meth:`read` returns the new lines (a :class:`FileStart` where a file starts), never blocks."""

    name: str
    health: TailHealth

    def read(self) -> list[Item]: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class LogSource:
    """One configured log source (docs/serve.md, ``logs:``): a ``path`` or a ``command``."""

    path: str | None = None
    command: tuple[str, ...] = ()
    host: str | None = None
    """Host of lines that name none (plain dmesg)."""
    from_start: bool = False
    """Read a file from its start at the first open (default: only what is written from now on)."""
    source: str = ""
    """Where it was configured (``serve.yaml:20``)."""


class FileFollower:
    """Follows one path: new complete lines on each :meth:`read`, across rotation and truncation."""

    def __init__(self, path: str | os.PathLike[str], *, from_start: bool = False, chunk_bytes: int = 1 << 20,
                 max_line_bytes: int = 1 << 20) -> None:
        self.path = Path(path)
        self.name = self.path.name
        self.health = TailHealth()
        self._from_start, self._chunk, self._max_line = from_start, chunk_bytes, max_line_bytes
        self._fh: IO[bytes] | None = None
        self._ino: tuple[int, int] | None = None
        self._pos = 0
        self._partial = b""
        self._missing_at_start = False

    def read(self) -> list[Item]:
        out: list[Item] = []
        try:
            if self._fh is None and not self._open(out):
                return out
            self._drain(out)
            if self._rotated():
                self._drain(out)
                self._close_file(out)
                self.health.rotations += 1
                if self._open(out):
                    self._drain(out)
        except OSError as exc:
            self.health.read_errors += 1
            self.health.last_error = f"{self.path}: {exc.strerror or exc}"
            self._close_file(out)
        self.health.lines += sum(isinstance(i, str) for i in out)
        return out

    def _open(self, out: list[Item]) -> bool:
        try:
            fh = self.path.open("rb")
        except FileNotFoundError:
            self._missing_at_start |= self._ino is None
            return False
        st = os.fstat(fh.fileno())
        first = self._ino is None and not self._missing_at_start
        self._fh, self._ino, self._partial, self._pos = fh, (st.st_dev, st.st_ino), b"", 0
        skipped = 0
        if first and not self._from_start:              # what was there before: counted, not read
            while data := fh.read(self._chunk):
                self._pos += len(data)
                skipped += data.count(b"\n")
        out.append(FileStart(skipped))
        return True

    def _drain(self, out: list[Item]) -> None:
        fh = self._fh
        if fh is None:
            return
        if os.fstat(fh.fileno()).st_size < self._pos:
            self.health.truncations += 1
            self._pos, self._partial = fh.seek(0), b""
            out.append(FileStart())
        while data := fh.read(self._chunk):
            self._pos += len(data)
            pieces = (self._partial + data).split(b"\n")
            self._partial = pieces.pop()
            out.extend(p.decode("utf-8", "replace") for p in pieces)
            if len(self._partial) > self._max_line:
                out.append(self._partial.decode("utf-8", "replace"))
                self._partial = b""

    def _rotated(self) -> bool:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return False                    # renamed away, not yet recreated: keep reading the old file
        return (st.st_dev, st.st_ino) != self._ino

    def _close_file(self, out: list[Item]) -> None:
        if self._partial:
            out.append(self._partial.decode("utf-8", "replace"))
            self._partial = b""
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


class CommandFollower:
    """Lines of a command's standard output (``journalctl -f ...``); restarted after it exits."""

    def __init__(self, argv: Sequence[str], *, name: str = "journal", restart_s: float = 5.0) -> None:
        self.argv, self.name, self.restart_s = tuple(argv), name, restart_s
        self.health = TailHealth()
        self._lines: deque[Item] = deque()
        self._stop = threading.Event()
        self._proc: subprocess.Popen[bytes] | None = None
        self._thread = threading.Thread(target=self._run, name=f"suanli-tail-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        first = True
        while not self._stop.is_set():
            try:
                proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        stdin=subprocess.DEVNULL)
            except OSError as exc:
                self.health.read_errors += 1
                self.health.last_error = f"{self.argv[0]}: {exc.strerror or exc}"
            else:
                self._proc = proc
                self._lines.append(FileStart())
                self.health.restarts += not first
                first = False
                assert proc.stdout is not None
                for raw in proc.stdout:
                    self._lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
                code = proc.wait()
                if not self._stop.is_set():
                    self.health.last_error = f"{self.argv[0]} exited with status {code}"
            self._stop.wait(self.restart_s)

    def read(self) -> list[Item]:
        out: list[Item] = []
        while self._lines:
            out.append(self._lines.popleft())
        self.health.lines += sum(isinstance(i, str) for i in out)
        return out

    def close(self) -> None:
        self._stop.set()
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5.0)
            except subprocess.TimeoutExpired:
                proc.kill()
        self._thread.join(10.0)


def open_tail(spec: LogSource, deliver: Callable[[list[Event]], None], *, resolver: Resolver | None = None,
              config: LogConfig | None = None, flush_after_s: float = 2.0) -> LogTail:
    """The (not yet started) tail of a configured source; lines naming no host take ``spec.host``,
    else the node a file is named after (``node-012.dmesg.log``), as :func:`suanli.ingest.logs.read_log` does."""
    config = config or LogConfig()
    follower: LineSource
    if spec.path is not None:
        follower = FileFollower(spec.path, from_start=spec.from_start)
        host = spec.host or (host_from_path(Path(spec.path), resolver) if resolver is not None else None)
    else:
        follower = CommandFollower(spec.command, name=Path(spec.command[0]).name if spec.command else "command")
        host = spec.host
    if host is not None and config.default_host is None:
        config = dataclasses.replace(config, default_host=host)
    return LogTail(follower, deliver, resolver=resolver, config=config, flush_after_s=flush_after_s)


@dataclass
class _Run:
    base: int = 0                 # lines of the current file read before this parser run
    pending: deque[Item] = field(default_factory=deque)


class LogTail:
    """Parses a follower's lines on a thread and calls ``deliver`` with the events (in order)."""

    def __init__(self, follower: LineSource, deliver: Callable[[list[Event]], None], *,
                 resolver: Resolver | None = None, config: LogConfig | None = None, poll_s: float = 0.25,
                 flush_after_s: float = 2.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.follower, self.deliver, self.resolver = follower, deliver, resolver
        self.config = config or LogConfig()
        self.poll_s, self.flush_after_s, self.clock = poll_s, flush_after_s, clock
        self.report = IngestReport()
        self._stop = threading.Event()
        self._events: list[Event] = []
        self._file_lines = 0
        self._run = _Run()
        self._thread: threading.Thread | None = None

    @property
    def health(self) -> TailHealth:
        return dataclasses.replace(self.follower.health)

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=f"suanli-tail-{self.follower.name}",
                                            daemon=True)
            self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop following; what was read is parsed and delivered first."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
        self.follower.close()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._run.base = self._file_lines
            for ev in parse_log_lines(self._lines(), self.follower.name, self.resolver, self.report, self.config):
                self._events.append(self._numbered(ev))
            self._flush()

    def _lines(self) -> Iterator[str]:
        """Lines of one parser run: it ends at a new file, after ``flush_after_s`` of quiet, or at stop."""
        pending = self._run.pending
        last = None
        while True:
            if not pending:
                self._flush()
                stopping = self._stop.is_set()
                pending.extend(self.follower.read())        # at stop: what was written until now
                if not pending:
                    if stopping or (last is not None and self.clock() - last >= self.flush_after_s):
                        return
                    self._stop.wait(self.poll_s)
                    continue
            head = pending[0]
            if isinstance(head, FileStart):
                if last is not None:
                    return                  # finish this file's records first
                pending.popleft()
                self._file_lines = self._run.base = head.skipped
                continue
            line = pending.popleft()
            assert isinstance(line, str)
            self._file_lines += 1
            last = self.clock()
            yield line

    def _numbered(self, ev: Event) -> Event:
        """``file:N`` of the parser run made ``file:LINE`` of the file."""
        name, _, num = ev.source.rpartition(":")
        if not num.isdigit() or not self._run.base:
            return ev
        return dataclasses.replace(ev, source=f"{name}:{self._run.base + int(num)}")

    def _flush(self) -> None:
        if not self._events:
            return
        events, self._events = self._events, []
        self.follower.health.events += len(events)
        try:
            self.deliver(events)
        except Exception as exc:  # the consumer's fault: counted, never breaks the loop
            self.follower.health.deliver_errors += 1
            self.follower.health.last_error = f"deliver: {type(exc).__name__}: {exc}"
