"""Fabric, storage and business families: node-exporter infiniband and the suanli_* probes."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from suanli.sim.cluster import gpu_pci
from suanli.sim.metrics import Family, World, job_steps_done, nic_loss

__all__ = ["net_families"]

IB = [
    ("node_infiniband_port_data_transmitted_bytes", "Number of data octets transmitted on all links"),
    ("node_infiniband_port_errors_received",
     "Number of packets containing an error that were received on this port"),
    ("node_infiniband_symbol_error", "Number of minor link errors detected on one or more physical lanes."),
    ("node_infiniband_link_downed",
     "Number of times the link failed to recover from an error state and went down"),
    ("node_infiniband_port_transmit_wait",
     "Number of ticks during which the port had data to transmit but no data was sent during the entire tick"),
]


def _entity_traffic(w: World) -> dict[str, np.ndarray]:
    """Cumulative bytes per port / sending NIC on the scrape grid, from the jobs' ring hops."""
    out: dict[str, np.ndarray] = {}
    for tl in w.tls:
        done = job_steps_done(tl, w.ts)
        for e, b in tl.net.entity_bytes.items():
            out[e] = out.get(e, 0.0) + done * b
    return out


def _nic_alive(w: World, nic: str) -> np.ndarray:
    down = w.fx.down_at(nic, "nic_down")
    return np.ones(len(w.ts), dtype=bool) if down is None else w.ts < down + 15.0


def _ib_families(w: World, traffic: dict[str, np.ndarray]) -> Iterator[Family]:
    c = w.cluster
    nics = [nic for n in c.nodes for nic in n.nics]
    labels = [f'device="{n.name}",instance="{n.node}:9100",job="node",port="1"' for n in nics]
    hosts = [int(n.node.split("-")[1]) - 1 for n in nics]
    alive = np.array([_nic_alive(w, n.id) for n in nics])
    rng = w.rng("ib")
    base = rng.integers(10**12, 5 * 10**13, (len(nics), 1)).astype(np.float64)
    for name, help_ in IB:
        v = np.zeros((len(nics), len(w.ts)))
        for i, nic in enumerate(nics):
            tx = traffic.get(nic.id, np.zeros(len(w.ts)))
            if name.endswith("transmitted_bytes"):
                v[i] = base[i] + tx + np.cumsum(rng.uniform(2e6, 4e6, len(w.ts))) * 15
            elif name.endswith("transmit_wait"):
                v[i] = np.floor(base[i] / 700 + tx / 650)
            elif name.endswith("symbol_error"):
                ber = w.fx.ber(nic.id, w.ts)
                v[i] = np.floor(np.cumsum(ber * 50e9 * 8 * 15 / 1e3))
            elif name.endswith("link_downed"):
                down = w.fx.down_at(nic.id, "nic_down")
                v[i] = 0.0 if down is None else (w.ts >= down).astype(float)
        yield Family(name + "_total", "counter", help_, labels, np.where(alive, v, np.nan), True, "node", hosts)


def _ports(w: World) -> list[str]:
    c = w.cluster
    ports = [nic.port for n in c.nodes for nic in n.nics]
    for leaf in c.leaves:
        for a, b in c.uplinks[leaf]:
            ports += [a, b]
    return ports


