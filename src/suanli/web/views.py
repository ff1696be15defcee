"""What the API's list endpoints serve from the last step, shaped for pages that must hold at
10,240 GPUs: one page of rows at a time (``offset``/``limit``, a sort key, a filter) and the
aggregate by rack, so no page ever ships every GPU or an O(nodes²) latency matrix.

Pure functions of the step's diagnosis JSON, its fabric result and the inventory; the routes are
in :mod:`suanli.web.api_lists`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from suanli.analysis.fabric import FabricResult, Heatmap
    from suanli.inventory import Inventory
    from suanli.rules.alerts import Alert
    from suanli.rules.language import Rule

__all__ = ["MAX_LIMIT", "PORT_SIGNALS", "Page", "fabric_view", "gpu_rows", "paginate", "port_rows", "rack_summary",
           "rule_rows"]

MAX_LIMIT = 1000
"""The most rows one request returns."""
PORT_SIGNALS = ("crc_ratio", "pre_fec_ber", "rdma_retransmits_per_s", "symbol_errors_per_s")
"""The fabric analysis' per-port and per-NIC values (analysis.fabric.FabricResult.values)."""
_MAX_NODE_CELLS = 128
"""Above this many nodes the latency heatmap is served by rack (the worst pair of each rack pair)."""


@dataclass(frozen=True)
class Page:
    """Which rows a list request asks for; ``sort`` is a row key, ``desc`` its order, ``q`` a
    case-insensitive substring of any value."""

    offset: int = 0
    limit: int = 100
    sort: str | None = None
    desc: bool = False
    q: str = ""


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _sorted(rows: list[dict[str, Any]], key: str, desc: bool) -> list[dict[str, Any]]:
    """By ``key`` (numbers as numbers, the rest as text), rows without a value last either way."""
    present = [r for r in rows if not _missing(r.get(key))]
    absent = [r for r in rows if _missing(r.get(key))]
    numeric = all(isinstance(r[key], int | float) for r in present)
    present.sort(key=(lambda r: r[key]) if numeric else (lambda r: str(r[key])), reverse=desc)
    return present + absent


def paginate(rows: Sequence[dict[str, Any]], page: Page) -> dict[str, Any]:
    """``{"total", "offset", "limit", "rows"}``: the filtered, sorted rows from ``offset``."""
    needle = page.q.strip().lower()
    kept = [r for r in rows if not needle or any(needle in str(v).lower() for v in r.values())]
    if page.sort is not None:
        kept = _sorted(kept, page.sort, page.desc)
    limit = max(0, min(page.limit, MAX_LIMIT))
    offset = max(0, page.offset)
    return {"total": len(kept), "offset": offset, "limit": limit, "rows": kept[offset:offset + limit]}


def gpu_rows(predictions: Sequence[dict[str, Any]], inv: Inventory) -> list[dict[str, Any]]:
    """One row per inventory GPU: its node, rack, health score, P(DBE) and recommendation (None
    where the health analysis said nothing about it)."""
    by_id = {p["id"]: p for p in predictions if p.get("kind") == "gpu"}
    out = []
    for g in inv.gpus.values():
        p = by_id.get(g.id, {})
        out.append({"id": g.id, "node": g.node, "rack": inv.nodes[g.node].rack, "uuid": g.uuid,
                    "health_score": p.get("health_score"), "probability": p.get("probability"),
                    "horizon_days": p.get("horizon_days"), "recommendation": p.get("recommendation")})
    return out


def rack_summary(rows: Sequence[dict[str, Any]], at_risk: float = 0.5) -> list[dict[str, Any]]:
    """Per rack: GPUs, GPUs with a health score, the lowest and mean score, the highest P(DBE),
    and how many GPUs score under ``at_risk`` or are recommended anything but ``ok`` (watch, retire)."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[r["rack"]].append(r)
    out = []
    for rack in sorted(groups):
        rs = groups[rack]
        scores = [r["health_score"] for r in rs if isinstance(r["health_score"], int | float)]
        probs = [r["probability"] for r in rs if isinstance(r["probability"], int | float)]
        flagged = sum(1 for r in rs if (isinstance(r["health_score"], int | float) and r["health_score"] < at_risk)
                      or r["recommendation"] not in (None, "ok"))
        out.append({"rack": rack, "gpus": len(rs), "scored": len(scores),
                    "min_health_score": min(scores) if scores else None,
                    "mean_health_score": round(sum(scores) / len(scores), 6) if scores else None,
                    "max_probability": max(probs) if probs else None, "at_risk": flagged})
    return out


def _finite(x: float) -> float | None:
    return round(float(x), 6) if math.isfinite(x) else None


def port_rows(fabric: FabricResult | None, inv: Inventory) -> list[dict[str, Any]]:
    """Every switch port and NIC the fabric analysis measured, with its four error signals."""
    if fabric is None:
        return []
    out = []
    for entity, vals in fabric.values().items():
        kind = inv.kind_of(entity)
        if kind not in ("nic", "switch_port") or not any(s in vals for s in PORT_SIGNALS):
            continue
        out.append({"id": entity, "kind": kind, **{s: _finite(vals[s]) if s in vals else None for s in PORT_SIGNALS}})
    return out


def _ratio(h: Heatmap) -> npt.NDArray[np.float64]:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(h.latency_s / h.baseline_s, dtype=np.float64)


def _by_rack(ratio: npt.NDArray[np.float64], racks: Sequence[str]) -> tuple[list[str], npt.NDArray[np.float64]]:
    """The worst (highest) ratio of each (source rack, destination rack), NaN where none was probed."""
    names = sorted(set(racks))
    pos = {r: i for i, r in enumerate(names)}
    idx = np.array([pos[r] for r in racks], dtype=np.int64)
    out = np.full((len(names), len(names)), -np.inf)
    rows, cols = np.nonzero(np.isfinite(ratio))
    np.maximum.at(out, (idx[rows], idx[cols]), ratio[rows, cols])
    out[np.isneginf(out)] = np.nan
    return names, out


def fabric_view(fabric: FabricResult | None, by: str = "auto") -> dict[str, Any]:
    """The latency-ratio heatmap (latency / baseline; by node, or by rack when ``by`` says so or the
    cluster has more than 128 nodes), the anomalous pairs and the localisations' notes."""
    if fabric is None:
        return {"by": None, "labels": [], "ratio": [], "marks": [], "notes": []}
    h = fabric.heatmap
    ratio = _ratio(h)
    use_racks = by == "rack" or (by == "auto" and len(h.nodes) > _MAX_NODE_CELLS)
    labels, cells = _by_rack(ratio, h.racks) if use_racks else (list(h.nodes), ratio)
    return {"by": "rack" if use_racks else "node", "labels": labels,
            "ratio": [[_finite(v) for v in row] for row in cells],
            "marks": [{"src": s, "dst": d, "class": c} for s, d, c in h.marks], "notes": list(h.notes)}


def rule_rows(rules: Sequence[Rule], alerts: Sequence[Alert]) -> list[dict[str, Any]]:
    """One row per rule: where it was written, what it watches, and how many of its alerts are
    pending, firing and resolved now (Prometheus' states)."""
    counts: dict[str, dict[str, int]] = defaultdict(lambda: {"pending": 0, "firing": 0, "resolved": 0})
    for a in alerts:
        counts[a.rule][a.state] += 1
    return [{"name": r.name, "scope": r.scope, "category": r.category, "severity": r.severity,
             "for_s": r.for_s, "actions": [a.name for a in r.actions], "source": r.source,
             **counts[r.name]} for r in rules]
