"""glibc keeps big freed blocks for reuse in suanli's processes: a second 256 MiB array after the
first was freed costs no fresh pages (counted as the kernel's minor page faults), where by default
it costs all 65,536 of them again; the user's MALLOC_* environment wins."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

_PROBE = """
import resource, sys
import numpy as np
from suanli.cli.hugepages import avoid_hugepage_faults
from suanli.cli.malloc import hold_freed_memory
avoid_hugepage_faults()
held = hold_freed_memory() if sys.argv[1] == "hold" else False
if sys.argv[1] == "main":            # the console script applies it
    from suanli.cli import main
    sys.argv = ["suanli", "--version"]
    try:
        main()
    except SystemExit:
        pass
a = np.ones(1 << 25)                 # 256 MiB, touched
del a
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
b = np.ones(1 << 25)
print(held, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""

PAGES = (1 << 28) // os.sysconf("SC_PAGE_SIZE")


def _faults(mode: str, **env: str) -> tuple[str, int]:
    child = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    child.update(env)
    run = subprocess.run([sys.executable, "-c", _PROBE, mode], env=child, capture_output=True, text=True,
                         timeout=120, check=True)
    held, faults = run.stdout.splitlines()[-1].split()         # after what --version printed
    return held, int(faults)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_a_freed_array_is_reused_without_fresh_pages() -> None:
    held, faults = _faults("hold")
    assert held == "True" and faults < PAGES // 20
    default_held, default_faults = _faults("default")
    assert default_held == "False" and default_faults > PAGES * 9 // 10
    assert _faults("main")[1] < PAGES // 20


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_the_users_malloc_settings_win() -> None:
    held, faults = _faults("hold", MALLOC_MMAP_MAX_="65536")
    assert held == "False" and faults > PAGES * 9 // 10
