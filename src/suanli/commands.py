"""Bodies of the CLI verbs (cli.py holds their flags). Thin wiring over the packages."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from suanli.errors import InputError
from suanli.timefmt import parse_time, to_rfc3339

if TYPE_CHECKING:
    from suanli.incidents.diagnose import Diagnosis
    from suanli.inventory import Inventory
    from suanli.store.duck import DuckStore


@dataclass(frozen=True)
class CommandsConfig:
    """Limits of the CLI verbs."""

    max_window_s: float = 86_400.0
    """Longest window ``diagnose``/``rca`` analyse in one run (24 h). The rule evaluator works on a
    dense time grid, so data spanning months (a store fed for weeks, a log with a wrong clock)
    would make one run crawl; a longer span needs ``--start``/``--end``."""


CONFIG = CommandsConfig()


def _progress() -> Any:
    from suanli.cli import progress_bar

    return progress_bar()


# ----------------------------------------------------------------------------------- simulate

def simulate_cmd(out: Console, scenario: str | None, out_dir: Path | None, seed: int,
                 nodes: int | None, minutes: float | None, list_: bool) -> int:
    from suanli.sim import list_scenarios, simulate

    if list_:
        table = Table("scenario", "what it injects", title="suanli simulate --scenario NAME")
        for name, desc in list_scenarios():
            table.add_row(name, desc)
        out.print(table)
        return 0
    if not scenario or out_dir is None:
        raise InputError("simulate needs --scenario NAME and --out DIR (or --list)")
    if nodes is not None and not 2 <= nodes <= 1280:
        raise InputError(f"--nodes {nodes}: expected 2..1280")
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError("--out: is a file, expected a folder", file=str(out_dir))
    with _progress() as progress:
        path = simulate(scenario, out_dir, seed=seed, nodes=nodes, minutes=minutes, progress=progress)
    out.print(f"wrote scenario {scenario!r} (seed {seed}) to {path}")
    return 0


# ------------------------------------------------------------------------------------- ingest

def _open_store(db: Path, must_exist: bool) -> DuckStore:
    """Open ``db``; a missing, unreadable, locked or non-DuckDB file is an InputError naming it."""
    import duckdb

    from suanli.store.duck import DuckStore

    if must_exist and not db.exists():
        raise InputError(f"{db}: no such database (run `suanli ingest PATH... --db {db}` first)")
    if db.is_dir():
        raise InputError("is a folder, expected a DuckDB file", file=str(db))
    if not db.parent.is_dir():
        raise InputError(f"folder {db.parent} does not exist", file=str(db))
    try:
        return DuckStore(db)
    except duckdb.Error as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise InputError(f"cannot open as a suanli database: {first}", file=str(db)) from None


def _remove_db(db: Path) -> None:
    """Delete a database file (and its write-ahead log) that a failed ingest created."""
    for path in (db, db.with_name(db.name + ".wal")):
        path.unlink(missing_ok=True)


def _report_table(report: Any) -> Table:
    table = Table("records", "loaded", "unresolved", title="ingest summary")
    for kind in sorted(set(report.loaded) | set(report.unresolved)):
        table.add_row(kind, f"{report.loaded.get(kind, 0):,}", f"{report.unresolved.get(kind, 0):,}")
    table.add_row("rejected", f"{report.rejected:,}", "")
    return table


def ingest_cmd(out: Console, paths: list[Path], db: Path) -> int:
    from suanli.ingest.load import load_paths

    for p in paths:
        if not p.exists():
            raise InputError(f"{p}: no such file or folder")
    created = not db.exists()
    store = _open_store(db, must_exist=False)
    done = False
    try:
        with _progress() as progress:
            report = load_paths(paths, store, progress=progress)
        store.flush()
        inventory_kept = store.inventory_text() is not None
        done = True
    finally:
        store.close()
        if created and not done:
            _remove_db(db)
    out.print(_report_table(report))
    for reason in report.reasons[:10]:
        tag = "skipped" if reason.endswith("already loaded, skipped") else "rejected"
        out.print(f"  {tag}: {reason}", markup=False, highlight=False)
    out.print(f"database: {db}")
    if not inventory_kept:
        from suanli.cli import err

        err.print(f"warning: {db} holds no inventory: every record above stays unresolved; ingest the "
                  "inventory.yaml first, then the data", markup=False, highlight=False)
    return 0


def _inventory_of(store: Any) -> Inventory:
    from suanli.inventory import parse_inventory

    text = store.inventory_text()
    if not text:
        raise InputError("the database holds no inventory: ingest an inventory.yaml with the data")
    return parse_inventory(text, "inventory.yaml (stored)")


# -------------------------------------------------------------------------------------- check

def check_cmd(out: Console, db: Path, rules: Path | None) -> int:
    from suanli.rules import load_rules
    from suanli.store.check import check

    ruleset = load_rules(rules)
    store = _open_store(db, must_exist=True)
    try:
        report = check(store, _inventory_of(store), rules_loaded=len(ruleset.rules),
                       inhibitions=len(ruleset.inhibit_rules))
    finally:
        store.close()
    for line in report.problems:
        out.print(f"- {line}", markup=False, highlight=False)
    table = Table("dimension", "level", "why", title="observability maturity")
    for dim, (level, why) in report.maturity.items():
        table.add_row(dim, str(level), why)
    out.print(table)
    out.print("check: ok" if report.ok else f"check: {len(report.problems)} problem(s)")
    return 0


# ----------------------------------------------------------------------------------- diagnose

def _load_folder(folder: Path) -> DuckStore:
    from suanli.ingest.load import load_paths
    from suanli.store.duck import DuckStore

    if not folder.is_dir():
        raise InputError(f"{folder}: not a folder")
    if not any((folder / name).is_file() for name in ("inventory.yaml", "inventory.yml")):
        raise InputError(f"{folder}/inventory.yaml: missing (every scenario folder needs one)")
    store = DuckStore(None)
    with _progress() as progress:
        load_paths([folder], store, progress=progress)
    store.flush()
    return store


def run_diagnosis(folder: Path | None, db: Path | None, start: str | None, end: str | None,
                  rules: Path | None, alerts: Path | None = None) -> tuple[Diagnosis, Any, Inventory]:
    from suanli.analysis.health import HealthConfig
    from suanli.incidents.diagnose import DiagnoseConfig, diagnose
    from suanli.incidents.signals import read_alert_payloads
    from suanli.store.api import missing_inputs

    if (folder is None) == (db is None):
        raise InputError("diagnose needs a scenario folder or --db FILE (one of them)")
    bounds = (_flag_time("--start", start), _flag_time("--end", end))
    if rules is not None:
        from suanli.rules import load_rules

        load_rules(rules)  # a bad --rules file is exit 2 here, not a silent run without rules
    store = _load_folder(folder) if folder is not None else _open_store(db, must_exist=True)  # type: ignore[arg-type]
    try:
        inventory = _inventory_of(store)
        window = _window(store.time_range(), bounds)
    except BaseException:
        store.close()
        raise
    health = HealthConfig(overrides_path=str(db.with_suffix(".overrides.jsonl"))) if db is not None else HealthConfig()
    diag = diagnose(store, inventory, window=window, missing=missing_inputs(store),
                    config=DiagnoseConfig(health=health, rules_path=rules,
                                          alert_payloads=read_alert_payloads(alerts)))
    return diag, store, inventory


def _flag_time(flag: str, text: str | None) -> float | None:
    """``--start``/``--end`` as epoch seconds; InputError naming the flag when it is not a time."""
    if text is None:
        return None
    try:
        ts = parse_time(text)
    except (ValueError, OverflowError):
        ts = math.nan
    if not math.isfinite(ts) or not -1e11 < ts < 1e11:
        raise InputError(f"{flag} {text!r}: not a time (expected RFC 3339, e.g. 2026-03-15T00:20:00Z)")
    return ts


def _when(ts: float) -> str:
    """RFC 3339 where representable, else the raw epoch seconds (a stray sample at t=1e300)."""
    try:
        return to_rfc3339(ts) or f"t={ts:g} s"
    except (OverflowError, OSError, ValueError):
        return f"t={ts:g} s"


def _window(data: tuple[float, float] | None, bounds: tuple[float | None, float | None]
            ) -> tuple[float, float]:
    """The analysed window: the flags where given, else the data's extent; checked for order and
    length (``CommandsConfig.max_window_s``)."""
    lo, hi = data or (0.0, 0.0)
    start = bounds[0] if bounds[0] is not None else lo
    end = bounds[1] if bounds[1] is not None else hi
    if end < start:
        first = "--start" if bounds[0] is not None else "the data's start"
        last = "--end" if bounds[1] is not None else "the data's end"
        raise InputError(f"{first} {_when(start)} is after {last} {_when(end)}")
    if end - start > CONFIG.max_window_s:
        what = "--start .. --end" if None not in bounds else "the data"
        hours = (end - start) / 3600
        length = f"{hours:,.0f} h" if hours < 1e9 else f"{hours:.3g} h"
        raise InputError(f"{what} spans {_when(start)} .. {_when(end)} ({length}); diagnose at most "
                         f"{CONFIG.max_window_s / 3600:g} h at a time: pass --start/--end")
    return start, end


def diagnose_cmd(out: Console, folder: Path | None, db: Path | None, as_json: bool, start: str | None,
                 end: str | None, rules: Path | None, heatmap: Path | None, alerts: Path | None) -> int:
    diag, store, _inv = run_diagnosis(folder, db, start, end, rules, alerts)
    try:
        if heatmap is not None:
            _write_heatmap(diag, heatmap)
        if as_json:
            print(json.dumps(diag.to_json(), indent=2))
            from suanli.cli import err

            for line in diag.analysis_errors:
                err.print(f"analysis error: {line} (run with --debug for a traceback)", markup=False,
                          highlight=False)
        else:
            from suanli.report.terminal import print_diagnosis

            print_diagnosis(out, diag)
    finally:
        store.close()
    return 0


def _write_heatmap(diag: Diagnosis, path: Path) -> None:
    from suanli.report.heatmap import write_heatmap

    fabric = diag.results.get("fabric")
    if fabric is None or getattr(fabric, "heatmap", None) is None:
        raise InputError("no latency probes (suanli_link_latency_seconds) to draw a heatmap from")
    write_heatmap(fabric.heatmap, path)


# ---------------------------------------------------------------------------------------- rca

def rca_cmd(out: Console, job: str, sla_id: str | None, start: str, end: str, out_file: Path,
            db: Path, folder: Path | None, pdf: Path | None = None) -> int:
    from suanli.report.rca import html_to_pdf, write_rca

    diag, store, inv = run_diagnosis(folder, None if folder else db, start, end, None)
    try:
        if job not in inv.jobs:
            raise InputError(f"--job {job}: unknown job (known: {', '.join(sorted(inv.jobs))})")
        write_rca(out_file, diag, store, inv, job, sla_id)
    finally:
        store.close()
    out.print(f"wrote {out_file}")
    if pdf is not None:
        out.print(f"wrote {html_to_pdf(out_file, pdf)}")
    return 0


# --------------------------------------------------------------------------------------- demo

def demo_cmd(out: Console, out_dir: Path, seed: int) -> int:
    from suanli.report.rca import write_rca
    from suanli.report.terminal import print_diagnosis
    from suanli.sim import demo_cluster

    out.rule("suanli demo")
    folder = demo_cluster(out_dir / "scenario", seed=seed)
    out.print(f"simulated a 16-node cluster with two jobs and two faults into {folder}")
    db = out_dir / "demo.duckdb"
    if db.exists():
        db.unlink()
    ingest_cmd(out, [folder], db)
    check_cmd(out, db, None)
    diag, store, inv = run_diagnosis(None, db, None, None, None)
    try:
        print_diagnosis(out, diag)
        truth = folder / "truth.json"
        if truth.exists():
            faults = json.loads(truth.read_text()).get("faults", [])
            out.print("injected (truth.json): " + "; ".join(
                f"{f['category']} at {f['root_cause']['id']}" for f in faults))
        for inc in diag.incidents[:1]:
            jobs = inc.impact.get("jobs") or sorted(inv.jobs)
            report = out_dir / "rca.html"
            write_rca(report, diag, store, inv, str(jobs[0]), None)
            out.print(f"root-cause report: {report}")
        (out_dir / "diagnosis.json").write_text(json.dumps(diag.to_json(), indent=2))
        out.print(f"diagnosis JSON: {out_dir / 'diagnosis.json'}")
    finally:
        store.close()
    return 0


# ------------------------------------------------------------------------------------ overrides

def override_cmd(out: Console, gpu: str, state: str, reason: str, who: str, db: Path) -> int:
    from suanli.analysis.overrides import record_override

    if state not in ("healthy", "retired"):
        raise InputError(f"--state {state}: expected healthy or retired")
    path = db.with_suffix(".overrides.jsonl")
    store = _open_store(db, must_exist=True)
    try:
        inv = _inventory_of(store)
    finally:
        store.close()
    gpu_id = inv.resolver.gpu_any(gpu)
    if gpu_id is None:
        raise InputError(f"{gpu}: no such GPU in the inventory")
    record_override(path, gpu_id, state, reason, who)
    out.print(f"{gpu_id} marked {state} ({reason}); audit log {path}")
    return 0


# -------------------------------------------------------------------------------------- rules

def rules_export_cmd(out: Console, err: Console, fmt: str, rules: Path | None) -> int:
    from suanli.rules import load_rules
    from suanli.rules.export import to_alertmanager, to_prometheus

    ruleset = load_rules(rules)
    if fmt == "prometheus":
        text, skipped = to_prometheus(ruleset)
    elif fmt == "alertmanager":
        text, skipped = to_alertmanager(ruleset)
    else:
        raise InputError(f"--format {fmt}: expected prometheus or alertmanager")
    print(text, end="" if text.endswith("\n") else "\n")
    for line in skipped:
        err.print(f"note: {line}", markup=False, highlight=False)
    return 0


def rules_check_cmd(out: Console, rules: Path | None) -> int:
    from suanli.rules import load_rules

    ruleset = load_rules(rules)
    out.print(f"{len(ruleset.rules)} rules, {len(ruleset.inhibit_rules)} inhibit rules: ok")
    return 0
