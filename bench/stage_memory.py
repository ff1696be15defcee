"""Where ``suanli diagnose --db X`` spends its time and memory, by pipeline part.

Runs the diagnosis in this process with ``suanli.pipeline.stages._timed`` wrapped, and a thread
that reads the process's RSS (``/proc/self/statm``) every 0.2 s. Prints, per part (ledger,
health, fabric, job_events, nvswitch, rules, decisions), its wall time and the highest RSS
seen while it ran; ``between`` is the highest RSS outside any part (opening, the window,
correlation, the report). Linux only.

    python bench/stage_memory.py X.duckdb

This is how the 1,280-node hour's map in docs/ingest.md was taken (issue 18: the ledger 13.0 GB,
fabric 10.5 GB).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

_PAGE = os.sysconf("SC_PAGE_SIZE")


def _rss_mib() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * _PAGE // 2**20


def main(db: str) -> None:
    import suanli.pipeline.stages as stages
    from suanli.cli import main as cli

    current = ["between"]
    peak: dict[str, int] = {}
    rows: list[tuple[str, float, int]] = []

    def sample() -> None:
        while True:
            peak[current[0]] = max(peak.get(current[0], 0), _rss_mib())
            time.sleep(0.2)

    threading.Thread(target=sample, daemon=True).start()
    timed = stages._timed

    def wrapped(name: str, fn: Callable[[], Any], errors: list[str], timings: dict[str, float]) -> Any:
        current[0] = name
        try:
            return timed(name, fn, errors, timings)
        finally:
            current[0] = "between"
            rows.append((name, timings.get(name, float("nan")), max(peak.get(name, 0), _rss_mib())))

    stages._timed = wrapped  # type: ignore[assignment]
    sys.argv = ["suanli", "diagnose", "--db", db, "--json"]
    t0 = time.perf_counter()
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink), contextlib.suppress(SystemExit):
        cli()
    total = time.perf_counter() - t0
    print("| part | wall s | peak RSS MiB |\n| --- | ---: | ---: |")
    for name, wall, rss in rows:
        print(f"| {name} | {wall:.1f} | {rss:,} |")
    print(f"| between the parts | | {peak.get('between', 0):,} |\n\ntotal {total:.1f} s")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
