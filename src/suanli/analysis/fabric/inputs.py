"""Reading the fabric signals out of a :class:`suanli.store.api.Store` into plain arrays, and the
per-entity counter anomalies. The only module of the fabric analysis that talks to the store."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from suanli.analysis.fabric.counters import (
    CounterAnomaly,
    CounterConfig,
    aligned_ratio,
    ber_episode,
    crc_episode,
    detect_signal,
    link_downs,
    rolling_mean,
    stopped_series,
)
from suanli.analysis.median import median, nanmedian
from suanli.analysis.peer_median import Track, interp_at, peer_median_at, tracks_median_at
from suanli.inventory.model import gpu_id
from suanli.store.api import Series, Store

if TYPE_CHECKING:
    from suanli.inventory.catalog import Inventory

__all__ = ["CounterFacts", "M", "early_level", "hardware_suspect_gpus", "late_level", "read_counters", "read_latency"]

F64 = npt.NDArray[np.float64]


class M:
    """Metric names (spec/telemetry.md)."""

    CRC = "suanli_switch_port_crc_errors_total"
    PACKETS = "suanli_switch_port_packets_total"
    BER = "suanli_port_pre_fec_ber"
    RETRANS = "suanli_rdma_retransmits_total"
    AER = "suanli_pcie_aer_errors_total"
    LATENCY = "suanli_link_latency_seconds"
    STORAGE_LAT = "suanli_storage_read_latency_seconds"
    IB_SYMBOL = "node_infiniband_symbol_error_total"
    IB_DOWN = "node_infiniband_link_downed_total"
    IB_TX = "node_infiniband_port_data_transmitted_bytes_total"
    PCIE_REPLAY = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
    THROTTLE = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"
    GPU_TEMP = "DCGM_FI_DEV_GPU_TEMP"
    NVLINK = "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"
    SM_CLOCK = "DCGM_FI_DEV_SM_CLOCK"


@dataclass
class CounterFacts:
    """Counter anomalies per entity and the late level of each signal (for ``values()``)."""

    anomalies: dict[str, list[CounterAnomaly]] = field(default_factory=dict)
    levels: dict[str, dict[str, float]] = field(default_factory=dict)

    def add(self, a: CounterAnomaly | None) -> None:
        if a is not None:
            self.anomalies.setdefault(a.entity_id, []).append(a)

    def level(self, entity: str, name: str, value: float) -> None:
        if np.isfinite(value):
            self.levels.setdefault(entity, {})[name] = float(value)

    def get(self, entity: str, signal: str) -> CounterAnomaly | None:
        return next((a for a in self.anomalies.get(entity, []) if a.signal == signal), None)


def late_level(values: F64, share: float = 0.25) -> float:
    """Median of the last ``share`` of the finite samples (NaN when none)."""
    v = values[np.isfinite(values)]
    if len(v) == 0:
        return float("nan")
    return median(v[-max(1, int(len(v) * share)):])


def early_level(values: F64, share: float = 0.25) -> float:
    """Median of the first ``share`` of the finite samples (NaN when none)."""
    v = values[np.isfinite(values)]
    if len(v) == 0:
        return float("nan")
    return median(v[:max(1, int(len(v) * share))])


def _by_entity(series: list[Series], kinds: tuple[str, ...]) -> dict[str, Series]:
    out: dict[str, Series] = {}
    for s in series:
        if s.key.entity_id is not None and s.key.entity_kind in kinds and len(s.ts):
            prev = out.get(s.key.entity_id)   # several series per entity (IB ports): keep the longest
            if prev is not None and len(s.ts) <= len(prev.ts):
                continue
            out[s.key.entity_id] = s
    return out


def _crc(store: Store, cfg: CounterConfig, facts: CounterFacts, span: tuple[float, float],
         peers: Mapping[str, tuple[str, ...]]) -> None:
    """CRC episodes per port, each port against its own traffic and its collective ``peers``."""
    crc = _by_entity(store.rate(M.CRC, start=span[0], end=span[1]), ("switch_port",))
    pkts = _by_entity(store.rate(M.PACKETS, start=span[0], end=span[1]), ("switch_port",))
    k = cfg.smooth_scrapes
    ratios = {port: aligned_ratio(s.ts, rolling_mean(s.values, k), pkts[port].ts, rolling_mean(pkts[port].values, k))
              for port, s in crc.items() if port in pkts}
    tracks = {port: Track.of(ts, ratio) for port, (ts, ratio) in ratios.items()}   # each port read by all its mates
    for port, (ts, ratio) in ratios.items():
        s, p = crc[port], pkts[port]
        facts.level(port, "crc_ratio", late_level(ratio))
        mates = [tracks[m] for m in peers.get(port, ()) if m in ratios]
        peer_ratio = tracks_median_at(ts, [tr for tr in mates if tr is not None]) if mates else None
        facts.add(crc_episode(port, ts, s.values, _at(s.ts, p.ts, p.values), cfg, peer_ratio, len(mates)))


def _at(ts: F64, src_ts: F64, src: F64) -> F64:
    """``src`` interpolated at ``ts`` (NaN outside its range)."""
    out = interp_at(ts, src_ts, src)
    return np.full(len(ts), np.nan) if out is None else out


def _ber(store: Store, cfg: CounterConfig, facts: CounterFacts, span: tuple[float, float]) -> None:
    series = _by_entity(store.series(M.BER, start=span[0], end=span[1]), ("switch_port", "nic"))
    meds = [m for s in series.values() if np.isfinite(m := nanmedian(s.values))] if series else []
    peers = median(meds) if meds else float("nan")
    for ent, s in series.items():
        facts.level(ent, "pre_fec_ber", late_level(s.values))
        facts.level(ent, "pre_fec_ber_early", early_level(s.values))
        facts.add(ber_episode(s.key.entity_kind or "", ent, s.ts, s.values, peers, cfg))


def _rates(store: Store, metric: str, signal: str, cfg: CounterConfig, facts: CounterFacts,
           min_rate: float, span: tuple[float, float], peers: Mapping[str, tuple[str, ...]] | None = None) -> None:
    """Sudden increases of a NIC rate; with ``peers``, only those ``peer_factor`` times above the
    median of the NIC's collective peers at the same instants after the onset."""
    smooth = {nic: (s.ts, rolling_mean(s.values, cfg.smooth_scrapes))
              for nic, s in _by_entity(store.rate(metric, start=span[0], end=span[1]), ("nic",)).items()}
    for nic, (ts, v) in smooth.items():
        facts.level(nic, f"{signal}_per_s", late_level(v))
        a = detect_signal("nic", nic, signal, ts, v, cfg.rate_change, min_rate)
        mates = [smooth[m] for m in (peers or {}).get(nic, ()) if m in smooth]
        if a is not None and mates:
            after = ts >= a.onset_s
            peer = nanmedian(peer_median_at(ts[after], mates)) if after.any() else float("nan")
            if np.isfinite(peer) and a.after < cfg.peer_factor * peer:
                continue                  # its collective peers count alike: what those links do
        facts.add(a)


