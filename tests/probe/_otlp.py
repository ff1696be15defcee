"""Reading the probe's OTLP/JSON lines back, written independently of suanli's own parser."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def value(v: dict[str, Any]) -> Any:
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        assert isinstance(v["intValue"], str), "OTLP/JSON writes 64-bit integers as strings"
        return int(v["intValue"])
    if "doubleValue" in v:
        return float(v["doubleValue"])
    if "boolValue" in v:
        return bool(v["boolValue"])
    raise AssertionError(f"unexpected value {v}")


def attrs(kvs: list[dict[str, Any]] | None) -> dict[str, Any]:
    return {kv["key"]: value(kv["value"]) for kv in kvs or []}


def read_spans(path: Path) -> list[dict[str, Any]]:
    """Every span of the file, with ``resource`` and ``attrs`` decoded, in file order."""
    out: list[dict[str, Any]] = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        for rs in doc["resourceSpans"]:
            res = attrs(rs["resource"].get("attributes"))
            for ss in rs["scopeSpans"]:
                for sp in ss["spans"]:
                    out.append({**sp, "resource": res, "attrs": attrs(sp.get("attributes")),
                                "start": int(sp["startTimeUnixNano"]), "end": int(sp["endTimeUnixNano"])})
    return out


def by_name(spans: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [s for s in spans if s["name"] == name]
