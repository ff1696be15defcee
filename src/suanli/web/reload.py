"""Files re-read when they change (the inventory, the rule files), the last good version kept.

A :class:`Reloader` loads once at start (an error there is the user's to fix and is raised), then
:meth:`~Reloader.check` compares each file's (device, inode, size, mtime) with what it loaded:
on a change it loads again; when the new version is invalid (an ``InputError``, ``file:line:
what``) the old value stays in force and the error is kept in ``last_error`` for the status page.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Generic, TypeVar

from suanli.errors import InputError

__all__ = ["Reloader"]

T = TypeVar("T")
_Stamp = tuple[int, int, int, int] | None


def _stamp(path: Path) -> _Stamp:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


class Reloader(Generic[T]):
    """``value`` is ``load()`` of the current files; ``on_change(value)`` is called after each reload."""

    def __init__(self, paths: Sequence[str | os.PathLike[str]], load: Callable[[], T],
                 on_change: Callable[[T], None] | None = None) -> None:
        self.paths = [Path(p) for p in paths]
        self.load, self.on_change = load, on_change
        self._stamps = [_stamp(p) for p in self.paths]
        self.value = load()
        self.last_error: str | None = None
        self.reloads = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def check(self) -> bool:
        """Reload if a file changed; True when a new value is in force."""
        stamps = [_stamp(p) for p in self.paths]
        if stamps == self._stamps:
            return False
        self._stamps = stamps
        try:
            value = self.load()
        except InputError as exc:
            self.last_error = str(exc)
            return False
        self.value, self.last_error = value, None
        self.reloads += 1
        if self.on_change is not None:
            self.on_change(value)
        return True

    def start(self, interval_s: float) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, args=(interval_s,), name="suanli-reload", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10.0)

    def _loop(self, interval_s: float) -> None:
        while not self._stop.wait(interval_s):
            try:
                self.check()
            except Exception as exc:  # on_change's fault: kept for the status page, the watch goes on
                self.last_error = f"{type(exc).__name__}: {exc}"
