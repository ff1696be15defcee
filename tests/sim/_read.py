"""Small readers for the scenario folders the twin writes (independent of the project's ingest)."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from suanli.timefmt import parse_time

LABEL = re.compile(r'(\w+)="([^"]*)"')


def metrics(d: Path, family: str) -> dict[tuple[tuple[str, str], ...], list[tuple[float, float]]]:
    """Samples of one family: label items -> [(ts, value)] in file order."""
    out: dict[tuple[tuple[str, str], ...], list[tuple[float, float]]] = defaultdict(list)
    prefix = family + "{"
    with (d / "metrics.om").open() as f:
        for line in f:
            if line.startswith(prefix):
                lab, v, ts = line.rsplit(" ", 2)
                out[tuple(sorted(LABEL.findall(lab)))].append((float(ts), float(v)))
    return out


def by(series: dict[tuple[tuple[str, str], ...], list[tuple[float, float]]], *keys: str) -> dict[tuple[str, ...], list[tuple[float, float]]]:
    """Re-keys series by the values of some labels."""
    out = {}
    for lab, samples in series.items():
        d = dict(lab)
        out[tuple(d[k] for k in keys)] = samples
    return out


def growth(samples: list[tuple[float, float]]) -> float:
    """Counter increase with Prometheus' reset rule."""
    total, prev = 0.0, None
    for _, v in sorted(samples):
        if prev is not None and v == v:
            total += v - prev if v >= prev else v
        if v == v:
            prev = v
    return total


def spans(d: Path) -> list[dict[str, Any]]:
    """Every span with its resource attributes folded in (job.id, rank, host)."""
    out = []
    for line in (d / "traces.otlp.jsonl").read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            res = {a["key"]: next(iter(a["value"].values())) for a in rs["resource"]["attributes"]}
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    out.append({"name": s["name"], "job": res["job.id"], "rank": int(res["framework.pytorch.rank"]),
                                "start": int(s["startTimeUnixNano"]) / 1e9, "end": int(s["endTimeUnixNano"]) / 1e9})
    return out


def truth(d: Path) -> dict[str, Any]:
    t: dict[str, Any] = json.loads((d / "truth.json").read_text())
    for f in t["faults"]:
        f["start_s"] = parse_time(f["start"])
    return t


HGX_GPU_BUS = ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")   # PCI bus of GPU 0..7 on an HGX board


def entity(lab: tuple[tuple[str, str], ...]) -> str:
    """The part a series is about, from its exporter labels (GPU, NIC or switch port)."""
    d = dict(lab)
    host = d.get("Hostname") or d.get("hostname") or d.get("node") or d.get("instance", "").split(":")[0]
    if "gpu" in d:
        return f"{host}/gpu{d['gpu']}"
    if "pci_bus_id" in d:
        gpu = f"{host}/gpu{HGX_GPU_BUS.index(d['pci_bus_id'].split(':')[1])}"
        return gpu if d.get("severity") != "uncorrected" else gpu + "~uncorrected"
    if "device" in d or "nic" in d:
        return f"{host}/{d.get('device') or d['nic']}"
    return f"{d['switch']}/{d['port']}"


def series_by_entity(series: dict[tuple[tuple[str, str], ...], list[tuple[float, float]]]) -> dict[str, list[tuple[float, float]]]:
    return {entity(lab): s for lab, s in series.items()}
