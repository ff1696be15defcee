"""PyTorch profiler (Kineto) traces -> device-activity Spans, and HTA-style breakdowns of them.

A Kineto trace is Chrome-trace JSON (optionally gzipped): ``traceEvents`` with ``ph: "X"``
complete events whose ``ts``/``dur`` are microseconds. Device activity is the events of the
categories in ``KinetoConfig.device_cats`` (``kernel``, ``gpu_memcpy``, ``gpu_memset``, and
``mtia_ccp_events`` for Meta's MTIA). Each becomes a :class:`Span` with ``attrs["kind"]`` one of
``communication`` (collective kernels: names starting ``nccl``, or ``gloo:``), ``memory``
(``Memcpy`` / ``Memset`` in the name, or a memcpy / memset category) or ``compute`` (the rest),
following HTA's ``get_kernel_type``. The rank comes from ``distributedInfo.rank``.

``kernel_breakdown`` then reproduces HTA's temporal breakdown and communication/computation
overlap on those spans with the union-of-intervals algebra the ledger uses.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from suanli.errors import InputError
from suanli.ingest.records import IngestReport, Span

__all__ = ["KernelBreakdown", "KinetoConfig", "kernel_breakdown", "kernel_kind", "read_kineto"]


@dataclass(frozen=True)
class KinetoConfig:
    """Which trace events are device activity and how kernels are classified."""

    device_cats: tuple[str, ...] = ("kernel", "gpu_memcpy", "gpu_memset", "mtia_ccp_events")
    """Event categories (case-insensitive) that run on the device."""
    comm_prefixes: tuple[str, ...] = ("nccl", "gloo:")
    """Kernel-name prefixes of collective-communication kernels (HTA: ``is_comm_kernel``)."""
    memory_words: tuple[str, ...] = ("Memcpy", "Memset", "dma_request")
    """Substrings of memory-kernel names (HTA: ``is_memory_kernel``; MTIA DMA transfers too)."""
    require_stream: bool = True
    """Keep only device events that name a stream (HTA drops those with ``stream`` -1)."""
    launch_cats: tuple[str, ...] = ("cuda_runtime", "mtia_runtime", "cuda_driver")
    """Host categories whose events launch device work (joined on ``args.correlation``)."""


def kernel_kind(name: str, cat: str = "kernel", config: KinetoConfig = KinetoConfig()) -> str:
    """``communication`` | ``memory`` | ``compute`` for one device event."""
    if name.startswith(config.comm_prefixes):
        return "communication"
    if any(w in name for w in config.memory_words) or cat.lower() in ("gpu_memcpy", "gpu_memset"):
        return "memory"
    return "compute"


def _load(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        doc = json.loads(raw)
    except (OSError, EOFError, ValueError) as exc:
        raise InputError(f"not a readable Kineto trace: {exc}", file=str(path)) from exc
    if isinstance(doc, list):
        doc = {"traceEvents": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise InputError("no traceEvents list", file=str(path), key="traceEvents")
    return doc


def _rank(doc: dict[str, Any]) -> int | None:
    info = doc.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), int):
        return int(info["rank"])
    return None


class _Iterations:
    """``ProfilerStep#N`` windows on the host and the host launch time of each correlation id."""

    def __init__(self, events: list[Any], cfg: KinetoConfig) -> None:
        steps: list[tuple[float, float, int]] = []
        self.launch_us: dict[Any, float] = {}
        launch = {c.lower() for c in cfg.launch_cats}
        for ev in events:
            if not isinstance(ev, dict) or ev.get("ph") != "X":
                continue
            name = str(ev.get("name", ""))
            try:
                if name.startswith("ProfilerStep#"):
                    ts = float(ev["ts"])
                    steps.append((ts, ts + float(ev["dur"]), int(name.split("#", 1)[1])))
                elif str(ev.get("cat", "")).lower() in launch and isinstance(ev.get("args"), dict):
                    self.launch_us[ev["args"].get("correlation")] = float(ev["ts"])
            except (KeyError, TypeError, ValueError):
                continue
        steps.sort()
        self.start = np.array([s[0] for s in steps])
        self.end = np.array([s[1] for s in steps])
        self.number = [s[2] for s in steps]

    def of(self, correlation: Any, ts_us: float) -> int | None:
        """The profiler step whose host window holds the launch (else the event itself)."""
        t = self.launch_us.get(correlation, ts_us) if correlation is not None else ts_us
        i = int(np.searchsorted(self.start, t, side="right")) - 1
        return self.number[i] if i >= 0 and t <= self.end[i] else None


