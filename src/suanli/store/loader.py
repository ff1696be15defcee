"""Read a scenario folder or single files into a store (spec/telemetry.md "The scenario folder").

A path may be a folder (``inventory.yaml``, ``metrics.om``, ``traces.otlp.jsonl``, ``kernel.log``,
``trainer.log``, and any other ``*.om``/``*.prom``/``*.txt`` metrics, ``*.jsonl``/``*.json``/
``*.pb`` traces, ``*.log`` logs; ``truth.json`` and other files are ignored) or a single file of
those kinds (``*.yaml``/``*.yml`` is an inventory). The inventory is loaded first (from the
paths, else the one the store already keeps) and stored with ``put_inventory``; each record is
resolved once, here. Metrics go through DuckDB's bulk path when the store is a
:class:`~suanli.store.duck.DuckStore`, else through the streaming parser and ``add_samples``.

``progress(what, done, total)`` is called before each file (``done`` files of ``total``) and once
at the end with ``done == total``.

A file given by name that is of no known kind is an InputError when nothing else can be loaded,
else one reject. A file that cannot be read (a corrupt ``.gz``) is one reject; the others load.
A store with ``file_loaded``/``mark_file_loaded`` (DuckStore) skips a file it already holds
unchanged under the same inventory (``fingerprint``): ``file: already loaded, skipped`` in the
report's reasons (not counted as a reject) and ``files_skipped`` in ``loaded``.
"""

from __future__ import annotations

import hashlib
import importlib
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from suanli.errors import InputError
from suanli.ingest.openmetrics import read_openmetrics
from suanli.ingest.records import IngestReport
from suanli.inventory import Resolver
from suanli.store.api import Store, add_batches

__all__ = ["LoadPlan", "fingerprint", "load_paths", "missing_inputs", "plan_paths"]

Progress = Callable[[str, int, int], None]

METRIC_SUFFIXES = (".om", ".prom", ".txt", ".openmetrics")
TRACE_SUFFIXES = (".jsonl", ".json", ".pb", ".binpb", ".ndjson")
LOG_SUFFIXES = (".log",)
INVENTORY_NAMES = ("inventory.yaml", "inventory.yml")
IGNORED_NAMES = frozenset({"truth.json"})
FINGERPRINT_BYTES = 1 << 20
"""Bytes hashed from each end of a file for its fingerprint (all of a file up to twice this)."""
READ_ERRORS = (OSError, EOFError, zlib.error, UnicodeDecodeError)


@dataclass
class LoadPlan:
    """The files of one load, by kind."""

    inventory: Path | None = None
    metrics: list[Path] = field(default_factory=list)
    traces: list[Path] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)
    unknown: list[Path] = field(default_factory=list)
    """Files given by name that are of no known kind (files in a folder are just ignored)."""

    def files(self) -> list[tuple[str, Path]]:
        return ([("metrics", p) for p in self.metrics] + [("traces", p) for p in self.traces]
                + [("logs", p) for p in self.logs])


def _kind_of_file(path: Path) -> str | None:
    name = path.name.lower()
    if name in IGNORED_NAMES:
        return None
    if name.endswith((".yaml", ".yml")):
        return "inventory"
    for kind, suffixes in (("metrics", METRIC_SUFFIXES), ("traces", TRACE_SUFFIXES),
                           ("logs", LOG_SUFFIXES)):
        if name.endswith(suffixes) or name.endswith(tuple(s + ".gz" for s in suffixes)):
            return kind
    return None


def plan_paths(paths: Sequence[Path]) -> LoadPlan:
    """Sort paths into inventory / metrics / traces / logs; InputError for a path that is missing."""
    plan = LoadPlan()
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise InputError("no such file or folder", file=str(path))
        if path.is_dir():
            entries: Iterable[Path] = sorted(p for p in path.iterdir() if p.is_file())
            entries = [p for p in entries
                       if _kind_of_file(p) != "inventory" or p.name.lower() in INVENTORY_NAMES]
        else:
            entries = [path]
        for entry in entries:
            kind = _kind_of_file(entry)
            if kind is None and not path.is_dir() and entry.name.lower() not in IGNORED_NAMES:
                plan.unknown.append(entry)
            if kind == "inventory":
                if plan.inventory is not None and plan.inventory != entry:
                    raise InputError(f"two inventories given (also {plan.inventory})", file=str(entry))
                plan.inventory = entry
            elif kind is not None:
                getattr(plan, kind).append(entry)
    if plan.unknown and plan.inventory is None and not plan.files():
        raise InputError(_UNKNOWN, file=str(plan.unknown[0]))
    return plan


_UNKNOWN = "not a recognised inventory, metrics, traces or log file"