def _switch_families(w: World, traffic: dict[str, np.ndarray]) -> Iterator[Family]:
    ports = _ports(w)
    labels = ['switch="{}",port="{}"'.format(*p.split("/")) for p in ports]
    hosts = [-1] * len(ports)
    rng = w.rng("switch")
    pkts = np.zeros((len(ports), len(w.ts)))
    crc = np.zeros_like(pkts)
    ber = np.exp(rng.normal(np.log(5e-13), 0.3, pkts.shape))
    offset = rng.integers(10**10, 10**12, len(ports)).astype(np.float64)
    pps = np.full(len(ports), 2e5)
    if w.nz.idle_port_pps is not None:      # management traffic only (LLDP, subnet manager, probes)
        pps = w.rng("idle_pps").uniform(*w.nz.idle_port_pps, len(ports))
    for i, p in enumerate(ports):
        through = traffic.get(p, np.zeros(len(w.ts))) / w.cfg.packet_bytes
        pkts[i] = offset[i] + through + np.cumsum(np.full(len(w.ts), pps[i] * 15))
        f = w.fx.of(p, "switch_port_errors")
        if f is not None:
            rate = np.diff(through, prepend=through[0]) * f.magnitude * f.level(w.ts)
            crc[i] = np.floor(np.cumsum(rate + rng.poisson(0.2, len(w.ts))))
        if w.fx.of(p, "optical_degradation"):
            ber[i] = w.fx.ber(p, w.ts) * np.exp(rng.normal(0, 0.2, len(w.ts)))
    switches = [p.split("/")[0] for p in ports]
    yield Family("suanli_switch_port_crc_errors_total", "counter", "CRC errors received on a switch port",
                 labels, crc, True, "probe", hosts, switches)
    yield Family("suanli_switch_port_packets_total", "counter", "Packets received and transmitted on a switch port",
                 labels, np.floor(pkts), True, "probe", hosts, switches)
    nics = [nic for n in w.cluster.nodes for nic in n.nics]
    nber = np.exp(rng.normal(np.log(5e-13), 0.3, (len(nics), len(w.ts))))
    for i, nic in enumerate(nics):
        if w.fx.of(nic.id, "optical_degradation"):
            nber[i] = w.fx.ber(nic.id, w.ts) * np.exp(rng.normal(0, 0.2, len(w.ts)))
        nber[i] = np.where(_nic_alive(w, nic.id), nber[i], np.nan)
    yield Family("suanli_port_pre_fec_ber", "gauge", "Pre-FEC bit error ratio measured by the receiver of a port",
                 labels + [f'node="{n.node}",nic="{n.name}"' for n in nics],
                 np.vstack([np.round(ber, 16), np.round(nber, 16)]), False, "probe",
                 hosts + [int(n.node.split("-")[1]) - 1 for n in nics])


def _host_families(w: World) -> Iterator[Family]:
    c = w.cluster
    nics = [nic for n in c.nodes for nic in n.nics]
    lost = nic_loss(w)
    rng = w.rng("rdma")
    v = np.floor(np.cumsum(rng.poisson(0.3 * 15, (len(nics), len(w.ts))), axis=1)).astype(np.float64)
    for i, nic in enumerate(nics):
        if nic.id in lost:
            v[i] += np.floor(lost[nic.id])
        for g in range(8):
            if nic.gpu <= g < nic.gpu + 8 // len(c.nodes[0].nics):
                lvl = w.fx.of(f"{nic.node}/gpu{g}", "pcie_riser")
                if lvl is not None:
                    v[i] += np.floor(np.cumsum(lvl.level(w.ts) * 600.0 * 15))
        v[i] = np.where(_nic_alive(w, nic.id), v[i], np.nan)
    yield Family("suanli_rdma_retransmits_total", "counter", "RDMA packets retransmitted by a NIC",
                 [f'node="{n.node}",nic="{n.name}"' for n in nics], v, True, "probe",
                 [int(n.node.split("-")[1]) - 1 for n in nics])
    labels, hosts, rows = [], [], []
    for n in c.nodes:
        for g in range(8):
            f = w.fx.of(f"{n.id}/gpu{g}", "pcie_riser")
            for sev in ("corrected", "uncorrected"):
                labels.append(f'node="{n.id}",pci_bus_id="{gpu_pci(g)[4:].lower()}",severity="{sev}"')
                hosts.append(n.index)
                r = np.zeros(len(w.ts))
                if f is not None and sev == "corrected":
                    r = np.floor(np.cumsum(f.level(w.ts) * rng.uniform(180, 320, len(w.ts)) / 60.0 * 15))
                rows.append(r)
    yield Family("suanli_pcie_aer_errors_total", "counter", "PCIe AER errors reported by the kernel for a device",
                 labels, np.array(rows), True, "probe", hosts)


