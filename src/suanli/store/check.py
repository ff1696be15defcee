"""``suanli check``: what in a store does not join to the inventory, and how mature the telemetry is.

Problems (each one line, with counts and up to ``examples`` examples):

* series that resolve to no entity, per metric;
* DCGM series without ``UUID`` and without host + ``gpu``; spans without ``job.id`` or rank;
* ids that break the inventory's conventions: host labels that name no node (FQDNs, pod names),
  GPU UUIDs not of the ``GPU-``/``MIG-`` form, PCI bus ids that are not ``[domain:]bus:dev.fn``;
* hardware events (Xid, AER, ...) whose device or host is not in the inventory;
* counters stuck at 2^32-1 (a 32-bit hardware counter that saturated: its rate reads zero
  whatever happens, e.g. an InfiniBand ``port_xmit_wait`` of a legacy HCA).

Maturity follows the observability maturity model of the seed document (seeds/004 §4.1): three
axes, each L1-L5, with the reason for the level.

* coverage: how many of five telemetry kinds are present (GPU metrics, fabric metrics, training
  spans, logs, business SLA metrics): level = max(1, kinds present).
* correlation: L1 when under ``min_resolved_l2`` of the series resolve; L2 from it; L3 when
  ``min_resolved`` of series and spans (job + rank) resolve; L4 when also ``min_resolved`` of
  ``train_step`` spans join by (job, step) and of hardware events resolve; L5 when also every
  job's SLA has its business metric resolved.
* decision: L1 no rules (an alert is a fault); L2 rules; L3 at least ``min_rules_l3`` rules;
  L4 inhibitions configured; L5 inhibitions and correlation at L4 or more (topology-aware root
  cause has what it needs).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from suanli.ingest.records import Event, SeriesKey
from suanli.ingest.resolve import NODE_EXPORTER_PREFIX
from suanli.inventory import Inventory
from suanli.inventory.normalize import (
    GPU_INDEX_LABEL,
    HOST_LABELS,
    PCI_LABEL,
    UUID_LABELS,
    pci_key,
    strip_port,
)
from suanli.metric_catalog import DCGM_PREFIX, is_counter
from suanli.store.api import Store
from suanli.timefmt import to_rfc3339

__all__ = ["CheckConfig", "CheckReport", "check"]

_UUID = re.compile(r"^(GPU|MIG)-[0-9a-fA-F-]+$")
_HW_EVENTS = ("xid", "aer", "sxid")
U32_MAX = float(2**32 - 1)
"""Where a saturating 32-bit counter stops (4294967295)."""


@dataclass(frozen=True)
class CheckConfig:
    """Thresholds of ``suanli check``."""

    examples: int = 3
    """Examples listed per problem."""
    min_resolved: float = 0.95
    """Share of records that must resolve for correlation L3/L4."""
    min_resolved_l2: float = 0.5
    """Share of series that must resolve for correlation L2."""
    min_rules_l3: int = 5
    """Rules needed for decision L3."""


@dataclass
class CheckReport:
    """``problems`` one line each; ``maturity[axis] = (level 1-5, reason)``; ``ok`` when no problem."""

    problems: list[str] = field(default_factory=list)
    maturity: dict[str, tuple[int, str]] = field(default_factory=dict)
    counts: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems


def _examples(items: Iterable[str], n: int) -> str:
    items = list(items)
    more = f" (+{len(items) - n} more)" if len(items) > n else ""
    return ", ".join(items[:n]) + more


def _label_text(key: SeriesKey) -> str:
    return key.metric + "{" + ",".join(f'{k}="{v}"' for k, v in key.labels) + "}"


def _series_problems(keys: list[SeriesKey], inventory: Inventory, cfg: CheckConfig) -> list[str]:
    out: list[str] = []
    unresolved: dict[str, list[SeriesKey]] = defaultdict(list)
    for k in keys:
        if k.entity_id is None:
            unresolved[k.metric].append(k)
    for metric, ks in sorted(unresolved.items()):
        out.append(f"{len(ks)} series of {metric} resolve to no entity: "
                   f"{_examples((_label_text(k) for k in ks), cfg.examples)}")
    no_ids = [k for k in keys if k.metric.startswith(DCGM_PREFIX) and not any(k.label(u) for u in UUID_LABELS)
              and not ((k.label("Hostname") or k.label("hostname")) and k.label(GPU_INDEX_LABEL))]
    if no_ids:
        out.append(f"{len(no_ids)} DCGM series have neither UUID nor Hostname+gpu: "
                   f"{_examples((_label_text(k) for k in no_ids), cfg.examples)}")
    out.extend(_convention_problems(keys, inventory, cfg))
    return out


def _convention_problems(keys: list[SeriesKey], inventory: Inventory, cfg: CheckConfig) -> list[str]:
    nodes = set(inventory.nodes)
    bad_hosts: Counter[str] = Counter()
    bad_uuid: Counter[str] = Counter()
    bad_pci: Counter[str] = Counter()
    for k in keys:
        labels = dict(k.labels)
        for name in HOST_LABELS:
            host = labels.get(name)
            if host is None or (k.metric.startswith("suanli_") and name == "instance") or (
                    k.metric.startswith(NODE_EXPORTER_PREFIX) and name == "node"):     # a NUMA node there
                continue
            bare = strip_port(host) if name == "instance" else host
            if nodes and bare not in nodes:
                bad_hosts[f"{name}={host}"] += 1
        uuid = labels.get("UUID")
        if uuid and not _UUID.match(uuid):
            bad_uuid[uuid] += 1
        pci = labels.get(PCI_LABEL)
        if pci and pci_key(pci) is None:
            bad_pci[pci] += 1
    out = []
    if bad_hosts:
        out.append(f"{len(bad_hosts)} host label values name no inventory node (node ids must be the "
                   f"host names exporters use): {_examples(sorted(bad_hosts), cfg.examples)}")
    if bad_uuid:
        out.append(f"{len(bad_uuid)} GPU UUIDs are not of the form GPU-...: {_examples(sorted(bad_uuid), cfg.examples)}")
    if bad_pci:
        out.append(f"{len(bad_pci)} pci_bus_id values are not PCI addresses: {_examples(sorted(bad_pci), cfg.examples)}")
    return out


@dataclass
class _SpanStats:
    total: int = 0
    resolved: int = 0
    steps: int = 0
    joinable: int = 0
    problems: list[str] = field(default_factory=list)


def _span_stats(store: Store, cfg: CheckConfig) -> _SpanStats:
    frame = store.spans()
    st = _SpanStats(total=len(frame))
    if not st.total:
        return st
    has_job = np.array([j is not None for j in frame.job_id], dtype=bool)
    has_rank = frame.rank >= 0
    st.resolved = int((has_job & has_rank).sum())
    is_step = frame.name == "train_step"
    st.steps = int(is_step.sum())
    st.joinable = int((is_step & has_job & (frame.step >= 0)).sum())
    missing = st.total - st.resolved
    if missing:
        names = Counter(str(n) for n in frame.name[~(has_job & has_rank)])
        st.problems.append(f"{missing} of {st.total} spans lack job.id or rank: "
                           f"{_examples((f'{n} x{c}' for n, c in names.most_common()), cfg.examples)}")
    no_gpu = int(sum(1 for g in frame.gpu_id[has_job & has_rank & is_step] if g is None))
    if no_gpu:
        st.problems.append(f"{no_gpu} train_step spans name no inventory GPU (resource.gpu.id): "
                           "per-GPU joins (metrics next to steps) will miss them")
    if st.steps > st.joinable:
        st.problems.append(f"{st.steps - st.joinable} train_step spans cannot be joined by (job.id, train.step)")
    return st


def _event_stats(events: list[Event], cfg: CheckConfig) -> tuple[int, int, list[str]]:
    hw = [e for e in events if e.kind in _HW_EVENTS]
    bad = [e for e in hw if e.entity_id is None]
    problems = []
    if bad:
        problems.append(f"{len(bad)} of {len(hw)} hardware events name no inventory device: "
                        f"{_examples((f'{e.source} {e.message[:60]}' for e in bad), cfg.examples)}")
    return len(hw), len(hw) - len(bad), problems


def check(store: Store, inventory: Inventory, *, rules_loaded: int = 0, inhibitions: int = 0,
          config: CheckConfig | None = None) -> CheckReport:
    """Problems and maturity of what ``store`` holds against ``inventory``."""
    cfg = config or CheckConfig()
    report = CheckReport()
    keys = store.series_keys()
    report.problems.extend(_series_problems(keys, inventory, cfg))
    spans = _span_stats(store, cfg)
    report.problems.extend(spans.problems)
    events = store.events()
    hw_total, hw_resolved, event_problems = _event_stats(events, cfg)
    report.problems.extend(event_problems)
    has_logs = bool(events)
    resolved_series = sum(1 for k in keys if k.entity_id)
    report.counts = {"series": len(keys), "series_resolved": resolved_series, "spans": spans.total,
                     "spans_resolved": spans.resolved, "train_steps": spans.steps,
                     "train_steps_joinable": spans.joinable, "hw_events": hw_total,
                     "hw_events_resolved": hw_resolved}
    report.problems.extend(_ingest_problems(store, cfg))
    report.problems.extend(_stray_times(store, events, cfg))
    report.problems.extend(_stuck_counters(store, keys, cfg))
    report.maturity["coverage"] = _coverage(keys, spans.total > 0, has_logs)
    report.maturity["correlation"] = _correlation(keys, spans, hw_total, hw_resolved, inventory, cfg)
    report.maturity["decision"] = _decision(rules_loaded, inhibitions, report.maturity["correlation"][0], cfg)
    return report


def _stuck_counters(store: Store, keys: list[SeriesKey], cfg: CheckConfig) -> list[str]:
    """Counter series that reach 2^32-1 and stay there to their last sample, per metric."""
    stuck: dict[str, list[str]] = defaultdict(list)
    for metric in sorted({k.metric for k in keys if is_counter(k.metric)}):
        for s in store.series(metric):
            v = s.values[np.isfinite(s.values)]
            at = np.flatnonzero(v == U32_MAX)
            if at.size and bool(np.all(v[at[0]:] == U32_MAX)):
                stuck[metric].append(_label_text(s.key))
    return [f"{len(names)} series of {metric} stuck at 2^32-1 (a saturated 32-bit counter: its rate reads 0, "
            f"reset or read the 64-bit counter): {_examples(names, cfg.examples)}"
            for metric, names in stuck.items()]


def _stray_times(store: Store, events: list[Event], cfg: CheckConfig) -> list[str]:
    """Spans and log records whose time lies outside the data's window (``store.time_range()``
    leaves out a stray clock: a log line dated 2099, a span from 1970): counted and named here,
    since the default window never shows them (``--start``/``--end`` reach them)."""
    extent = store.time_range()
    if extent is None:
        return []
    lo, hi = extent
    out = [f"{e.source} {to_rfc3339(e.ts)} {e.message[:40]}" for e in events
           if math.isfinite(e.ts) and not lo <= e.ts <= hi]
    spans = store.spans()
    far = np.flatnonzero(np.isfinite(spans.start_s) & ((spans.start_s < lo) | (spans.end_s > hi)))
    out += [f"span {spans.name[i]} of {spans.job_id[i]} at {to_rfc3339(float(spans.start_s[i]))}" for i in far]
    if not out:
        return []
    return [f"{len(out)} record(s) dated outside the data's window {to_rfc3339(lo)} .. {to_rfc3339(hi)} "
            f"(stray clocks: not analysed unless --start/--end reach them): {_examples(out, cfg.examples)}"]


def _ingest_problems(store: Store, cfg: CheckConfig) -> list[str]:
    """Records ingest rejected (bad lines, timestamps out of range ...), with their first reasons."""
    out = []
    for source, rep in store.reports():
        if rep.rejected:
            out.append(f"{source}: {rep.rejected} record(s) rejected at ingest: "
                       + _examples((r for r in rep.reasons if "already loaded" not in r), cfg.examples))
    return out


def _coverage(keys: list[SeriesKey], has_spans: bool, has_logs: bool) -> tuple[int, str]:
    metrics = {k.metric for k in keys}
    kinds = {
        "GPU metrics": any(m.startswith(DCGM_PREFIX) for m in metrics),
        "fabric metrics": any(m.startswith(("node_infiniband_", "suanli_switch_port_", "suanli_rdma_",
                                            "suanli_port_pre_fec", "suanli_link_latency")) for m in metrics),
        "training spans": has_spans,
        "logs": has_logs,
        "business SLA metrics": "suanli_sla_latency_seconds" in metrics,
    }
    present = [k for k, v in kinds.items() if v]
    absent = [k for k, v in kinds.items() if not v]
    reason = f"present: {', '.join(present) or 'nothing'}" + (f"; missing: {', '.join(absent)}" if absent else "")
    return max(1, len(present)), reason


def _share(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def _correlation(keys: list[SeriesKey], spans: _SpanStats, hw_total: int, hw_resolved: int,
                 inventory: Inventory, cfg: CheckConfig) -> tuple[int, str]:
    series_share = _share(sum(1 for k in keys if k.entity_id), len(keys))
    span_share = _share(spans.resolved, spans.total)
    join_share = _share(spans.joinable, spans.steps)
    event_share = _share(hw_resolved, hw_total) if hw_total else 1.0
    facts = (f"{series_share:.0%} of series resolve, {span_share:.0%} of spans carry job and rank, "
             f"{join_share:.0%} of steps join by (job, step), {event_share:.0%} of hardware events resolve")
    if series_share < cfg.min_resolved_l2:
        return 1, f"metrics, spans and logs stay apart: {facts}"
    if series_share < cfg.min_resolved or span_share < cfg.min_resolved:
        return 2, f"partly joined: {facts}"
    if join_share < cfg.min_resolved or event_share < cfg.min_resolved:
        return 3, f"metrics and spans join on entities: {facts}"
    slas = inventory.slas
    sla_series = {k.entity_id for k in keys if k.entity_kind == "sla"}
    if not slas or not slas <= sla_series:
        return 4, f"hardware, framework and logs join; business SLA metrics missing for some jobs: {facts}"
    return 5, f"every layer joins, down from the business SLA: {facts}"


def _decision(rules: int, inhibitions: int, correlation: int, cfg: CheckConfig) -> tuple[int, str]:
    if rules <= 0:
        return 1, "no rules loaded: every alert is treated as a fault"
    if inhibitions <= 0:
        level = 3 if rules >= cfg.min_rules_l3 else 2
        return level, f"{rules} rules, no inhibitions: one fault can raise an alert storm"
    if correlation < 4:
        return 4, f"{rules} rules and {inhibitions} inhibitions; correlation L{correlation} limits root-cause ranking"
    return 5, f"{rules} rules, {inhibitions} inhibitions and correlated data: faults are named at their part"
