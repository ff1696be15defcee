"""What the pipeline reads besides the store: the rule file, Alertmanager webhook payloads, operator
overrides and refitted health-score weights. The only file I/O on the way to a diagnosis (the
analyses read none); each bad file is an InputError naming it (and its line)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from suanli.analysis.health.overrides import load_overrides
from suanli.analysis.health.weights import load_weights
from suanli.config import Config
from suanli.errors import InputError
from suanli.pipeline.alert_payloads import check_payload
from suanli.rules import RuleSet, load_rules

__all__ = ["Files", "Inputs", "load_inputs", "read_alert_payloads"]


@dataclass(frozen=True)
class Files:
    """Where the inputs are (None: none of that kind, or the shipped rule pack for ``rules``)."""

    rules: Path | None = None
    alerts: Path | None = None
    overrides: Path | None = None
    weights: Path | None = None


@dataclass(frozen=True)
class Inputs:
    """Loaded inputs: the rule pack (None: evaluate no rules) and Alertmanager payloads (version 4)."""

    ruleset: RuleSet | None = None
    alert_payloads: tuple[dict[str, Any], ...] = ()


def load_inputs(files: Files, config: Config) -> tuple[Inputs, Config]:
    """Read every input file; overrides and weights go into the health analysis's config."""
    health = config.health
    if files.overrides is not None:
        health = dataclasses.replace(health, overrides=tuple(load_overrides(files.overrides)))
    if files.weights is not None:
        health = dataclasses.replace(health, weights=load_weights(files.weights))
    inputs = Inputs(load_rules(files.rules), read_alert_payloads(files.alerts))
    return inputs, dataclasses.replace(config, health=health)


def read_alert_payloads(path: Path | None) -> tuple[dict[str, Any], ...]:
    """Alertmanager webhook payloads from a file: one JSON object, a list, or JSON lines."""
    if path is None:
        return ()
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})", file=str(path),
                         line=data.count(b"\n", 0, exc.start) + 1) from None
    lines: list[int | None]
    try:
        doc = json.loads(text)
        items = doc if isinstance(doc, list) else [doc]
        lines = [None] * len(items)
    except (json.JSONDecodeError, RecursionError):
        items, lines = [], []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    items.append(json.loads(line))
                except (json.JSONDecodeError, RecursionError) as exc:
                    raise InputError(f"not JSON: {getattr(exc, 'msg', 'nested too deep')}", file=str(path),
                                     line=n) from None
                lines.append(n)
    for n, (item, at) in enumerate(zip(items, lines, strict=True)):
        check_payload(item, str(path), at, f"payload {n}")
    return tuple(items)