def read_counters(store: Store, cfg: CounterConfig, span: tuple[float, float],
                  peers: Mapping[str, tuple[str, ...]] | None = None) -> CounterFacts:
    """Every counter anomaly in ``span`` (see :mod:`suanli.analysis.fabric.counters`); ``peers``:
    each port's and NIC's collective peers (:func:`suanli.analysis.fabric.peers.collective_peers`)."""
    facts = CounterFacts()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _crc(store, cfg, facts, span, peers or {})
        _ber(store, cfg, facts, span)
        # retransmits are judged on their own past only: they are the symptoms of a bad port, and in a
        # two-node ring both NICs of the rail cross it, so a peer would hide them
        _rates(store, M.RETRANS, "rdma_retransmits", cfg, facts, cfg.min_retransmit_rate, span)
        _rates(store, M.IB_SYMBOL, "symbol_errors", cfg, facts, cfg.min_symbol_error_rate, span, peers)
        for nic, s in _by_entity(store.series(M.IB_DOWN, start=span[0], end=span[1]), ("nic",)).items():
            facts.add(link_downs("nic", nic, s.ts, s.values))
        _stopped(store, cfg, facts, span)
    return facts


def _stopped(store: Store, cfg: CounterConfig, facts: CounterFacts, span: tuple[float, float]) -> None:
    last: dict[str, float] = {}
    gaps: list[float] = []
    for metric in (M.IB_TX, M.RETRANS, M.IB_SYMBOL):
        for s in store.series(metric, start=span[0], end=span[1]):
            if s.key.entity_kind == "nic" and s.key.entity_id and len(s.ts):
                last[s.key.entity_id] = max(last.get(s.key.entity_id, -np.inf), float(s.ts[-1]))
                if len(s.ts) > 2:
                    gaps.append(median(np.diff(s.ts)))
    if not last or not gaps:
        return
    end = max(last.values())
    for nic, t in stopped_series(last, median(gaps), end, cfg).items():
        facts.add(CounterAnomaly("nic", nic, "stopped", t, t + cfg.min_stale_s, t, end))


