"""The action audit log: every decision (dry run, shadow or live), every breaker trip and reset,
one JSON object per line, appended and fsync'd, never rewritten.

Where it is (docs/safety.md): ``actions.audit_log`` of the rule file when set, else next to the
database, ``<db>.audit.jsonl`` (:func:`default_audit_path`). Without either the log is kept in
memory only (``AuditLog().records``), which only a dry run accepts.

Each line is opened with ``O_APPEND`` and written with one ``write`` call, then ``fsync``'d (the
folder too when the file was just created), so a record on disk is whole or absent, and a reader
(the next runner, ``reset_breaker``) sees every record written before it. A torn last line (a
crash mid-write) is fenced off with a newline before the next record and skipped when read back,
counted in ``bad_lines``. Records carry ``v`` (format version), ``id`` (``writer#seq``), ``writer``
(host:pid:nonce of the process) and ``event`` (``decision``, ``trip``, ``reset``, ``release``).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
from pathlib import Path
from typing import Any

from suanli.errors import InputError

__all__ = ["AUDIT_SUFFIX", "FORMAT_VERSION", "AuditLog", "default_audit_path", "read_audit"]

FORMAT_VERSION = 1
AUDIT_SUFFIX = ".audit.jsonl"


def default_audit_path(configured: str | None, db: Path | str | None) -> Path | None:
    """The audit log's location: the rule file's ``actions.audit_log``, else ``<db>.audit.jsonl``."""
    if configured:
        return Path(configured).expanduser()
    if db is not None:
        return Path(str(db) + AUDIT_SUFFIX)
    return None


def _parse_lines(data: bytes) -> tuple[list[dict[str, Any]], int]:
    records: list[dict[str, Any]] = []
    bad = 0
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
        except (ValueError, RecursionError):
            bad += 1
            continue
        if isinstance(rec, dict):
            records.append(rec)
        else:
            bad += 1
    return records, bad


def read_audit(path: Path | str) -> tuple[list[dict[str, Any]], int]:
    """All whole records of an audit log, in order, and how many lines were not records."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return [], 0
    except OSError as e:
        raise InputError(f"cannot read the audit log: {e.strerror}", file=str(path)) from None
    return _parse_lines(data)


class AuditLog:
    """Append-only decisions: a JSON-lines file (with a path) or memory (``records``, without one)."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path else None
        self.records: list[dict[str, Any]] = []
        self.writer = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
        self.bad_lines = 0
        self._seq = 0
        self._offset = 0
        self._inode: int | None = None

    def append(self, record: dict[str, Any], sync: bool = True) -> dict[str, Any]:
        """Stamp (v, id, writer, event) and append one record; with ``sync`` it is on disk on return."""
        self._seq += 1
        rec = {"v": FORMAT_VERSION, "event": "decision", **record, "id": f"{self.writer}#{self._seq}",
               "writer": self.writer}
        if self.path is None:
            self.records.append(rec)
            return rec
        line = (json.dumps(rec, sort_keys=True, allow_nan=False, ensure_ascii=True) + "\n").encode()
        try:
            self._write(line, sync)
        except OSError as e:
            raise InputError(f"cannot append to the audit log: {e.strerror}", file=str(self.path)) from None
        return rec

    def _write(self, line: bytes, sync: bool) -> None:
        assert self.path is not None
        created = not self.path.exists()
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o640)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line  # fence off a torn last line
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view):]
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        if created and sync:
            self._fsync_dir()

    def _fsync_dir(self) -> None:
        """Make a new file's name durable too."""
        assert self.path is not None
        dfd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)

    def check_writable(self) -> None:
        """InputError now, rather than at the first decision, if the log cannot be appended to."""
        if self.path is None:
            return
        created = not self.path.exists()
        try:
            os.close(os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640))
            if created:
                self._fsync_dir()
        except OSError as e:
            raise InputError(f"cannot append to the audit log: {e.strerror}", file=str(self.path)) from None

    def sync(self) -> None:
        """fsync the file (after appends made with ``sync=False``)."""
        if self.path is not None and self.path.exists():
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def poll(self) -> list[dict[str, Any]]:
        """Whole records other writers appended since the last poll (all of them, the first time):
        how a runner learns of its predecessor's decisions and of a person's reset."""
        if self.path is None:
            return []
        try:
            with self.path.open("rb") as f:
                st = os.fstat(f.fileno())
                if st.st_ino != self._inode or st.st_size < self._offset:
                    self._inode, self._offset = st.st_ino, 0  # a new or rotated file
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return []
        except OSError as e:
            raise InputError(f"cannot read the audit log: {e.strerror}", file=str(self.path)) from None
        whole = data[: data.rfind(b"\n") + 1]
        self._offset += len(whole)
        records, bad = _parse_lines(whole)
        self.bad_lines += bad
        return [r for r in records if r.get("writer") != self.writer]
