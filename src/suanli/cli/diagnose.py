"""``suanli diagnose`` (every analysis, incidents, predictions, the ledger) and ``suanli rca`` (the
root-cause report of one job)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from suanli.cli.base import DEFAULT_DB, app, err, out, progress_bar, run_verb
from suanli.cli.paths import output_format
from suanli.cli.window import flag_time, verb_window
from suanli.config import Config
from suanli.errors import InputError
from suanli.inventory import Inventory
from suanli.pipeline import Diagnosis, Files, load_inputs, open_db, open_folder, stored_inventory
from suanli.pipeline import diagnose as run_pipeline
from suanli.store.duck import DuckStore

__all__ = ["ANALYSIS_FAILED", "REPORT_FORMATS", "diagnose", "diagnose_cmd", "open_diagnosis", "rca", "rca_cmd"]

ANALYSIS_FAILED = 1
"""Exit status of ``diagnose`` when an analysis failed: its results are incomplete, never a quiet 0."""
REPORT_FORMATS = {".html": "html", ".htm": "html", ".pdf": "pdf"}


@app.command()
def diagnose(
    folder: Annotated[Path | None, typer.Argument(help="A scenario folder (else --db).")] = None,
    db: Annotated[Path | None, typer.Option(help="A DuckDB file written by `suanli ingest`.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON of spec/diagnosis.md.")] = False,
    start: Annotated[str | None, typer.Option(help="Window start (RFC 3339).")] = None,
    end: Annotated[str | None, typer.Option(help="Window end (RFC 3339).")] = None,
    rules: Annotated[Path | None, typer.Option(help="Rule file (default: the shipped pack).")] = None,
    heatmap: Annotated[Path | None, typer.Option(help="Also write the latency heatmap (.html or .png).")] = None,
    alerts: Annotated[Path | None, typer.Option(help="Alertmanager webhook payloads (JSON / JSON lines) to correlate.")] = None,
) -> None:
    """Run every analysis and print incidents, predictions and the efficiency ledger."""
    run_verb(lambda: diagnose_cmd(out, folder, db, as_json, start, end, rules, heatmap, alerts))


@app.command()
def rca(
    job: Annotated[str, typer.Option(help="Job id.")],
    start: Annotated[str, typer.Option(help="Window start (RFC 3339).")],
    end: Annotated[str, typer.Option(help="Window end (RFC 3339).")],
    out_file: Annotated[Path, typer.Option("--out", help="Report file to write: .html, or .pdf (needs Chromium).")],
    sla_id: Annotated[str | None, typer.Option("--sla-id", help="SLA id (default: the job's).")] = None,
    db: Annotated[Path, typer.Option(help="DuckDB file.")] = DEFAULT_DB,
    folder: Annotated[Path | None, typer.Option("--dir", help="A scenario folder instead of --db.")] = None,
    pdf: Annotated[Path | None, typer.Option(help="Also print the report to this PDF (needs Chromium).")] = None,
) -> None:
    """Write the root-cause report for one job and window."""
    run_verb(lambda: rca_cmd(out, job, sla_id, start, end, out_file, db, folder, pdf))


def open_diagnosis(folder: Path | None, db: Path | None, start: str | None, end: str | None,
                   rules: Path | None, alerts: Path | None = None,
                   config: Config | None = None) -> tuple[Diagnosis, DuckStore, Inventory]:
    """Diagnose a scenario folder or a database over the flags' window; the store stays open (the
    caller closes it). A bad flag or file is exit 2 before any data is read."""
    from suanli.ingest.load import skipped_files
    from suanli.store.api import missing_inputs

    one_of = InputError("diagnose needs a scenario folder or --db FILE (one of them)")
    if folder is not None and db is not None:
        raise one_of
    bounds = (flag_time("--start", start), flag_time("--end", end))
    overrides = db.with_suffix(".overrides.jsonl") if db is not None else None
    inputs, cfg = load_inputs(Files(rules=rules, alerts=alerts, overrides=overrides), config or Config())
    if folder is not None:
        with progress_bar() as progress:
            store = open_folder(folder, cfg, progress)
        for line in skipped_files(store):
            err.print(f"warning: {line}", markup=False, highlight=False)
    elif db is not None:
        store = open_db(db, must_exist=True, config=cfg)
    else:
        raise one_of
    try:
        inventory = stored_inventory(store)
        window = verb_window(store.time_range(), bounds, cfg.commands)
        diag = run_pipeline(store, inventory, window, cfg, inputs, missing_inputs(store))
    except BaseException:
        store.close()
        raise
    return diag, store, inventory


def _analysis_status(diag: Diagnosis) -> int:
    """One stderr line per failed analysis; ANALYSIS_FAILED when there is one, else 0."""
    for line in diag.analysis_errors:
        err.print(f"analysis error: {line.splitlines()[0] if line else line} (run with --debug for a "
                  "traceback)", markup=False, highlight=False)
    return ANALYSIS_FAILED if diag.analysis_errors else 0


def diagnose_cmd(console: Console, folder: Path | None, db: Path | None, as_json: bool, start: str | None,
                 end: str | None, rules: Path | None, heatmap: Path | None, alerts: Path | None) -> int:
    from suanli.report import diagnosis_json, print_diagnosis, write_heatmap

    if heatmap is not None:
        output_format("--heatmap", heatmap, {".html": "html", ".htm": "html", ".png": "png"})
    diag, store, _inv = open_diagnosis(folder, db, start, end, rules, alerts)
    store.close()
    if heatmap is not None:
        fabric = diag.results.fabric
        if fabric is None:
            raise InputError("no latency probes (suanli_link_latency_seconds) to draw a heatmap from")
        write_heatmap(fabric.heatmap, heatmap)
    if as_json:
        print(json.dumps(diagnosis_json(diag), indent=2))
    else:
        print_diagnosis(console, diag)
    return _analysis_status(diag)             # the others' results are above; a failed one fails the run


def rca_cmd(console: Console, job: str, sla_id: str | None, start: str, end: str, out_file: Path,
            db: Path, folder: Path | None, pdf: Path | None = None) -> int:
    from suanli.pipeline.rca import rca_data
    from suanli.report.rca import html_to_pdf, write_rca

    fmt = output_format("--out", out_file, REPORT_FORMATS)
    if pdf is not None:
        output_format("--pdf", pdf, {".pdf": "pdf"})
    diag, store, inv = open_diagnosis(folder, None if folder else db, start, end, None)
    try:
        if job not in inv.jobs:
            raise InputError(f"--job {job}: unknown job (known: {', '.join(sorted(inv.jobs))})")
        data = rca_data(diag, store, inv, job, sla_id)
    finally:
        store.close()
    if fmt == "pdf":
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            html = write_rca(Path(tmp) / "report.html", data)
            console.print(f"wrote {html_to_pdf(html, out_file)}")
        return 0
    write_rca(out_file, data)
    console.print(f"wrote {out_file}")
    if pdf is not None:
        console.print(f"wrote {html_to_pdf(out_file, pdf)}")
    return _analysis_status(diag)             # the report is written, but incomplete