def _event_span(ev: dict[str, Any], i: int, rank: int | None, job_id: str | None, cfg: KinetoConfig,
                source: str, iters: _Iterations) -> Span:
    args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
    assert isinstance(args, dict)
    ts_us, dur_us = float(ev["ts"]), float(ev["dur"])
    if not (np.isfinite(ts_us) and np.isfinite(dur_us)) or dur_us < 0:
        raise ValueError("ts/dur not finite and non-negative")
    name = str(ev.get("name", ""))
    cat = str(ev.get("cat", ""))
    attrs: dict[str, Any] = {"kind": kernel_kind(name, cat, cfg), "cat": cat,
                             "stream": args.get("stream"), "device": args.get("device"),
                             "correlation": args.get("correlation")}
    return Span(trace_id=source, span_id=str(i), parent_id=None, name=name,
                start_s=ts_us / 1e6, end_s=(ts_us + dur_us) / 1e6, job_id=job_id, rank=rank,
                step=iters.of(args.get("correlation"), ts_us), gpu_id=None, node_id=None,
                attrs=attrs)


def read_kineto(path: str | Path, job_id: str | None = None, config: KinetoConfig = KinetoConfig(),
                report: IngestReport | None = None) -> list[Span]:
    """Device-activity spans of one Kineto trace (times in seconds on the trace's own clock).

    A file that is not a trace raises InputError; a bad event is rejected into ``report``
    (``file:event N: what``) and the others are kept.
    """
    p = Path(path)
    doc = _load(p)
    rank = _rank(doc)
    cats = {c.lower() for c in config.device_cats}
    iters = _Iterations(doc["traceEvents"], config)
    spans: list[Span] = []
    for i, ev in enumerate(doc["traceEvents"]):
        if not isinstance(ev, dict) or ev.get("ph") != "X" or str(ev.get("cat", "")).lower() not in cats:
            continue
        if config.require_stream and not (isinstance(ev.get("args"), dict) and "stream" in ev["args"]):
            continue
        try:
            spans.append(_event_span(ev, i, rank, job_id, config, p.name, iters))
        except (KeyError, TypeError, ValueError) as exc:
            if report is not None:
                report.reject(f"{p}:event {i}: {exc}")
            continue
        if report is not None:
            report.add("kernels")
    return spans


@dataclass(frozen=True)
class KernelBreakdown:
    """HTA's temporal breakdown and comm/comp overlap of one rank (seconds and ratios)."""

    rank: int | None
    kernel_time_s: float          # first kernel start to last kernel end
    idle_s: float                 # kernel_time minus the union of all kernels
    compute_s: float              # union of compute kernels
    non_compute_s: float          # kernel_time - compute - idle (exposed comm + memory)
    communication_s: float        # union of communication kernels
    exposed_comm_s: float         # communication not under compute
    comm_comp_overlap: float | None   # |comm ∩ compute| / |comm| (None without communication)
    by_kind_s: dict[str, float] = field(default_factory=dict)   # union per kind

    def pct(self, part_s: float) -> float:
        return 100.0 * part_s / self.kernel_time_s if self.kernel_time_s > 0 else 0.0


def _union_s(spans: Sequence[Span]) -> float:
    """Length of the union of the spans' intervals (sort by start, merge overlaps)."""
    if not spans:
        return 0.0
    s = np.array([x.start_s for x in spans])
    e = np.array([x.end_s for x in spans])
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    run_end = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > run_end[:-1]
    idx = np.flatnonzero(new)
    return float((np.maximum.reduceat(e, idx) - s[idx]).sum())


def kernel_breakdown(spans: Sequence[Span], drop_last_iteration: bool = False) -> list[KernelBreakdown]:
    """Per rank: idle / compute / non-compute time and communication overlap of device spans.

    ``drop_last_iteration``: leave out the kernels of each rank's last profiler step when it
    has more than one, as HTA does when it reads a trace (the last step is often cut short).
    """
    out: list[KernelBreakdown] = []
    ranks = sorted({s.rank for s in spans}, key=lambda r: -1 if r is None else r)
    for rank in ranks:
        mine = [s for s in spans if s.rank == rank]
        numbers = {s.step for s in mine if s.step is not None}
        if drop_last_iteration and len(numbers) > 1:
            mine = [s for s in mine if s.step != max(numbers)]
        comp = [s for s in mine if s.attrs.get("kind") == "compute"]
        comm = [s for s in mine if s.attrs.get("kind") == "communication"]
        mem = [s for s in mine if s.attrs.get("kind") == "memory"]
        span_s = max(s.end_s for s in mine) - min(s.start_s for s in mine)
        busy, u_comp, u_comm = _union_s(mine), _union_s(comp), _union_s(comm)
        both = u_comp + u_comm - _union_s(comp + comm)
        out.append(KernelBreakdown(
            rank=rank, kernel_time_s=span_s, idle_s=span_s - busy, compute_s=u_comp,
            non_compute_s=busy - u_comp, communication_s=u_comm, exposed_comm_s=u_comm - both,
            comm_comp_overlap=both / u_comm if u_comm > 0 else None,
            by_kind_s={"compute": u_comp, "communication": u_comm, "memory": _union_s(mem)}))
    return out
