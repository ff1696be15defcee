"""The JSON shape of spec/diagnosis.md, checked key by key (keys may be added, none may be missing)."""

from __future__ import annotations

import re
from typing import Any

RFC3339_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")

# spec/diagnosis.md "Fault taxonomy": category -> the root_cause kinds it allows.
TAXONOMY: dict[str, set[str]] = {
    "gpu_memory_degradation": {"gpu"}, "gpu_memory_failure": {"gpu"}, "gpu_lost": {"gpu"},
    "gpu_thermal": {"gpu"}, "pcie_riser": {"gpu"}, "gpu_straggler": {"gpu"},
    "nvlink_degradation": {"gpu"}, "nvswitch_fault": {"nvswitch", "node"}, "switch_port_errors": {"switch_port"},
    "optical_degradation": {"switch_port", "nic"}, "nic_down": {"nic"}, "storage_slow": {"storage"},
    "collective_hang": {"job"}, "oom": {"job"},
}

TOP = ("cluster", "window", "missing", "incidents", "predictions", "efficiency")
INCIDENT = ("id", "category", "root_cause", "confidence", "start", "detected_at", "end", "alerts",
            "suppressed", "impact", "evidence", "actions")
IMPACT = ("jobs", "gpus", "sla_ids", "lost_gpu_hours", "lost_cost")
ACTION = ("action", "target", "status")
PREDICTION = ("kind", "id", "event", "horizon_days", "probability", "health_score", "recommendation")
JOB = ("id", "mfu", "goodput", "time_split", "cost_per_effective_pflop", "forecast")
SPLIT = ("compute", "communication", "data_loading", "checkpoint", "failures", "other")
FORECAST = ("finish", "cost")


def _num(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _time(x: Any) -> bool:
    return isinstance(x, str) and RFC3339_Z.match(x) is not None


class _Check:
    def __init__(self) -> None:
        self.problems: list[str] = []

    def keys(self, obj: Any, keys: tuple[str, ...], where: str) -> bool:
        if not isinstance(obj, dict):
            self.problems.append(f"{where}: expected an object, got {type(obj).__name__}")
            return False
        missing = [k for k in keys if k not in obj]
        if missing:
            self.problems.append(f"{where}: missing {missing}")
        return not missing

    def that(self, ok: bool, where: str, what: str) -> None:
        if not ok:
            self.problems.append(f"{where}: {what}")


def shape_problems(doc: Any) -> list[str]:
    """Every way ``doc`` departs from the spec's shape (empty when it conforms)."""
    c = _Check()
    if not c.keys(doc, TOP, "$"):
        return c.problems
    c.that(isinstance(doc["cluster"], str), "cluster", "not a string")
    if c.keys(doc["window"], ("start", "end"), "window"):
        for k in ("start", "end"):
            c.that(_time(doc["window"][k]), f"window.{k}", f"not RFC 3339 UTC 'Z': {doc['window'][k]!r}")
    c.that(isinstance(doc["missing"], list), "missing", "not a list")
    for i, inc in enumerate(doc["incidents"]):
        _incident(c, inc, f"incidents[{i}]")
    for i, pred in enumerate(doc["predictions"]):
        if c.keys(pred, PREDICTION, f"predictions[{i}]"):
            c.that(_num(pred["probability"]) and 0 <= pred["probability"] <= 1,
                   f"predictions[{i}].probability", "not in [0, 1]")
    if c.keys(doc["efficiency"], ("jobs",), "efficiency"):
        for i, job in enumerate(doc["efficiency"]["jobs"]):
            _job(c, job, f"efficiency.jobs[{i}]")
    return c.problems


def _incident(c: _Check, inc: Any, where: str) -> None:
    if not c.keys(inc, INCIDENT, where):
        return
    if c.keys(inc["root_cause"], ("kind", "id"), f"{where}.root_cause"):
        kinds = TAXONOMY.get(inc["category"])
        c.that(kinds is not None, f"{where}.category", f"{inc['category']!r} is not in the taxonomy")
        c.that(kinds is None or inc["root_cause"]["kind"] in kinds, f"{where}.root_cause.kind",
               f"{inc['root_cause']['kind']!r} does not fit {inc['category']!r}")
    c.that(_num(inc["confidence"]) and 0 <= inc["confidence"] <= 1, f"{where}.confidence", "not in [0, 1]")
    for k in ("start", "detected_at"):
        c.that(_time(inc[k]), f"{where}.{k}", f"not RFC 3339 UTC 'Z': {inc[k]!r}")
    c.that(inc["end"] is None or _time(inc["end"]), f"{where}.end", "neither null nor a time")
    c.that(isinstance(inc["alerts"], int) and isinstance(inc["suppressed"], int)
           and 0 <= inc["suppressed"] <= inc["alerts"], f"{where}.alerts/suppressed", "not 0 <= suppressed <= alerts")
    if c.keys(inc["impact"], IMPACT, f"{where}.impact"):
        imp = inc["impact"]
        c.that(isinstance(imp["jobs"], list) and isinstance(imp["sla_ids"], list), f"{where}.impact", "jobs/sla_ids not lists")
        for k in ("gpus", "lost_gpu_hours", "lost_cost"):
            c.that(_num(imp[k]) and imp[k] >= 0, f"{where}.impact.{k}", f"not a number >= 0: {imp[k]!r}")
    c.that(isinstance(inc["evidence"], list) and all(isinstance(e, str) for e in inc["evidence"])
           and len(inc["evidence"]) > 0, f"{where}.evidence", "not a non-empty list of strings")
    for j, act in enumerate(inc["actions"]):
        c.keys(act, ACTION, f"{where}.actions[{j}]")


def _job(c: _Check, job: Any, where: str) -> None:
    if not c.keys(job, JOB, where):
        return
    c.that(_num(job["mfu"]) and 0 < job["mfu"] < 1, f"{where}.mfu", f"not in (0, 1): {job['mfu']!r}")
    c.that(_num(job["goodput"]) and 0 <= job["goodput"] <= 1, f"{where}.goodput", "not in [0, 1]")
    if c.keys(job["time_split"], SPLIT, f"{where}.time_split"):
        parts = [job["time_split"][k] for k in SPLIT]
        c.that(all(_num(p) and p >= 0 for p in parts), f"{where}.time_split", "a share is not a number >= 0")
        if all(_num(p) for p in parts):
            c.that(abs(sum(parts) - 1.0) <= 1e-6, f"{where}.time_split", f"sums to {sum(parts)!r}, not 1")
    c.that(_num(job["cost_per_effective_pflop"]), f"{where}.cost_per_effective_pflop", "not a number")
    if c.keys(job["forecast"], FORECAST, f"{where}.forecast"):
        fc = job["forecast"]
        c.that(fc["finish"] is None or _time(fc["finish"]), f"{where}.forecast.finish", "neither null nor a time")
