"""Ingest benchmark: ``suanli ingest`` (DuckDB file) vs ``promtool tsdb create-blocks-from openmetrics``.

Generates OpenMetrics files with timestamps from 128 nodes: dcgm-exporter's 20 families on 8 GPUs a
node (its label set: gpu, UUID, pci_bus_id, device, modelName, Hostname, pod, namespace, container)
and 16 of node-exporter's (cpu/mode, device, fstype/mountpoint, chip/sensor, with instance and job),
every 15 s (~10 M samples each), in both orders a user meets: time order (scrape after scrape, as
concatenated scrapes and time-ordered dumps are) and series order (each series' samples together,
promtool's usual backfill input). Runs each tool as a child process on the same file and reports
samples/s, the ratio and each child's peak RSS (``resource.getrusage(RUSAGE_CHILDREN)`` measured
around each child in its own wrapper process), then checks that suanli stored every sample.

``python bench/ingest.py [--samples N] [--order time|series|both]``; writes ``bench/results/ingest.md``.
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
from dataclasses import dataclass
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
CPU_MODES = ["idle", "iowait", "irq", "nice", "softirq", "steal", "system", "user"]
NETDEVS = [*(f"ib{i}" for i in range(8)), "eth0", "lo"]
DISKS = ["nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1"]
MOUNTS = [("/dev/nvme0n1p2", "ext4", "/"), ("/dev/md0", "xfs", "/raid"), ("tmpfs", "tmpfs", "/dev/shm")]


@dataclass(frozen=True)
class Family:
    """One metric family of one exporter: its series' label texts and how its values move."""

    name: str               # the sample name (a counter's with _total where the exporter writes it)
    kind: str
    help: str
    labels: list[str]
    base: float
    jitter: float           # gauge noise, or a counter's mean increase per scrape
    fmt: str                # "int", "g6" (dcgm-exporter's %g) or "go" (client_golang's shortest 'g')

    def values(self, rng: np.random.Generator, scrapes: int) -> np.ndarray:
        n = len(self.labels)
        if self.kind == "counter":
            start = self.base * rng.random((n, 1))
            steps = rng.exponential(self.jitter, (n, scrapes)) if self.jitter else np.zeros((n, scrapes))
            out = start + np.cumsum(steps, axis=1)
            return np.floor(out) if self.fmt == "int" else out
        out = self.base + self.jitter * rng.standard_normal((n, scrapes))
        return np.round(out) if self.fmt == "int" else out


def _go_float(v: float) -> str:
    """``strconv.FormatFloat(v, 'g', -1, 64)``, which client_golang writes: shortest digits, the
    exponent form from 1e6 up and below 1e-4 (``3.831959552e+09``, ``10870.69``)."""
    if v != 0.0 and not 1e-4 <= abs(v) < 1e6:
        return np.format_float_scientific(v, unique=True, exp_digits=2).replace(".e", "e")
    return repr(v).removesuffix(".0")


def _texts(fam: Family, col: np.ndarray) -> list[str]:
    if fam.fmt == "int":
        return [str(v) for v in col.astype(np.int64).tolist()]
    if fam.fmt == "g6":
        return [f"{v:.6g}" for v in col.tolist()]
    return [_go_float(v) for v in np.round(col, 2).tolist()]


def dcgm_label_sets(nodes: int) -> list[str]:
    """dcgm-exporter's label set per GPU (gpu, UUID, pci_bus_id, device, modelName, Hostname and
    the pod labels its Kubernetes mapping adds)."""
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


def _node_labels(nodes: int, per: list[str]) -> list[str]:
    return [f'{p}{"," if p else ""}instance="node-{n:03d}:9100",job="node-exporter"'
            for n in range(1, nodes + 1) for p in per]


