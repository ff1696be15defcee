"""How fast the digital twin writes a scenario folder, and how much memory it needs.

Each size runs in its own process (so peak RSS is that run's alone): a 128-node cluster for
20 minutes and a 1,280-node (10,240-GPU) cluster for one hour at a 15 s scrape. Reported: wall
time, peak resident memory, bytes written per file and samples / spans written per second. The
output folder is deleted afterwards.

    python bench/sim.py [--quick]     # --quick: 32 nodes x 10 min and 128 nodes x 20 min
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "sim.md"
FULL = ((128, 20.0), (1280, 60.0))
QUICK = ((32, 10.0), (128, 20.0))
CHILD = """
import sys
from pathlib import Path
from suanli.sim import simulate
simulate("mixed_port_thermal", Path(sys.argv[1]), seed=1, nodes=int(sys.argv[2]), minutes=float(sys.argv[3]))
"""


def _run(nodes: int, minutes: float, tmp: Path) -> dict[str, float]:
    out = tmp / f"n{nodes}"
    t0 = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    subprocess.run([sys.executable, "-c", CHILD, str(out), str(nodes), str(minutes)], check=True)
    wall = time.perf_counter() - t0
    rss_mib = max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before) / 1024.0
    truth = json.loads((out / "truth.json").read_text())
    sizes = {p.name: p.stat().st_size for p in out.iterdir()}
    shutil.rmtree(out)
    return {"nodes": nodes, "minutes": minutes, "wall_s": wall, "rss_mib": rss_mib,
            "metrics_mib": sizes["metrics.om"] / 2**20, "traces_mib": sizes["traces.otlp.jsonl"] / 2**20,
            "samples": truth["files"]["samples"], "spans": truth["files"]["spans"]}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for nodes, minutes in QUICK if args.quick else FULL:
            rows.append(_run(nodes, minutes, Path(tmp)))
            print(rows[-1], flush=True)
    head = "| nodes | GPUs | minutes | wall s | peak RSS MiB | metrics MiB | traces MiB | samples | spans | samples/s |"
    lines = [head, "|" + "---|" * 10]
    for r in rows:
        lines.append(f"| {r['nodes']:.0f} | {r['nodes'] * 8:.0f} | {r['minutes']:.0f} | {r['wall_s']:.1f} | "
                     f"{r['rss_mib']:.0f} | {r['metrics_mib']:.0f} | {r['traces_mib']:.0f} | {r['samples']:.0f} | "
                     f"{r['spans']:.0f} | {r['samples'] / r['wall_s']:.0f} |")
    table = "\n".join(lines)
    print(table)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        "## sim\n\n"
        "`suanli.sim.simulate('mixed_port_thermal', ...)` writing a whole scenario folder (inventory, "
        "OpenMetrics, OTLP JSON lines, logs, truth.json) at a 15 s scrape, one process per size; "
        "peak RSS from `getrusage(RUSAGE_CHILDREN)`.\n\n"
        f"Machine: {platform.machine()}, 2 cores shared with other jobs, Python {platform.python_version()}.\n\n"
        f"{table}\n")


if __name__ == "__main__":
    main()
