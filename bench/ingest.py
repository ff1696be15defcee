"""Ingest benchmark: suanli (DuckDB file) vs ``promtool tsdb create-blocks-from openmetrics``.

Generates an OpenMetrics file with timestamps: 1,024 GPUs (128 nodes x 8) x 20 DCGM metrics with
dcgm-exporter's label set (gpu, UUID, pci_bus_id, device, modelName, Hostname, pod, namespace,
container), 489 scrapes 15 s apart (~10 M samples; the series-major order promtool's backfill
input usually has), then runs each tool as a child process on the same file and reports samples/s,
the ratio and each child's peak RSS (``resource.getrusage(RUSAGE_CHILDREN)`` measured around each
child in its own wrapper process).

``python bench/ingest.py [--samples N]`` (default 10 M); writes ``bench/results/ingest.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "ingest.md"

METRICS = [
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", 1980.0, 15.0),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", 2619.0, 0.0),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", 45.0, 3.0),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", 55.0, 5.0),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", 610.0, 60.0),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).", 0.0, 0.0),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.", 0.0, 0.0),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", 97.0, 3.0),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", 40.0, 10.0),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).", 0.0, 0.0),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).", 0.0, 0.0),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", 0.0, 0.0),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", 2000.0, 300.0),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", 79000.0, 300.0),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors.", 0.0, 0.0),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors.", 0.0, 0.0),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "gauge", "Total NVLink bandwidth for all lanes (in B/s).", 2.4e11, 2e10),
    ("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "gauge", "Current clock throttle reasons (bitmask).", 0.0, 0.0),
    ("DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp assigned.", 0.9, 0.05),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active.", 0.55, 0.1),
]
BUS_IDS = ["18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"]


def label_sets(nodes: int) -> list[str]:
    rng = np.random.default_rng(7)
    out = []
    for n in range(1, nodes + 1):
        for g in range(8):
            u = rng.integers(0, 16, 32)
            h = "".join("0123456789abcdef"[int(x)] for x in u)
            uuid = f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
            out.append(f'gpu="{g}",UUID="{uuid}",pci_bus_id="00000000:{BUS_IDS[g]}:00.0",device="nvidia{g}",'
                       f'modelName="NVIDIA H100 80GB HBM3",Hostname="node-{n:03d}",'
                       f'pod="llama-70b-worker-{(n - 1) * 8 + g}",namespace="training",container="pytorch"')
    return out


def generate(path: Path, samples: int, nodes: int = 128) -> int:
    """Write the file; returns the number of samples written."""
    labels = label_sets(nodes)
    scrapes = max(1, samples // (len(labels) * len(METRICS)))
    t0 = 1773100000.0
    ts = [f"{t0 + 15.0 * i + 0.25:.3f}" for i in range(scrapes)]
    rng = np.random.default_rng(11)
    written = 0
    with path.open("w", encoding="utf-8") as fh:
        for name, kind, help_text, base, jitter in METRICS:
            fh.write(f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n")
            for lab in labels:
                prefix = f"{name}{{{lab}}} "
                if kind == "counter":
                    vals = np.cumsum(rng.integers(0, 3, scrapes)).astype(np.int64)
                    text = [str(v) for v in vals.tolist()]
                elif jitter:
                    text = [f"{v:.6g}" for v in (base + jitter * rng.standard_normal(scrapes)).tolist()]
                else:
                    text = [f"{base:g}"] * scrapes
                fh.write("".join(f"{prefix}{v} {t}\n" for v, t in zip(text, ts, strict=True)))
                written += scrapes
        fh.write("# EOF\n")
    return written


_WRAPPER = """
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
wall = time.perf_counter() - t0
peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"rc": proc.returncode, "wall_s": wall, "peak_rss_kib": peak_kib,
                  "out": proc.stdout[-2000:], "err": proc.stderr[-2000:]}))
