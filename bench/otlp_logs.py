"""OTLP span and log-line parsing throughput (``suanli.ingest.otlp``, ``suanli.ingest.logs``).

Generates, in a temporary folder:

- a 128-node job's spans (1,024 ranks x ``--steps`` steps x 6 spans: ``train_step`` and its five
  phases, children first as the probe writes them) as OTLP/JSON lines (one request per step and
  node, the Collector file-exporter layout) and the same requests as length-delimited protobuf;
- a kernel log in journalctl short-iso-precise form: an Xid 95 storm (identical lines but the pid,
  10 ms apart, over 3 GPUs) mixed with unrelated kernel lines and 4-line AER reports;

then times ``read_otlp`` / ``read_log`` over them (no inventory: parsing, merging, inheritance,
classification and collapse, not resolution) and the public scenarios when ../shared is there.

``python bench/otlp_logs.py [--steps N] [--storm N]``; writes ``bench/results/otlp_logs.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from suanli.ingest.logs import read_log
from suanli.ingest.otlp import read_otlp
from suanli.ingest.records import IngestReport

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "otlp_logs.md"
SHARED = HERE.parent.parent / "shared" / "scenarios"
PHASES = ("data_load", "forward", "backward", "allreduce", "optimizer")


def _kv(key: str, value: object) -> dict[str, object]:
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": str(value)}}


def write_spans(path: Path, nodes: int, steps: int) -> int:
    """JSON lines, one request per (step, node) holding the node's 8 ranks; returns the span count."""
    n = 0
    t0 = 1_773_769_158_000_000_000
    with path.open("w") as fh:
        for step in range(steps):
            for node in range(nodes):
                resources = []
                for g in range(8):
                    rank = node * 8 + g
                    start = t0 + step * 5_000_000_000
                    parent = f"{(step << 20 | rank):016x}"
                    spans = [{"traceId": f"{step:032x}", "spanId": f"{(step << 20 | rank) + (i + 1 << 40):016x}",
                              "parentSpanId": parent, "name": ph, "kind": 1,
                              "startTimeUnixNano": str(start + i * 900_000_000),
                              "endTimeUnixNano": str(start + (i + 1) * 900_000_000)}
                             for i, ph in enumerate(PHASES)]
                    spans.append({"traceId": f"{step:032x}", "spanId": parent, "name": "train_step", "kind": 1,
                                  "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 4_500_000_000),
                                  "attributes": [_kv("train.step", 1000 + step)]})
                    attrs = {"job.id": "llama-70b", "framework.pytorch.rank": rank, "host.name": f"node-{node + 1:03d}",
                             "resource.gpu.id": f"node-{node + 1:03d}/gpu{g}", "nccl.group_id": "dp", "nccl.rank": rank}
                    resources.append({"resource": {"attributes": [_kv(k, v) for k, v in attrs.items()]},
                                      "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}]})
                    n += len(spans)
                fh.write(json.dumps({"resourceSpans": resources}) + "\n")
    return n


def write_proto(json_path: Path, out: Path) -> None:
    from google.protobuf import json_format
    from google.protobuf.internal.encoder import _VarintBytes  # type: ignore[attr-defined]
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

    with json_path.open() as src, out.open("wb") as dst:
        for line in src:
            req = trace_service_pb2.ExportTraceServiceRequest()
            doc = json.loads(line)
            for rs in doc["resourceSpans"]:       # protobuf's JSON mapping wants base64 ids
                for ss in rs["scopeSpans"]:
                    for sp in ss["spans"]:
                        for k in ("traceId", "spanId", "parentSpanId"):
                            if k in sp:
                                sp[k] = __import__("base64").b64encode(bytes.fromhex(sp[k])).decode()
            json_format.ParseDict(doc, req)
            data = req.SerializeToString()
            dst.write(_VarintBytes(len(data)) + data)


def write_kernel_log(path: Path, storm: int) -> int:
    t = datetime(2026, 3, 15, 2, 0, 0, tzinfo=UTC)
    n = 0
    with path.open("w") as fh:
        for i in range(storm):
            t += timedelta(seconds=0.01)
            stamp = t.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")
            bus = ("3b", "5d", "9a")[i % 3]
            fh.write(f"{stamp} node-{i % 128 + 1:03d} kernel: NVRM: Xid (PCI:0000:{bus}:00): 95, pid={1000 + i}, "
                     "name=python, Uncontained: FBHUB. RST: Yes, D-RST: No\n")
            n += 1
            if i % 50 == 0:
                fh.write(f"{stamp} node-{i % 97 + 1:03d} kernel: IPv6: ADDRCONF(NETDEV_CHANGE): cali{i:011x}: "
                         "link becomes ready\n")
                p = f"{stamp} node-002 kernel: pcieport 0000:aa:01.0:"
                fh.write(f"{p} AER: Multiple Correctable error message received from 0000:ab:00.0\n"
                         f"{p} PCIe Bus Error: severity=Correctable, type=Physical Layer, (Receiver ID)\n"
                         f"{p}   device [10b5:c010] error status/mask=00000001/0000e000\n{p}    [ 0] RxErr\n")
                n += 5
    return n


def _time(fn: object, *args: object) -> tuple[float, int, IngestReport]:
    report = IngestReport()
    t = time.perf_counter()
    count = sum(1 for _ in fn(*args, None, report))  # type: ignore[operator]
    return time.perf_counter() - t, count, report


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--storm", type=int, default=200_000)
    args = ap.parse_args()
    rows: list[tuple[str, int, int, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        jpath, ppath, kpath = Path(tmp) / "t.otlp.jsonl", Path(tmp) / "t.bin", Path(tmp) / "kernel.log"
        n_spans = write_spans(jpath, 128, args.steps)
        write_proto(jpath, ppath)
        n_lines = write_kernel_log(kpath, args.storm)
        dt, n, _ = _time(read_otlp, jpath)
        rows.append((f"OTLP/JSON lines, 128 nodes x {args.steps} steps ({jpath.stat().st_size / 1e6:.0f} MB)",
                     n_spans, n, dt))
        dt, n, _ = _time(read_otlp, ppath)
        rows.append((f"OTLP protobuf, delimited ({ppath.stat().st_size / 1e6:.0f} MB)", n_spans, n, dt))
        dt, n, _ = _time(read_log, kpath)
        rows.append((f"kernel.log, Xid 95 storm + AER + noise ({kpath.stat().st_size / 1e6:.0f} MB)", n_lines, n, dt))
    for name in ("healthy", "switch_port_errors", "pcie_riser"):
        folder = SHARED / name
        if folder.is_dir():
            dt, n, _ = _time(read_otlp, folder / "traces.otlp.jsonl")
            rows.append((f"public scenario {name}: traces.otlp.jsonl", n, n, dt))
    lines = ["| input | records in | records out | seconds | records in / s |", "| --- | ---: | ---: | ---: | ---: |"]
    lines += [f"| {name} | {n_in:,} | {n_out:,} | {dt:.2f} | {n_in / dt:,.0f} |" for name, n_in, n_out, dt in rows]
    text = "\n".join([
        "## otlp_logs", "",
        "Parsing throughput of `read_otlp` (spans: JSON lines and length-delimited protobuf, merge of resource and",
        "span attributes, parent inheritance) and `read_log` (heads, records, classification, AER merge, collapse);",
        "no inventory (resolution is a cached dict lookup). Records out for the log are events after collapse.",
        f"Machine: {platform.machine()}, {os.cpu_count()} logical CPUs seen (a 2-core share), "
        f"Python {platform.python_version()}; load average {os.getloadavg()[0]:.1f} while it ran (shared machine).",
        "", *lines, ""])
    print(text)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text)


if __name__ == "__main__":
    main()