def _inventory(plan: LoadPlan, store: Store) -> Any | None:
    inventory_mod = importlib.import_module("suanli.inventory")
    if plan.inventory is not None:
        text = _inventory_text(plan.inventory)
        inv = inventory_mod.parse_inventory(text, source=str(plan.inventory))
        store.put_inventory(text, str(plan.inventory))
        return inv
    kept = store.inventory_text()
    if kept is None:
        return None
    source = str(getattr(store, "inventory_source", lambda: None)() or "inventory.yaml")
    return inventory_mod.parse_inventory(kept, source=source)


def _inventory_text(path: Path) -> str:
    """The inventory's text; InputError naming the file (and line) when it is not UTF-8 or unreadable."""
    try:
        data = path.read_bytes()
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", file=str(path)) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise InputError(f"not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start})",
                         file=str(path), line=line) from None


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


def load_paths(paths: Sequence[Path], store: Store, *, progress: Progress | None = None) -> IngestReport:
    """Load files into ``store`` and return the summed report (each file's is also ``add_report``-ed)."""
    plan = plan_paths(paths)
    inventory = _inventory(plan, store)
    resolver = inventory.resolver if inventory is not None else None
    total = IngestReport()
    files = plan.files()
    for i, (kind, path) in enumerate(files):
        if progress is not None:
            progress(f"{kind} {path.name}", i, len(files))
        report = IngestReport()
        _load_file(kind, path, store, resolver, report)
        store.add_report(str(path), report)
        total.merge(report)
    for path in plan.unknown:
        total.reject(f"{path}: {_UNKNOWN}")
    store.flush()
    if progress is not None:
        progress("done", len(files), len(files))
    return total


def _load_file(kind: str, path: Path, store: Store, resolver: Resolver | None,
               report: IngestReport) -> None:
    """One file into ``store`` (skipped when already loaded); a read error is one reject."""
    seen, mark = getattr(store, "file_loaded", None), getattr(store, "mark_file_loaded", None)
    try:
        fp = fingerprint(path, store.inventory_text()) if callable(seen) and callable(mark) else None
        if fp is not None and seen(fp):  # type: ignore[misc]
            report.add("files_skipped")
            report.reasons.append(f"{path.name}: already loaded, skipped")
            return
        if kind == "metrics":
            _load_metrics(path, store, resolver, report)
        elif kind == "traces":
            _load_traces(path, store, resolver, report)
        else:
            store.add_events(_counted(_read_logs(path, resolver, report), report, "events"))
    except READ_ERRORS as err:
        report.reject(f"{path.name}: unreadable ({str(err) or type(err).__name__})")
        return
    if fp is not None:
        mark(fp, str(path))  # type: ignore[misc]


def _load_metrics(path: Path, store: Store, lookups: Resolver | None, report: IngestReport) -> None:
    bulk = getattr(store, "load_openmetrics", None)
    if callable(bulk):
        bulk(path, lookups, report)
        return
    add_batches(store, read_openmetrics(path, lookups, report), report)


def _load_traces(path: Path, store: Store, resolver: Any, report: IngestReport) -> None:
    bulk = getattr(store, "load_otlp_jsonl", None)      # DuckStore: DuckDB parses clean JSON lines
    if callable(bulk):
        bulk(path, resolver, report)
        return
    store.add_spans(_counted(_read_traces(path, resolver, report), report, "spans"))


def _counted(items: Iterable[Any], report: IngestReport, kind: str) -> Iterator[Any]:
    """Pass records through; count them only if the parser did not (the parsers count their own)."""
    n = 0
    for item in items:
        n += 1
        yield item
    if n and not report.loaded.get(kind):
        report.add(kind, n)


def _read_traces(path: Path, resolver: Any, report: IngestReport) -> Iterator[Any]:
    try:
        mod = importlib.import_module("suanli.ingest.otlp")
    except ImportError as err:
        report.reject(f"{path.name}: OTLP reader unavailable ({err})")
        return iter(())
    return mod.read_otlp(path, resolver, report)  # type: ignore[no-any-return]


def _read_logs(path: Path, resolver: Any, report: IngestReport) -> Iterator[Any]:
    try:
        mod = importlib.import_module("suanli.ingest.logs")
    except ImportError as err:
        report.reject(f"{path.name}: log reader unavailable ({err})")
        return iter(())
    return mod.read_log(path, resolver, report)  # type: ignore[no-any-return]


def missing_inputs(store: Store) -> list[str]:
    """Which of ``metrics``, ``traces``, ``logs`` the store holds nothing of (for ``missing``)."""
    stats = getattr(store, "stats", None)
    if callable(stats):                                    # DuckStore: row counts, no data read
        counts = stats()
        have = {"metrics": counts.get("samples", 0), "traces": counts.get("spans", 0),
                "logs": counts.get("events", 0)}
    else:
        have = {"metrics": len(store.metrics()), "traces": len(store.spans()), "logs": len(store.events())}
    return [kind for kind in ("metrics", "traces", "logs") if not have[kind]]