"""

_SUANLI = """
import sys
from pathlib import Path
from suanli.ingest.load import load_metrics
from suanli.ingest.records import IngestReport
from suanli.store.duck import DuckStore
store = DuckStore(Path(sys.argv[2]))
report = IngestReport()
load_metrics(Path(sys.argv[1]), store, None, report)
store.close()
import time
store = DuckStore(Path(sys.argv[2]))
t0 = time.perf_counter()
got = store.series("DCGM_FI_DEV_GPU_TEMP", start=1773100000.0 + 600, end=1773100000.0 + 1800)
query_s = time.perf_counter() - t0
assert len(got) == 1024 and len({len(s.ts) for s in got}) == 1, len(got)
print(report.loaded.get("samples", 0), report.rejected, query_s, len(got[0].ts))
"""


def run_child(cmd: list[str]) -> dict[str, float | int | str]:
    """Run ``cmd`` under a wrapper process that reports its wall time and peak RSS (KiB)."""
    env = dict(os.environ, PYTHONPATH=str(HERE.parent / "src"))
    out = subprocess.run([sys.executable, "-c", _WRAPPER, *cmd], capture_output=True, text=True,
                         check=True, env=env)
    result: dict[str, float | int | str] = json.loads(out.stdout)
    if result["rc"] != 0:
        raise RuntimeError(f"{cmd[0]} failed: {result['err']}")
    return result


def main(argv: list[str] | None = None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=10_000_000)
    ap.add_argument("--workdir", type=Path, default=None, help="where the file and outputs go (temp dir)")
    args = ap.parse_args(argv if argv is not None else [])
    promtool = shutil.which("promtool")
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        work = Path(tmp)
        data = work / "dcgm.om"
        t0 = time.perf_counter()
        written = generate(data, args.samples)
        gen_s = time.perf_counter() - t0
        size_mib = data.stat().st_size / 2**20
        rows = []
        suanli = run_child([sys.executable, "-c", _SUANLI, str(data), str(work / "suanli.duckdb")])
        loaded, _, query_s, per_series = str(suanli["out"]).split()[:4]
        if int(loaded) != written:
            raise RuntimeError(f"suanli loaded {loaded} of {written} samples")
        rows.append(("suanli load_metrics (DuckDB file)", suanli))
        if promtool:
            rows.append(("promtool create-blocks-from openmetrics",
                         run_child([promtool, "tsdb", "create-blocks-from", "openmetrics", str(data),
                                    str(work / "prom")])))
    return _report(rows, written, size_mib, gen_s, promtool is not None, float(query_s), int(per_series))


def _report(rows: list[tuple[str, dict[str, float | int | str]]], samples: int, size_mib: float,
            gen_s: float, has_promtool: bool, query_s: float, per_series: int) -> str:
    lines = ["## ingest", "",
             f"What: one OpenMetrics file with timestamps, {samples:,} samples (1,024 GPUs x 20 DCGM "
             f"metrics, dcgm-exporter label sets, {size_mib:,.0f} MiB, generated in {gen_s:.1f} s), "
             "ingested by each tool as a child process; wall time includes process start. Peak RSS "
             "from getrusage(RUSAGE_CHILDREN) of a wrapper around each child.",
             f"Machine: {os.cpu_count()} cores ({platform.machine()}, shared with other jobs), "
             f"Python {platform.python_version()}.", "",
             "| tool | wall s | samples/s | peak RSS MiB |", "| --- | ---: | ---: | ---: |"]
    rates = {}
    for name, r in rows:
        wall = float(r["wall_s"])
        rates[name] = samples / wall
        lines.append(f"| {name} | {wall:.1f} | {samples / wall:,.0f} | {int(r['peak_rss_kib']) / 1024:,.0f} |")
    if has_promtool and len(rates) == 2:
        a, b = rates.values()
        lines += ["", f"suanli / promtool throughput: {a / b:.2f}x"]
    elif not has_promtool:
        lines += ["", "promtool not installed: no comparison."]
    lines += ["", f"Query after reopening the suanli file: DCGM_FI_DEV_GPU_TEMP of 1,024 GPUs over 20 min "
              f"({per_series} samples each, deduplicated, sorted): {query_s * 1000:.0f} ms."]
    text = "\n".join(lines) + "\n"
    print(text)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text, encoding="utf-8")
    return text


if __name__ == "__main__":
    main(sys.argv[1:])
