"""``suanli diagnose`` (every analysis, incidents, predictions, the ledger) and ``suanli rca`` (the
root-cause report of one job), over a scenario folder, a database, or a Prometheus-compatible TSDB
(``--prometheus URL --inventory FILE [--logs PATH...] [--traces PATH...]``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from suanli.cli.base import DEFAULT_DB, app, err, out, progress_bar, run_verb
from suanli.cli.paths import output_format
from suanli.cli.window import flag_time, verb_window
from suanli.errors import InputError
from suanli.inventory import Inventory

if TYPE_CHECKING:       # imported where used: the pipeline and every analysis' settings, not at start-up
    from suanli.config import Config
    from suanli.pipeline import Diagnosis
    from suanli.store.duck import DuckStore
    from suanli.store.promql import PromConfig, PromStore

__all__ = ["ANALYSIS_FAILED", "REPORT_FORMATS", "Backend", "diagnose", "diagnose_cmd", "open_diagnosis", "prom_config",
           "rca", "rca_cmd", "write_back"]

ANALYSIS_FAILED = 1
"""Exit status of ``diagnose`` when an analysis failed: its results are incomplete, never a quiet 0."""
REPORT_FORMATS = {".html": "html", ".htm": "html", ".pdf": "pdf"}


@dataclass(frozen=True)
class Backend:
    """``--prometheus URL`` and what comes with it: the inventory, trace and log files, credentials."""

    url: str | None = None
    inventory: Path | None = None
    logs: tuple[Path, ...] = ()
    traces: tuple[Path, ...] = ()
    bearer_token_file: Path | None = None
    basic_auth_file: Path | None = None
    metric_maps: tuple[str, ...] = ()
    """Presets or map files, later ones winning (``suanli.store.promql.metric_map``)."""

    def given(self) -> list[str]:
        """The backend flags given without ``--prometheus`` (each is an error then)."""
        flags = {"--inventory": self.inventory, "--logs": self.logs, "--traces": self.traces,
                 "--bearer-token-file": self.bearer_token_file, "--basic-auth-file": self.basic_auth_file,
                 "--metric-map": self.metric_maps}
        return [k for k, v in flags.items() if v]


def prom_config(b: Backend) -> PromConfig:
    """The TSDB's connection settings from the flags; secrets are read from files, never argv."""
    from suanli.store.promql import PromConfig
    from suanli.store.promql.metric_map import combine, load_metric_map
    from suanli.store.promql.secrets import read_basic_auth, read_secret

    assert b.url is not None
    if not b.url.startswith(("http://", "https://")):
        raise InputError(f"--prometheus {b.url!r}: expected an http:// or https:// URL")
    if b.bearer_token_file is not None and b.basic_auth_file is not None:
        raise InputError("--bearer-token-file and --basic-auth-file: give one of them")
    token = read_secret(b.bearer_token_file, "--bearer-token-file") if b.bearer_token_file else None
    user, password = read_basic_auth(b.basic_auth_file, "--basic-auth-file") if b.basic_auth_file else (None, None)

    names = combine(load_metric_map(m) for m in b.metric_maps)
    return PromConfig(b.url.rstrip("/"), username=user, password=password, bearer_token=token, metric_map=names)


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
    prometheus: Annotated[str | None, typer.Option(help="Read metrics from this Prometheus-compatible TSDB "
                                                        "(Prometheus, VictoriaMetrics, Mimir, Thanos).")] = None,
    inventory: Annotated[Path | None, typer.Option(help="inventory.yaml (with --prometheus).")] = None,
    logs: Annotated[list[Path] | None, typer.Option(help="Log files or folders (with --prometheus; repeatable).")] = None,
    traces: Annotated[list[Path] | None, typer.Option(help="OTLP trace files or folders (with --prometheus; "
                                                            "repeatable).")] = None,
    bearer_token_file: Annotated[Path | None, typer.Option(help="File holding the TSDB's bearer token.")] = None,
    basic_auth_file: Annotated[Path | None, typer.Option(help="File holding USER:PASSWORD for the TSDB.")] = None,
    metric_map: Annotated[list[str] | None, typer.Option(help="The TSDB's names for suanli's metrics: a preset "
                                                              "(dcgm-exporter, dcgm-exporter-kubernetes, "
                                                              "node-exporter-infiniband, ibdiagnet, snmp-if-mib) or a "
                                                              "map file (repeatable).")] = None,
    remote_write: Annotated[str | None, typer.Option(help="Send the derived and suanli_*_info series to this "
                                                          "remote-write 1.0 receiver (e.g. .../api/v1/write).")] = None,
) -> None:
    """Run every analysis and print incidents, predictions and the efficiency ledger."""
    backend = Backend(prometheus, inventory, tuple(logs or ()), tuple(traces or ()), bearer_token_file, basic_auth_file,
                      tuple(metric_map or ()))
    run_verb(lambda: diagnose_cmd(out, folder, db, as_json, start, end, rules, heatmap, alerts, backend,
                                  remote_write))


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


