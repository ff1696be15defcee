"""From counter anomalies, latency localisations, straggler scores and storage verdicts to
:class:`suanli.analysis.findings.Finding` s: one finding per fault, at the faulty part, with the
places where it shows as symptoms (the NICs that retransmit behind a bad port are not findings)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from suanli.analysis.categories import policy
from suanli.analysis.fabric.counters import CounterAnomaly
from suanli.analysis.fabric.inputs import CounterFacts, nic_gpu
from suanli.analysis.fabric.tomography import Localisation
from suanli.analysis.findings import Finding, Symptom
from suanli.timefmt import to_rfc3339

if TYPE_CHECKING:
    from suanli.inventory.catalog import Inventory

__all__ = ["FindingConfig", "counter_findings", "latency_findings"]

JobsOf = Callable[[str], set[str]]


@dataclass(frozen=True)
class FindingConfig:
    """Confidences given to each kind of evidence (defaults: the category table's)."""

    crc_confidence: float = policy("switch_port_errors").confidence.strong
    """switch_port_errors from a CRC ratio change at the port."""
    corroborated_bonus: float = 0.1
    """Added when retransmits or latency agree (capped at 0.99)."""
    optical_decades: float = 2.0
    """With CRC errors too, a port is optical_degradation only when its pre-FEC BER (or its NIC's)
    rose this many orders of magnitude; without CRC errors any BER rise found is optical."""
    ber_confidence: float = policy("optical_degradation").confidence.strong
    """optical_degradation from a pre-FEC BER rise of orders of magnitude."""
    symbol_confidence: float = policy("switch_port_errors").confidence.weak
    """switch_port_errors at a NIC's port from symbol errors on the NIC alone."""
    nic_down_confidence: float = policy("nic_down").confidence.strong
    """nic_down from a link-down counter or NIC series that stop while the node's others go on."""
    latency_confidence: float = policy("optical_degradation").confidence.weak
    """A fault seen only in the latency matrix (one-way: optical, else port errors)."""
    min_latency_pairs: int = 3
    """... and only when it explains at least this many slow node pairs."""
    parallel_ber_decades: float = 1.5
    """Latency cannot tell parallel links between the same two switches apart (ECMP spreads the
    probes over all of them): a latency-only finding on one of them moves to the port of that
    bundle whose pre-FEC BER rose at least this many orders of magnitude (the most, if several)."""


def _e(x: float) -> str:
    return f"{x:.1e}"


def _base(x: float, floor: float, fmt: str) -> str:
    return "0" if x <= floor * 1.000001 else format(x, fmt)


def _describe(a: CounterAnomaly) -> str:
    if a.signal == "crc_ratio":
        peers = f"; its {a.peers} collective peers {_base(a.peer, 1e-12, '.1e')}" if a.peers else ""
        return (f"{a.entity_id} CRC error ratio {_e(a.after)} errors/packet "
                f"(baseline {_base(a.before, 1e-12, '.1e')}{peers})")
    if a.signal == "pre_fec_ber":
        return f"{a.entity_id} pre-FEC BER {_e(a.after)} errors/bit (baseline {_e(a.before)})"
    if a.signal == "rdma_retransmits":
        return f"{a.entity_id} RDMA retransmits {a.after:.3g}/s (baseline {_base(a.before, 1e-3, '.2g')}/s)"
    if a.signal == "symbol_errors":
        return f"{a.entity_id} IB symbol errors {a.after:.3g}/s (baseline {_base(a.before, 1e-3, '.2g')}/s)"
    if a.signal == "link_downed":
        return f"{a.entity_id} link down (link_downed {a.before:.0f} -> {a.after:.0f} at {to_rfc3339(a.detected_at_s)})"
    return f"{a.entity_id} series stopped at {to_rfc3339(a.onset_s)}"


def _finding(category: str, kind: str, entity: str, root: Iterable[CounterAnomaly], conf: float,
             jobs: set[str], symptoms: list[CounterAnomaly]) -> Finding:
    root = list(root)
    onset = min(a.onset_s for a in root)
    return Finding(category, kind, entity, onset, None, min(conf, 0.99),
                   tuple(_describe(a) for a in root) + tuple(_describe(a) for a in symptoms[:5]),
                   "fabric", detected_at=min(a.detected_at_s for a in root),
                   symptoms=tuple(Symptom("nic", a.entity_id, a.signal, a.onset_s) for a in symptoms),
                   extra={"jobs": sorted(jobs)})


def _nic_port(inv: Inventory, nic: str) -> str | None:
    c = inv.nics.get(nic)
    return c.switch_port if c is not None else None


def _decades(a: CounterAnomaly | None) -> float:
    return float(np.log10(max(a.after, 1e-300) / max(a.before, 1e-300))) if a is not None else 0.0


def counter_findings(inv: Inventory, facts: CounterFacts, suspects: set[str], jobs_of: JobsOf,
                     cfg: FindingConfig = FindingConfig()) -> tuple[list[Finding], set[str]]:
    """Port and NIC findings; also returns the entities they explain (for the latency merge).

    Order: NICs that went down; ports with CRC errors or a BER rise (optical when the BER rose
    ``optical_decades`` or without CRC errors); NICs with a BER rise of their own; NICs with symbol
    errors alone (blamed on their port). Retransmitting NICs become symptoms of a port finding."""
    out: list[Finding] = []
    taken: set[str] = set()
    nic_symptoms = [a for ents in facts.anomalies.values() for a in ents
                    if a.entity_kind == "nic" and a.signal in ("rdma_retransmits", "symbol_errors")
                    and nic_gpu(inv, a.entity_id) not in suspects]
    for nic in sorted(e for e, v in facts.anomalies.items() if v[0].entity_kind == "nic"):
        out.extend(_nic_down(inv, facts, nic, jobs_of, cfg, taken))
    port_nic = {c.switch_port: c.id for c in inv.nics.values() if c.switch_port}
    for ent in sorted(e for e, v in facts.anomalies.items() if v[0].entity_kind == "switch_port"):
        if ent in taken:
            continue
        ber, crc = facts.get(ent, "pre_fec_ber"), facts.get(ent, "crc_ratio")
        nic_ber = facts.get(port_nic.get(ent, ""), "pre_fec_ber")
        if ber is None and crc is None:
            continue
        jobs = jobs_of(ent)
        sym = [a for a in nic_symptoms if a.entity_id not in taken and
               (_nic_port(inv, a.entity_id) == ent or (jobs & jobs_of(a.entity_id)))]
        if crc is not None and crc.weak and not sym:
            crc = None      # errors the crossing jobs do not feel: not an incident
            if ber is None:
                continue
        worst_ber = max((x for x in (ber, nic_ber) if x is not None), key=_decades, default=None)
        if worst_ber is not None and (crc is None or _decades(worst_ber) >= cfg.optical_decades):
            if worst_ber is nic_ber and nic_ber is not None:
                continue            # the NIC side is the worse end: its own finding below
            root = [worst_ber, *([crc] if crc else []), *([nic_ber] if nic_ber else [])]
            cat, conf = "optical_degradation", cfg.ber_confidence
        elif crc is not None:
            root, cat, conf = [crc, *([ber] if ber else [])], "switch_port_errors", cfg.crc_confidence
        else:
            continue
        conf += cfg.corroborated_bonus if sym else 0.0
        out.append(_finding(cat, "switch_port", ent, root, conf, jobs, sym))
        taken.update([ent, *(a.entity_id for a in sym), port_nic.get(ent, ent)])
    for nic in sorted(e for e, v in facts.anomalies.items() if v[0].entity_kind == "nic"):
        if nic not in taken:
            out.extend(_nic_finding(inv, facts, nic, suspects, jobs_of, cfg, taken))
    return out, taken


def _nic_down(inv: Inventory, facts: CounterFacts, nic: str, jobs_of: JobsOf, cfg: FindingConfig,
              taken: set[str]) -> list[Finding]:
    down = facts.get(nic, "link_downed") or facts.get(nic, "stopped")
    c = inv.nics.get(nic)
    if down is None or c is None:
        return []
    siblings = [x.id for x in inv.nodes[c.node].nics] if c.node in inv.nodes else []
    if facts.get(nic, "stopped") and all(facts.get(s, "stopped") for s in siblings):
        return []           # the whole node went quiet: not a NIC fault
    taken.update([nic, *([c.switch_port] if c.switch_port else [])])
    return [_finding("nic_down", "nic", nic, [down], cfg.nic_down_confidence, jobs_of(nic), [])]


def _nic_finding(inv: Inventory, facts: CounterFacts, nic: str, suspects: set[str], jobs_of: JobsOf,
                 cfg: FindingConfig, taken: set[str]) -> list[Finding]:
    ber = facts.get(nic, "pre_fec_ber")
    sym = facts.get(nic, "symbol_errors")
    c = inv.nics.get(nic)
    if ber is not None:
        taken.add(nic)
        return [_finding("optical_degradation", "nic", nic, [ber], cfg.ber_confidence, jobs_of(nic), [])]
    if sym is not None and nic_gpu(inv, nic) not in suspects and c is not None and c.switch_port \
            and c.switch_port not in taken:
        taken.update([nic, c.switch_port])
        return [_finding("switch_port_errors", "switch_port", c.switch_port, [sym], cfg.symbol_confidence,
                         jobs_of(c.switch_port), [])]
    return []


def latency_findings(locs: list[Localisation], onset_of: Callable[[Localisation], float],
                     out: list[Finding], jobs_of: JobsOf, cfg: FindingConfig = FindingConfig()) -> list[Finding]:
    """Add latency evidence to the counter finding at a localised element; a localisation no
    counter explains becomes a finding of its own (one-way: optical_degradation)."""
    extra: list[Finding] = []
    for loc in locs:
        elems = {loc.element, *(e.split("@")[0] for e in loc.equivalents)}
        way = f" one-way ({loc.direction})" if loc.direction else ""
        text = f"latency up on {len(loc.pairs)} node pairs crossing {loc.element}{way}"
        hit = [i for i, f in enumerate(out)
               if f.entity_id in elems or any(s.entity_id in elems for s in f.symptoms)]
        if hit:
            i = hit[0]
            f = out[i]
            out[i] = Finding(f.category, f.entity_kind, f.entity_id, f.start, f.end,
                             min(0.99, f.confidence + cfg.corroborated_bonus), (*f.evidence, text), f.source,
                             f.detected_at, f.symptoms, f.extra)
            continue
        if loc.kind not in ("switch_port", "nic", "link") or len(loc.pairs) < cfg.min_latency_pairs:
            continue
        cat = "optical_degradation" if loc.direction else "switch_port_errors"
        kind = loc.kind
        extra.append(Finding(cat, kind, loc.element, onset_of(loc), None, cfg.latency_confidence,
                             (text,), "fabric", extra={"jobs": sorted(jobs_of(loc.element)),
                                                        "direction": loc.direction}))
    return extra


def _decades_of(facts_levels: dict[str, dict[str, float]], entity: str) -> float:
    lv = facts_levels.get(entity, {})
    late, early = lv.get("pre_fec_ber", float("nan")), lv.get("pre_fec_ber_early", float("nan"))
    if not (late > 0 and early > 0):
        return float("nan")
    return float(np.log10(late / early))


def refine_by_ber(findings: list[Finding], inv: Inventory, levels: dict[str, dict[str, float]],
                  cfg: FindingConfig = FindingConfig()) -> list[Finding]:
    """Move each latency-only finding on a switch-to-switch link (or its port) to the port of the
    parallel bundle whose pre-FEC BER rose by orders of magnitude (``parallel_ber_decades``)."""
    out: list[Finding] = []
    for f in findings:
        if f.source != "fabric" or not f.evidence or not f.evidence[0].startswith("latency up"):
            out.append(f)
            continue
        pair = _switch_pair(inv, f.entity_id)
        ports = [p for lk in inv.links for p in (lk.a, lk.b)
                 if pair is not None and {inv.switch_of_port(lk.a), inv.switch_of_port(lk.b)} == pair]
        scored = [(d, p) for p in ports if np.isfinite(d := _decades_of(levels, p)) and d >= cfg.parallel_ber_decades]
        if not scored:
            out.append(f)
            continue
        decades, port = max(scored)
        lv = levels[port]
        text = (f"{port} pre-FEC BER {lv['pre_fec_ber']:.1e} (was {lv['pre_fec_ber_early']:.1e}, "
                f"+{decades:.1f} decades) on a link parallel to the one latency points at")
        out.append(Finding("optical_degradation", "switch_port", port, f.start, f.end,
                           max(f.confidence, cfg.ber_confidence - 0.1), (text, *f.evidence), f.source,
                           f.detected_at, f.symptoms, f.extra))
    return out


def _switch_pair(inv: Inventory, entity: str) -> set[str | None] | None:
    link = inv.links_by_id.get(entity)
    if link is not None:
        return {inv.switch_of_port(link.a), inv.switch_of_port(link.b)}
    for lk in inv.links:
        if entity in (lk.a, lk.b):
            return {inv.switch_of_port(lk.a), inv.switch_of_port(lk.b)}
    return None