def _latency(w: World) -> Iterator[Family]:
    c, rng = w.cluster, w.rng("lat")
    labels, rows = [], []
    for a, b in w.latency_pairs:
        na, nb = c.nodes[a], c.nodes[b]
        base = 1.6e-6 if na.leaf == nb.leaf else 2.6e-6
        worst = np.full(len(w.ts), base)
        for k in range(len(na.nics)):
            path = c.hop_path(na.nics[k], nb.nics[k])
            rx = {path[1], path[-1]} | ({path[4], path[7]} if len(path) == 10 else set())
            extra = np.zeros(len(w.ts))
            for e in path:
                for f in w.fx.by_root.get(e, ()):
                    if f.category == "optical_degradation" and (e in rx) == f.direction_rx:
                        extra += np.array([w.fx.extra_latency_s(e, float(t), e in rx) for t in w.ts])
                    elif f.category == "switch_port_errors":
                        extra += 4e-6 * f.level(w.ts)
            worst = np.maximum(worst, base + extra)
        labels.append(f'src="{na.id}",dst="{nb.id}"')
        rows.append(np.round(worst * np.exp(rng.normal(0, 0.08, len(w.ts))) * _spikes(w, rng, (3.0, 10.0)), 10))
    yield Family("suanli_link_latency_seconds", "gauge",
                 "One-way probe latency between two nodes (worst rail, median of the probe burst)",
                 labels, np.array(rows), False, "probe", [a for a, _ in w.latency_pairs])


def _spikes(w: World, rng: np.random.Generator, factor: tuple[float, float]) -> np.ndarray | float:
    """Lone spikes of a latency probe (a probe burst that met a queue), when ``w.nz`` asks for them."""
    if w.nz.gauge_spikes <= 0:
        return 1.0
    hit = rng.random(len(w.ts)) < w.nz.gauge_spikes
    return np.where(hit, rng.uniform(*factor, len(w.ts)), 1.0)


def _storage_sla(w: World) -> Iterator[Family]:
    rng = w.rng("storage")
    rows = []
    for sid, _ in w.cluster.storage:
        fac = np.array([w.fx.storage_factor(sid, float(t)) for t in w.ts])
        rows.append(np.round(w.tm.storage_latency_s * fac * np.exp(rng.normal(0, 0.05, len(w.ts)))
                             * _spikes(w, rng, (1.8, 3.0)), 7))
    if w.storage_probe:
        yield Family("suanli_storage_read_latency_seconds", "gauge",
                     "Read latency of a storage system seen by a probe client",
                     [f'storage="{s}"' for s, _ in w.cluster.storage], np.array(rows), False, "probe",
                     [-1] * len(rows))
    labels, rows = [], []
    for tl in w.tls:
        ends, dur = tl.step_ends(), np.asarray(tl.step_s)
        i = np.searchsorted(ends, w.ts, side="right") - 1
        ok = (i >= 0) & (w.ts - ends[np.clip(i, 0, None)] < 300.0) if len(ends) else np.zeros(len(w.ts), bool)
        v = np.where(ok, dur[np.clip(i, 0, max(len(dur) - 1, 0))] if len(dur) else 0.0, np.nan)
        labels.append(f'sla_id="{tl.job.sla_id}"')
        rows.append(np.asarray(np.round(v, 4), dtype=np.float64))
    yield Family("suanli_sla_latency_seconds", "gauge",
                 "Business SLA metric: seconds per training step of the jobs serving the SLA",
                 labels, np.array(rows), False, "probe", [-1] * len(rows))


def net_families(w: World) -> Iterator[Family]:
    traffic = _entity_traffic(w)
    yield from _ib_families(w, traffic)
    yield from _switch_families(w, traffic)
    yield from _host_families(w)
    yield from _latency(w)
    yield from _storage_sla(w)
