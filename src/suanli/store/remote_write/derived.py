"""What suanli writes back to a TSDB: its derived series (from the diagnosis JSON of
spec/diagnosis.md) and the topology as ``suanli_*_info`` series (from the inventory), so that PromQL
and Alertmanager can join exporter series on canonical ids and relations.

Info series carry value 1 and every label a join needs: the canonical id, the exporter's own label
values (dcgm-exporter's ``Hostname``/``gpu``/``UUID``, node-exporter's ``device``), and the
relations (a NIC's switch port and GPU, a port's peer). ``suanli_nic_info``'s ``sole_gpu_id`` is the
one GPU whose traffic leaves by the NIC (absent when it carries several): the ``gpu`` label suanli's
NIC alerts carry, which the exported alert rules join (suanli.rules.export)::

    DCGM_FI_DEV_GPU_TEMP * on(UUID) group_left(gpu_id, rack) suanli_gpu_info
    rate(node_infiniband_port_errors_received_total[5m]) * on(node, device) group_left(switch_port) suanli_nic_info
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from suanli.inventory import Inventory
from suanli.inventory.model import gpu_id
from suanli.store.remote_write.sender import SeriesSamples

__all__ = ["DERIVED", "diagnosis_series", "info_series"]

DERIVED: dict[str, str] = {
    "suanli_job_mfu_ratio": "Model FLOPs utilisation of the job over the window (0..1).",
    "suanli_job_goodput_ratio": "Goodput: productive share of the job's time (0..1).",
    "suanli_job_cost_per_effective_pflop": "Cost per effective PFLOP of the job, in its currency.",
    "suanli_job_time_split_ratio": "Share of the job's time per phase (0..1).",
    "suanli_job_lost_cost": "Cost of the job's GPU time lost in the window, by cause, in its currency.",
    "suanli_gpu_health_score": "Health score of the GPU (1 healthy .. 0).",
    "suanli_gpu_failure_probability": "Probability of the event (a double-bit ECC error) within the horizon.",
    "suanli_incident_open": "1 while the incident is open, 0 once it ended.",
    "suanli_incident_lost_gpu_seconds": "GPU time the incident cost the jobs it touches, in GPU-seconds "
                                        "(Prometheus' base unit; the JSON's lost_gpu_hours x 3600).",
    "suanli_incident_lost_cost": "What the incident cost, in its currency.",
    "suanli_incident_expected_saving": "What the chosen action saves against staying, over the horizon.",
    "suanli_expected_saving": "What the chosen actions save in all, over the horizon.",
}
"""Every derived series suanli writes (remote write) or exposes (``serve``'s ``/metrics``), with its help."""


def _one(metric: str, labels: Mapping[str, str | None], t: float, value: float = 1.0) -> SeriesSamples:
    """One sample of one series; labels without a value are left out (Prometheus stores none)."""
    kept: dict[str, str] = {k: v for k, v in labels.items() if v}
    return metric, kept, [(t, value)]


def info_series(inv: Inventory, t: float) -> list[SeriesSamples]:
    """``suanli_gpu_info``, ``suanli_nic_info``, ``suanli_port_info``, ``suanli_job_info`` and
    ``suanli_job_dependency_info`` at ``t`` (value 1)."""
    racks = {n.id: n.rack for n in inv.nodes.values()}
    sole = _sole_gpus(inv)
    out = [_one("suanli_gpu_info", {"gpu_id": g.id, "node": g.node, "Hostname": g.node, "gpu": str(g.index),
                                    "UUID": g.uuid, "pci_bus_id": g.pci_bus_id, "modelName": g.model,
                                    "rack": racks.get(g.node), "cluster": inv.cluster}, t)
           for g in sorted(inv.gpus.values(), key=lambda g: g.id)]
    for c in sorted(inv.nics.values(), key=lambda c: c.id):
        switch, _, port = (c.switch_port or "").partition("/")
        out.append(_one("suanli_nic_info", {"nic": c.id, "node": c.node, "device": c.name, "mac": c.mac,
                                            "switch_port": c.switch_port, "switch": switch, "port": port,
                                            "gpu_id": gpu_id(c.node, c.gpu) if c.gpu is not None else None,
                                            "sole_gpu_id": sole.get(c.id),
                                            "cluster": inv.cluster}, t))
    out.extend(_ports(inv, t))
    out.extend(_jobs_info(inv, t))
    return out


DEPENDENCY_KINDS: tuple[tuple[str, str], ...] = (("gpu", "gpus"), ("node", "nodes"), ("nic", "nics"),
                                                 ("switch_port", "ports"), ("storage", "storage"),
                                                 ("nvswitch", "nvswitches"))
"""(entity kind, the Inventory attribute listing them): the hardware a job may depend on."""


def _jobs_info(inv: Inventory, t: float) -> Iterable[SeriesSamples]:
    """``suanli_job_info`` per job (its SLA and storage) and ``suanli_job_dependency_info`` per
    (hardware entity, job that depends on it: ``Topology.jobs_behind``), which the exported
    ``topology: upstream`` inhibitions onto job alerts join."""
    for job in sorted(inv.jobs.values(), key=lambda j: j.id):
        yield _one("suanli_job_info", {"job_id": job.id, "sla_id": job.sla_id, "storage": job.storage,
                                       "cluster": inv.cluster}, t)
    for kind, attr in DEPENDENCY_KINDS:
        for entity in sorted(getattr(inv, attr)):
            for job_id in sorted(inv.topology.jobs_behind(entity)):
                yield _one("suanli_job_dependency_info", {"job_id": job_id, "entity": entity, "entity_kind": kind,
                                                          "cluster": inv.cluster}, t)


def _sole_gpus(inv: Inventory) -> dict[str, str]:
    """NIC -> the GPU whose inter-node traffic leaves by it, for NICs that carry exactly one GPU's."""
    served: dict[str, list[str]] = {}
    for g in inv.gpus:
        nic = inv.topology.nic_for_gpu(g)
        if nic is not None:
            served.setdefault(nic, []).append(g)
    return {nic: gpus[0] for nic, gpus in served.items() if len(gpus) == 1}


def _ports(inv: Inventory, t: float) -> Iterable[SeriesSamples]:
    """One series per (port, peer): a NIC cabled to it, or the port at the other end of a link."""
    peers: list[tuple[str, str, str, str | None]] = []
    for c in inv.nics.values():
        if c.switch_port:
            peers.append((c.switch_port, "nic", c.id, c.node))
    for link in inv.links:
        peers += [(link.a, "switch_port", link.b, None), (link.b, "switch_port", link.a, None)]
    for port_id, kind, peer, node in sorted(peers, key=lambda p: (p[0], p[2])):
        switch, _, port = port_id.partition("/")
        yield _one("suanli_port_info", {"switch_port": port_id, "switch": switch, "port": port, "peer_kind": kind,
                                        "peer": peer, "node": node, "cluster": inv.cluster}, t)


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _jobs(doc: Mapping[str, Any], t: float, currency: str) -> Iterable[SeriesSamples]:
    for job in doc.get("efficiency", {}).get("jobs", []):
        jid = {"job_id": str(job["id"])}      # not ``job``: a scrape's own label
        for metric, key in (("suanli_job_mfu_ratio", "mfu"), ("suanli_job_goodput_ratio", "goodput")):
            if _finite(job.get(key)):
                yield _one(metric, jid, t, float(job[key]))
        if _finite(job.get("cost_per_effective_pflop")):
            yield _one("suanli_job_cost_per_effective_pflop", {**jid, "currency": currency}, t,
                       float(job["cost_per_effective_pflop"]))
        for phase, share in (job.get("time_split") or {}).items():
            if _finite(share):
                yield _one("suanli_job_time_split_ratio", {**jid, "phase": str(phase)}, t, float(share))
        for cause, cost in (job.get("lost_cost") or {}).items():
            if _finite(cost):
                yield _one("suanli_job_lost_cost", {**jid, "cause": str(cause), "currency": currency}, t, float(cost))


def _gpus(doc: Mapping[str, Any], t: float, inv: Inventory | None) -> Iterable[SeriesSamples]:
    for p in doc.get("predictions", []):
        if p.get("kind") != "gpu":
            continue
        gid = str(p["id"])
        g = inv.gpus.get(gid) if inv is not None else None
        labels = {"gpu_id": gid, "node": gid.split("/", 1)[0]}
        if g is not None:                      # dcgm-exporter's own labels, to join without info series
            labels |= {"Hostname": g.node, "gpu": str(g.index), "UUID": g.uuid or ""}
        if _finite(p.get("health_score")):
            yield _one("suanli_gpu_health_score", labels, t, float(p["health_score"]))
        if _finite(p.get("probability")):
            yield _one("suanli_gpu_failure_probability", {**labels, "event": str(p.get("event")),
                                                          "horizon_days": str(p.get("horizon_days"))},
                       t, float(p["probability"]))


def _incidents(doc: Mapping[str, Any], t: float, currency: str) -> Iterable[SeriesSamples]:
    for inc in doc.get("incidents", []):
        labels = {"incident": str(inc["id"]), "category": str(inc["category"]),
                  "root_kind": str(inc["root_cause"]["kind"]), "root_id": str(inc["root_cause"]["id"])}
        yield _one("suanli_incident_open", labels, t, 1.0 if inc.get("end") is None else 0.0)
        impact = inc.get("impact") or {}
        if _finite(impact.get("lost_gpu_hours")):
            yield _one("suanli_incident_lost_gpu_seconds", labels, t, 3600.0 * float(impact["lost_gpu_hours"]))
        if _finite(impact.get("lost_cost")):
            yield _one("suanli_incident_lost_cost", {**labels, "currency": currency}, t, float(impact["lost_cost"]))
        dec = inc.get("decision") or {}
        if _finite(dec.get("saving")):
            chosen = dec.get("chosen") or {}
            yield _one("suanli_incident_expected_saving", {**labels, "currency": currency,
                                                           "action": str(chosen.get("action", "stay"))},
                       t, float(dec["saving"]))


def diagnosis_series(doc: Mapping[str, Any], t: float, inventory: Inventory | None = None) -> list[SeriesSamples]:
    """The ledger per job (MFU, goodput, time split, cost per effective PFLOP, lost cost by cause),
    health per GPU (with dcgm-exporter's labels where ``inventory`` knows the GPU), and per incident
    whether it is open, what it cost and what the chosen action saves, at ``t``. The one vocabulary
    of :data:`DERIVED`, for remote write and for ``serve``'s ``/metrics`` alike."""
    econ = doc.get("economics") or {}
    currency = str(econ.get("currency", "USD"))
    out = [*_jobs(doc, t, currency), *_gpus(doc, t, inventory), *_incidents(doc, t, currency)]
    if _finite(econ.get("saving")):
        out.append(_one("suanli_expected_saving", {"currency": currency}, t, float(econ["saving"])))
    return out