def families(nodes: int) -> list[Family]:
    """dcgm-exporter's 20 families (8 GPUs a node) and 16 of node-exporter's, with its label sets
    (cpu/mode, device, fstype/mountpoint, chip/sensor; instance and job as Prometheus adds them):
    160 + 310 series a node."""
    gpus = dcgm_label_sets(nodes)
    fams = [Family(name, kind, help_text, gpus, base, jitter, "int" if kind == "counter" or not jitter else "g6")
            for name, kind, help_text, base, jitter in METRICS]
    cpus = [f'cpu="{c}",mode="{m}"' for c in range(32) for m in CPU_MODES]
    nets = [f'device="{d}"' for d in NETDEVS]
    disks = [f'device="{d}"' for d in DISKS]
    mounts = [f'device="{d}",fstype="{f}",mountpoint="{m}"' for d, f, m in MOUNTS]
    hwmon = [f'chip="platform_coretemp_{c}",sensor="temp{s}"' for c in range(2) for s in range(1, 5)]
    node = [
        ("node_cpu_seconds_total", "counter", "Seconds the CPUs spent in each mode.", cpus, 1e6, 1.8, "go"),
        ("node_network_receive_bytes_total", "counter", "Network device statistic receive_bytes.", nets, 1e12, 4e9, "go"),
        ("node_network_transmit_bytes_total", "counter", "Network device statistic transmit_bytes.", nets, 1e12, 4e9, "go"),
        ("node_network_receive_errs_total", "counter", "Network device statistic receive_errs.", nets, 10, 0.0, "int"),
        ("node_disk_read_bytes_total", "counter", "The total number of bytes read successfully.", disks, 1e11, 2e8, "go"),
        ("node_disk_written_bytes_total", "counter", "The total number of bytes written successfully.", disks, 1e11, 1e8, "go"),
        ("node_disk_io_time_seconds_total", "counter", "Total seconds spent doing I/Os.", disks, 1e5, 3.0, "go"),
        ("node_filesystem_avail_bytes", "gauge", "Filesystem space available to non-root users in bytes.", mounts, 1.2e12, 1e6, "go"),
        ("node_filesystem_size_bytes", "gauge", "Filesystem size in bytes.", mounts, 3.8e12, 0.0, "go"),
        ("node_hwmon_temp_celsius", "gauge", "Hardware monitor for temperature (input)", hwmon, 52.0, 4.0, "go"),
        ("node_memory_MemAvailable_bytes", "gauge", "Memory information field MemAvailable_bytes.", [""], 1.6e12, 1e9, "go"),
        ("node_memory_MemTotal_bytes", "gauge", "Memory information field MemTotal_bytes.", [""], 2.1e12, 0.0, "go"),
        ("node_memory_Cached_bytes", "gauge", "Memory information field Cached_bytes.", [""], 3e11, 1e8, "go"),
        ("node_load1", "gauge", "1m load average.", [""], 24.0, 2.0, "go"),
        ("node_load5", "gauge", "5m load average.", [""], 24.0, 1.0, "go"),
        ("node_load15", "gauge", "15m load average.", [""], 24.0, 0.5, "go"),
    ]
    return fams + [Family(name, kind, help_text, _node_labels(nodes, per), base, jitter, fmt)
                   for name, kind, help_text, per, base, jitter, fmt in node]