def read_latency(store: Store, nodes: tuple[str, ...], span: tuple[float, float]) -> tuple[F64, ...]:
    """Flat (src index, dst index, ts, latency s) of every probe between known nodes."""
    index = {n: i for i, n in enumerate(nodes)}
    parts: list[tuple[F64, F64, F64, F64]] = []
    for s in store.series(M.LATENCY, start=span[0], end=span[1]):
        src = s.key.entity_id or s.key.label("src")
        dst = s.key.peer_id or s.key.label("dst")
        if src in index and dst in index and len(s.ts):
            n = len(s.ts)
            parts.append((np.full(n, index[src], dtype=np.float64), np.full(n, index[dst], dtype=np.float64),
                          s.ts, s.values))
    if not parts:
        return tuple(np.zeros(0) for _ in range(4))
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(4))


def hardware_suspect_gpus(store: Store, span: tuple[float, float],
                          cfg: CounterConfig | None = None) -> set[str]:
    """GPUs with their own hardware evidence (PCIe AER or replays, thermal throttling, Xid / AER
    log events): their slowness and their NIC's retransmits belong to the health analysis."""
    cfg = cfg or CounterConfig()
    out: set[str] = set()
    pcie: dict[str, float] = {}
    for metric in (M.AER, M.PCIE_REPLAY):
        for key, inc in store.increase(metric, start=span[0], end=span[1]).items():
            if key.entity_kind == "gpu" and key.entity_id and np.isfinite(inc):
                pcie[key.entity_id] = pcie.get(key.entity_id, 0.0) + inc
    for s in store.series(M.THROTTLE, start=span[0], end=span[1]):
        v = s.values[np.isfinite(s.values)].astype(np.int64)
        if s.key.entity_id and len(v) and np.any(v & 0x68):    # SW/HW thermal, HW slowdown
            out.add(s.key.entity_id)
    for ev in store.events(kinds=("xid", "aer"), start=span[0], end=span[1]):
        gpu = ev.entity_id if ev.entity_kind == "gpu" and ev.entity_id else None     # as ingest resolved it
        if gpu is not None and ev.kind == "xid":
            out.add(gpu)
        elif gpu is not None:
            pcie[gpu] = pcie.get(gpu, 0.0) + max(ev.count, 1)
    out.update(g for g, n in pcie.items() if n >= cfg.min_pcie_errors)
    return out


def nic_gpu(inv: Inventory, nic: str) -> str | None:
    """The GPU a NIC serves (GPUDirect affinity), or None."""
    c = inv.nics.get(nic)
    return gpu_id(c.node, c.gpu) if c is not None and c.gpu is not None else None