def _check_sources(folder: Path | None, db: Path | None, backend: Backend) -> None:
    given = [x for x in (folder, db, backend.url) if x is not None]
    if len(given) != 1:
        raise InputError("diagnose needs a scenario folder, --db FILE or --prometheus URL (one of them)")
    if backend.url is None and backend.given():
        raise InputError(f"{', '.join(backend.given())}: only with --prometheus URL")
    if backend.url is not None and backend.inventory is None:
        raise InputError("--prometheus needs --inventory FILE (the TSDB holds no inventory)")


def open_diagnosis(folder: Path | None, db: Path | None, start: str | None, end: str | None,
                   rules: Path | None, alerts: Path | None = None, config: Config | None = None,
                   backend: Backend | None = None) -> tuple[Diagnosis, DuckStore | PromStore, Inventory]:
    """Diagnose a scenario folder, a database or a TSDB over the flags' window; the store stays open
    (the caller closes it). A bad flag or file is exit 2 before any data is read."""
    from suanli.config import Config
    from suanli.ingest.load import skipped_files
    from suanli.pipeline import Files, load_inputs, open_db, open_folder, open_prometheus, stored_inventory
    from suanli.pipeline import diagnose as run_pipeline
    from suanli.store.api import missing_inputs

    backend = backend or Backend()
    _check_sources(folder, db, backend)
    bounds = (flag_time("--start", start), flag_time("--end", end))
    overrides = db.with_suffix(".overrides.jsonl") if db is not None else None
    inputs, cfg = load_inputs(Files(rules=rules, alerts=alerts, overrides=overrides), config or Config())
    store: DuckStore | PromStore
    if folder is not None:
        with progress_bar() as progress:
            store = open_folder(folder, cfg, progress)
        for line in skipped_files(store):
            err.print(f"warning: {line}", markup=False, highlight=False)
    elif db is not None:
        store = open_db(db, must_exist=True, config=cfg)
    else:
        prom = prom_config(backend)
        assert backend.inventory is not None
        with progress_bar() as progress:
            store = open_prometheus(prom, backend.inventory, [*backend.logs, *backend.traces], bounds, cfg, progress)
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


def write_back(url: str, diag: Diagnosis, inventory: Inventory) -> str:
    """Send the diagnosis' derived series and the inventory's info series, stamped at the window's
    end; the summary line (an InputError when the receiver took nothing)."""
    from suanli.report import diagnosis_json
    from suanli.store.remote_write import RemoteWriteConfig, RemoteWriter, diagnosis_series, info_series

    t = diag.window.end
    series = [*diagnosis_series(diagnosis_json(diag), t, inventory), *info_series(inventory, t)]
    writer = RemoteWriter(RemoteWriteConfig(url))
    try:
        stats = writer.write(series)
    finally:
        writer.close()
    if stats.sent == 0 and stats.errors:
        raise InputError(f"--remote-write: nothing written: {stats.errors[-1]}")
    line = f"remote write: {stats.sent} sample(s) of {len(series)} series to {url}"
    if stats.rejected or stats.dropped or writer.pending:
        line += (f"; {stats.rejected} rejected, {stats.dropped + writer.pending} not sent"
                 + (f" ({stats.errors[-1]})" if stats.errors else ""))
    return line


def diagnose_cmd(console: Console, folder: Path | None, db: Path | None, as_json: bool, start: str | None,
                 end: str | None, rules: Path | None, heatmap: Path | None, alerts: Path | None,
                 backend: Backend | None = None, remote_write: str | None = None) -> int:
    from suanli.report import diagnosis_json, print_diagnosis, write_heatmap

    if heatmap is not None:
        output_format("--heatmap", heatmap, {".html": "html", ".htm": "html", ".png": "png"})
    if remote_write is not None and not remote_write.startswith(("http://", "https://")):
        raise InputError(f"--remote-write {remote_write!r}: expected an http:// or https:// URL")
    diag, store, inv = open_diagnosis(folder, db, start, end, rules, alerts, backend=backend)
    store.close()
    if remote_write is not None:
        err.print(write_back(remote_write, diag, inv), markup=False, highlight=False)
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
        return _analysis_status(diag)
    write_rca(out_file, data)
    console.print(f"wrote {out_file}")
    if pdf is not None:
        console.print(f"wrote {html_to_pdf(out_file, pdf)}")
    return _analysis_status(diag)             # the report is written, but incomplete