def generate(path: Path, samples: int, order: str = "time", nodes: int = 128) -> int:
    """Write the file in ``order``: ``time`` (scrape after scrape, every family with its HELP and
    TYPE and every series at that scrape's time, as concatenated scrapes or a time-ordered
    dump are) or ``series`` (each series' samples together, the order promtool's backfill input
    usually has); returns the number of samples written."""
    fams = families(nodes)
    per_scrape = sum(len(f.labels) for f in fams)
    scrapes = max(1, samples // per_scrape)
    t0 = 1773100000.0
    ts = [f"{t0 + 15.0 * i + 0.25:.3f}" for i in range(scrapes)]
    values = [f.values(np.random.default_rng([11, i]), scrapes) for i, f in enumerate(fams)]
    heads = [f"# HELP {f.name.removesuffix('_total') if f.kind == 'counter' else f.name} {f.help}\n"
             f"# TYPE {f.name.removesuffix('_total') if f.kind == 'counter' else f.name} {f.kind}\n" for f in fams]
    prefixes = [[f"{f.name}{{{lab}}} " if lab else f"{f.name} " for lab in f.labels] for f in fams]
    with path.open("w", encoding="utf-8") as fh:
        if order == "time":
            for j, t in enumerate(ts):
                for f, head, pre, vals in zip(fams, heads, prefixes, values, strict=True):
                    fh.write(head)
                    fh.write("".join(f"{p}{v} {t}\n" for p, v in zip(pre, _texts(f, vals[:, j]), strict=True)))
        else:
            for f, head, pre, vals in zip(fams, heads, prefixes, values, strict=True):
                fh.write(head)
                for p, row in zip(pre, vals, strict=True):
                    fh.write("".join(f"{p}{v} {t}\n" for v, t in zip(_texts(f, row), ts, strict=True)))
        fh.write("# EOF\n")
    return scrapes * per_scrape


_WRAPPER = """
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
wall = time.perf_counter() - t0
use = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": proc.returncode, "wall_s": wall, "cpu_s": use.ru_utime + use.ru_stime,
                  "peak_rss_kib": use.ru_maxrss, "out": proc.stdout[-2000:], "err": proc.stderr[-2000:]}))
"""

_CHECK = """
import json, sys, time
from pathlib import Path
from suanli.store.duck import DuckStore
store = DuckStore(Path(sys.argv[1]))
n = store.con.execute("SELECT count(*) FROM samples").fetchall()[0][0]
t0 = time.perf_counter()
got = store.series("DCGM_FI_DEV_GPU_TEMP", start=1773100000.0, end=1773100000.0 + float(sys.argv[2]))
query_s = time.perf_counter() - t0
assert len(got) == 1024 and len({len(s.ts) for s in got}) == 1, len(got)
print(n, query_s, len(got[0].ts))
"""

_PHASES = """
import json, sys, time
t0 = time.perf_counter()
from pathlib import Path
import duckdb
from suanli.ingest import bulk_om
from suanli.ingest.openmetrics import OpenMetricsConfig
from suanli.ingest.records import IngestReport
from suanli.store.duck import DuckStore
from suanli.store.duck.txn import DuckTransaction
spent = {"start-up (imports)": time.perf_counter() - t0}

def timed(owner, name, label):
    f = getattr(owner, name)
    def g(*a, **k):
        t = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            spent[label] = spent.get(label, 0.0) + time.perf_counter() - t
    setattr(owner, name, g)

timed(bulk_om, "_pass_a", "pass A: group the lines by series (DuckDB CSV)")
timed(bulk_om, "_plan", "resolve each series once (Python)")
timed(DuckTransaction, "_insert", "pass B: parse numbers and insert into the file")
timed(DuckTransaction, "commit", "commit")
path, db = Path(sys.argv[1]), Path(sys.argv[2])
store = DuckStore(db)
report = IngestReport()
with store.transaction(str(path)) as txn:
    assert bulk_om.load_openmetrics(path, txn, None, report)
    txn.commit(report)
store.close()
con = duckdb.connect(":memory:")
t = time.perf_counter()
rows = sum(b.num_rows for b in con.sql(bulk_om._sample_rows(path, 1e-3, 1.7e9, OpenMetricsConfig())).to_arrow_reader(1 << 20))
spent["of which pass B's parse alone (to Arrow, measured apart)"] = time.perf_counter() - t
print(json.dumps(spent))
"""


def phases(data: Path, db: Path) -> dict[str, float]:
    """Where suanli's ingest of ``data`` spends its time, phase by phase, in a child process."""
    env = dict(os.environ, PYTHONPATH=str(HERE.parent / "src"))
    out = subprocess.run([sys.executable, "-c", _PHASES, str(data), str(db)], capture_output=True, text=True,
                         check=True, env=env)
    result: dict[str, float] = json.loads(out.stdout)
    return result


def run_child(cmd: list[str]) -> dict[str, float | int | str]:
    """Run ``cmd`` under a wrapper process that reports its wall time, CPU time and peak RSS (KiB):
    the wrapper's only child is ``cmd``, so the figures are that one child's."""
    env = dict(os.environ, PYTHONPATH=str(HERE.parent / "src"))
    out = subprocess.run([sys.executable, "-c", _WRAPPER, *cmd], capture_output=True, text=True,
                         check=True, env=env)
    result: dict[str, float | int | str] = json.loads(out.stdout)
    if result["rc"] != 0:
        raise RuntimeError(f"{cmd[0]} failed: {result['err']}")
    return result


def measure(work: Path, order: str, samples: int, promtool: str | None) -> dict[str, object]:
    """Generate one file in ``order`` and ingest it with each tool."""
    data = work / f"{order}.om"
    t0 = time.perf_counter()
    written = generate(data, samples, order)
    gen_s = time.perf_counter() - t0
    size_mib = data.stat().st_size / 2**20
    rows = []
    db = work / f"{order}.duckdb"
    suanli = run_child([sys.executable, "-m", "suanli.cli", "ingest", str(data), "--db", str(db)])
    env = dict(os.environ, PYTHONPATH=str(HERE.parent / "src"))
    span_s = min(1200.0, 15.0 * (written // sum(len(f.labels) for f in families(128))))
    check = subprocess.run([sys.executable, "-c", _CHECK, str(db), str(span_s)], capture_output=True, text=True, env=env)
    if check.returncode:
        raise RuntimeError(f"reading back suanli's file failed: {check.stderr[-2000:]}")
    loaded, query_s, per_series = check.stdout.split()[:3]
    if int(loaded) != written:
        raise RuntimeError(f"suanli stored {loaded} of {written} samples of the {order}-ordered file: {suanli['out']}")
    rows.append(("suanli ingest (DuckDB file)", suanli))
    if promtool:
        rows.append(("promtool tsdb create-blocks-from openmetrics",
                     run_child([promtool, "tsdb", "create-blocks-from", "openmetrics", str(data), str(work / f"{order}.prom")])))
    spent = phases(data, work / f"{order}-phases.duckdb")
    data.unlink()
    return {"order": order, "rows": rows, "samples": written, "size_mib": size_mib, "gen_s": gen_s,
            "query_s": float(query_s), "per_series": int(per_series), "span_s": span_s, "phases": spent}


def main(argv: list[str] | None = None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=10_000_000)
    ap.add_argument("--order", choices=("time", "series", "both"), default="both")
    ap.add_argument("--workdir", type=Path, default=None, help="where the files and outputs go (temp dir)")
    args = ap.parse_args(argv if argv is not None else [])
    promtool = shutil.which("promtool")
    orders = ["time", "series"] if args.order == "both" else [args.order]
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        runs = [measure(Path(tmp), order, args.samples, promtool) for order in orders]
    return _report(runs, promtool is not None)


def _report(runs: list[dict[str, object]], has_promtool: bool) -> str:
    fams = families(128)
    series = sum(len(f.labels) for f in fams)
    lines = ["## ingest", "",
             f"What: OpenMetrics files with timestamps from 128 nodes: dcgm-exporter's 20 families on 8 GPUs a node "
             f"and 16 of node-exporter's, with their label sets ({series:,} series, {series // 128} a node), "
             "every 15 s; written in time order (scrape after scrape, HELP and TYPE with each, as "
             "concatenated scrapes and time-ordered dumps are) and in series order (promtool's usual backfill "
             "input). Each tool ingests each file as a child process; wall time includes process start; peak "
             "RSS from getrusage(RUSAGE_CHILDREN) of a wrapper around each child.",
             f"Machine: {os.cpu_count()} cores ({platform.machine()}), Python {platform.python_version()}.", "",
             "| order | tool | samples | MiB | wall s | samples/s | peak RSS MiB |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    ratios = []
    for run in runs:
        samples = int(run["samples"])                       # type: ignore[call-overload]
        rates = []
        for name, r in run["rows"]:                         # type: ignore[attr-defined]
            wall = float(r["wall_s"])
            rates.append(samples / wall)
            lines.append(f"| {run['order']} | {name} | {samples:,} | {run['size_mib']:,.0f} | {wall:.1f} | "
                         f"{samples / wall:,.0f} | {int(r['peak_rss_kib']) / 1024:,.0f} |")
        if len(rates) == 2:
            ratios.append(f"{run['order']} order {rates[0] / rates[1]:.2f}x")
    lines += ["", "suanli / promtool throughput: " + ", ".join(ratios) if has_promtool and ratios
              else "promtool not installed: no comparison."]
    for run in runs:
        lines.append(f"Query after reopening suanli's file ({run['order']} order): DCGM_FI_DEV_GPU_TEMP of 1,024 GPUs "
                     f"over {float(run['span_s']) / 60:.0f} min ({run['per_series']} samples each, deduplicated, sorted): "
                     f"{float(run['query_s']) * 1000:.0f} ms.")   # type: ignore[arg-type]
    for run in runs:
        spent = run["phases"]
        lines += ["", f"Where suanli's time goes ({run['order']} order, in a child process of its own, wall s):", "",
                  "| phase | s |", "| --- | ---: |"]
        lines += [f"| {name} | {s:.2f} |" for name, s in spent.items()]   # type: ignore[attr-defined]
    text = "\n".join(lines) + "\n"
    print(text)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text, encoding="utf-8")
    return text


if __name__ == "__main__":
    main(sys.argv[1:])
