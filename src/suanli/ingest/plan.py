"""Which files a load reads, and the fingerprint that says whether a file was loaded before.

A path may be a folder (``inventory.yaml``, ``metrics.om``, ``traces.otlp.jsonl``, ``kernel.log``,
``trainer.log``, and any other ``*.om``/``*.prom``/``*.txt`` metrics, ``*.jsonl``/``*.json``/
``*.pb`` traces, ``*.log`` logs, each also as ``.gz``; ``truth.json`` and other files are ignored)
or a single file of those kinds (``*.yaml``/``*.yml`` is an inventory).
"""

from __future__ import annotations

import hashlib
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from suanli.errors import InputError

__all__ = ["FINGERPRINT_BYTES", "UNKNOWN_KIND", "FileKind", "LoadPlan", "fingerprint", "plan_paths"]

FileKind = Literal["metrics", "traces", "logs"]

METRIC_SUFFIXES = (".om", ".prom", ".txt", ".openmetrics")
TRACE_SUFFIXES = (".jsonl", ".json", ".pb", ".binpb", ".ndjson")
LOG_SUFFIXES = (".log",)
INVENTORY_NAMES = ("inventory.yaml", "inventory.yml")
IGNORED_NAMES = frozenset({"truth.json"})
FINGERPRINT_BYTES = 1 << 20
"""Bytes hashed from each end of a file for its fingerprint (all of a file up to twice this)."""
UNKNOWN_KIND = "not a recognised inventory, metrics, traces or log file"


@dataclass
class LoadPlan:
    """The files of one load, by kind."""

    inventory: Path | None = None
    metrics: list[Path] = field(default_factory=list)
    traces: list[Path] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)
    unknown: list[Path] = field(default_factory=list)
    """Files given by name that are of no known kind (files in a folder are just ignored)."""
    skipped: list[str] = field(default_factory=list)
    """``path: why, skipped`` for what looks like telemetry but cannot be read: empty, a folder, a
    symbolic link loop, a FIFO."""

    def files(self) -> list[tuple[FileKind, Path]]:
        return ([("metrics", p) for p in self.metrics] + [("traces", p) for p in self.traces]
                + [("logs", p) for p in self.logs])

    def add(self, kind: FileKind, path: Path) -> None:
        {"metrics": self.metrics, "traces": self.traces, "logs": self.logs}[kind].append(path)


def _kind_of_file(path: Path) -> FileKind | Literal["inventory"] | None:
    name = path.name.lower()
    if name in IGNORED_NAMES:
        return None
    if name.endswith((".yaml", ".yml")):
        return "inventory"
    kinds: tuple[tuple[FileKind, tuple[str, ...]], ...] = (
        ("metrics", METRIC_SUFFIXES), ("traces", TRACE_SUFFIXES), ("logs", LOG_SUFFIXES))
    for kind, suffixes in kinds:
        if name.endswith(suffixes) or name.endswith(tuple(s + ".gz" for s in suffixes)):
            return kind
    return None


def _entries(path: Path, plan: LoadPlan) -> list[Path]:
    """A folder's files (its one inventory by name, no other YAML), or the path itself. An entry
    named like a telemetry file that is not a regular file with something in it (a folder, a
    symbolic link loop or to nothing, a FIFO, an empty file) is named in ``plan.skipped``."""
    if not path.is_dir():
        return [path]
    out = []
    for p in sorted(path.iterdir()):
        why = _not_loadable(p)
        if why is not None and not (why == "empty" and _kind_of_file(p) == "inventory"):
            if _kind_of_file(p) is not None:
                plan.skipped.append(f"{p}: {why}, skipped")
            continue
        if _kind_of_file(p) != "inventory" or p.name.lower() in INVENTORY_NAMES:
            out.append(p)
    return out


def _not_loadable(path: Path) -> str | None:
    """Why ``path`` cannot be read as a file (None when it can). Never follows a loop: ``stat``
    fails with ELOOP, and a folder is not descended."""
    try:
        st = path.stat()
    except OSError as exc:
        if path.is_symlink():
            return "a symbolic link that leads nowhere (a loop or a missing target)"
        return f"cannot be read ({exc.strerror or exc})"
    if stat.S_ISDIR(st.st_mode):
        return "a folder, not a file"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file (a FIFO, socket or device)"
    return "empty" if st.st_size == 0 else None


def plan_paths(paths: Sequence[Path]) -> LoadPlan:
    """Sort paths into inventory / metrics / traces / logs; InputError for a path that is missing
    or not a readable regular file (a FIFO would block the read), for two inventories, and for
    files of no known kind when nothing else was given. Entries of a folder that cannot be read
    are ``plan.skipped`` (a warning each), never silence and never a hang."""
    plan = LoadPlan()
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            what = "a symbolic link that leads nowhere (a loop or a missing target)" if path.is_symlink() else \
                "no such file or folder"
            raise InputError(what, file=str(path))
        why = None if path.is_dir() else _not_loadable(path)
        if why is not None and why != "empty":
            raise InputError(why, file=str(path))
        if why == "empty" and _kind_of_file(path) != "inventory":      # an empty inventory: its parser says so
            plan.skipped.append(f"{path}: empty, skipped")
            continue
        for entry in _entries(path, plan):
            kind = _kind_of_file(entry)
            if kind is None and not path.is_dir() and entry.name.lower() not in IGNORED_NAMES:
                plan.unknown.append(entry)
            if kind == "inventory":
                if plan.inventory is not None and plan.inventory != entry:
                    raise InputError(f"two inventories given (also {plan.inventory})", file=str(entry))
                plan.inventory = entry
            elif kind is not None:
                plan.add(kind, entry)
    if plan.unknown and plan.inventory is None and not plan.files() and not plan.skipped:
        raise InputError(UNKNOWN_KIND, file=str(plan.unknown[0]))
    return plan


def fingerprint(path: Path, inventory_text: str | None) -> str:
    """Absolute path, size, mtime, a BLAKE2b of the first and last ``FINGERPRINT_BYTES`` and of
    the inventory the file is resolved against: equal fingerprints load to equal records."""
    st = path.stat()
    h = hashlib.blake2b(digest_size=16)
    with path.open("rb") as fh:
        h.update(fh.read(FINGERPRINT_BYTES))
        if st.st_size > 2 * FINGERPRINT_BYTES:
            fh.seek(st.st_size - FINGERPRINT_BYTES)
        h.update(fh.read())
    h.update(b"\0" + (inventory_text or "").encode("utf-8", "surrogatepass"))
    return f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{h.hexdigest()}"
