"""glibc's allocator kept from handing every big freed block straight back to the kernel (issue 18).

By default glibc serves each allocation of 32 MiB or more with its own ``mmap`` and unmaps it on
``free``. suanli's big arrays (a job's spans as columns, masks and sort orders over them) are
short-lived temporaries of a few hundred MB each, so every one of them was fresh pages the kernel
had to fault in and zero: a third of the 1,280-node hour's wall time was system time. With
``mmap`` off for them (``M_MMAP_MAX`` 0) they come from the heap, and up to ``TRIM_BYTES`` freed at
its top is kept for the next one (``M_TRIM_THRESHOLD``). Measured on that hour (``suanli diagnose
--db``, the same JSON): 121 s wall, 45 s system, 6.64 GB peak by default; 109 s, 31 s, 6.74 GB
with these two settings (keeping every freed byte: 104 s at 7.05 GB).

The user's own ``MALLOC_*`` environment or ``GLIBC_TUNABLES`` wins (glibc read them at start);
on a C library without ``mallopt`` (musl, macOS) nothing changes.
"""

from __future__ import annotations

import ctypes
import os
import sys

__all__ = ["TRIM_BYTES", "hold_freed_memory"]

M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4
TRIM_BYTES = 1 << 30
"""Freed memory at the top of the heap kept for reuse rather than returned (1 GiB)."""

_USER_SETTINGS = ("MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES")


def hold_freed_memory() -> bool:
    """Apply the two settings (see the module docstring); True when glibc took both."""
    if not sys.platform.startswith("linux") or any(v in os.environ for v in _USER_SETTINGS):
        return False
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return False
    if not hasattr(libc, "gnu_get_libc_version") or not hasattr(libc, "mallopt"):   # glibc's only
        return False
    mallopt = libc.mallopt
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_BYTES))
