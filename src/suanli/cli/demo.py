"""``suanli demo``: a 16-node cluster with two jobs and two faults, played live into ``serve`` (the\nconsole), or with ``--once`` simulated, ingested, checked and diagnosed in one batch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from suanli.cli.base import app, out, run_verb
from suanli.cli.diagnose import open_diagnosis
from suanli.cli.ingest import check_cmd, ingest_cmd

__all__ = ["demo", "demo_cmd"]


@app.command()
def demo(
    out_dir: Annotated[Path, typer.Option("--out", help="Where the demo writes its data.")] = Path("demo-out"),
    seed: Annotated[int, typer.Option(help="Random seed.")] = 7,
    once: Annotated[bool, typer.Option("--once", help="No console: simulate, ingest, check and diagnose the "
                                                      "folder once, then exit (for CI).")] = False,
    live: Annotated[bool, typer.Option("--live", hidden=True, help="The default (kept for old scripts).")] = False,
    speed: Annotated[float, typer.Option(help="Simulated seconds per second of the live demo (a scrape every "
                                              "second must see each 15 s sample).", min=1.0, max=12.0)] = 5.0,
) -> None:
    """Simulate a 16-node cluster with two jobs and two faults and play it live into `suanli serve`:
    the console's address, each incident as it opens, then the truth beside what was found (Ctrl-C
    stops). --once: the batch run instead (ingest, check, diagnose, root-cause report)."""
    if once and live:
        raise typer.BadParameter("--once and --live exclude each other")
    if not once:
        from suanli.cli.serve import demo_live

        run_verb(lambda: demo_live(out, out_dir, seed, speed))
        return
    run_verb(lambda: demo_cmd(out, out_dir, seed))


def demo_cmd(console: Console, out_dir: Path, seed: int) -> int:
    from suanli.pipeline.rca import rca_data
    from suanli.report import diagnosis_json, print_diagnosis, write_rca
    from suanli.sim import demo_cluster

    console.rule("suanli demo")
    folder = demo_cluster(out_dir / "scenario", seed=seed)
    console.print(f"simulated a 16-node cluster with two jobs and two faults into {folder}")
    db = out_dir / "demo.duckdb"
    if db.exists():
        db.unlink()
    ingest_cmd(console, [folder], db)
    check_cmd(console, db, None)
    diag, store, inv = open_diagnosis(None, db, None, None, None)
    try:
        print_diagnosis(console, diag)
        truth = folder / "truth.json"
        if truth.exists():
            faults = json.loads(truth.read_text()).get("faults", [])
            console.print("injected (truth.json): " + "; ".join(
                f"{f['category']} at {f['root_cause']['id']}" for f in faults))
        for inc in diag.incidents[:1]:
            jobs = inc.impact.jobs or tuple(sorted(inv.jobs))
            report = out_dir / "rca.html"
            write_rca(report, rca_data(diag, store, inv, str(jobs[0]), None))
            console.print(f"root-cause report: {report}")
    finally:
        store.close()
    (out_dir / "diagnosis.json").write_text(json.dumps(diagnosis_json(diag), indent=2))
    console.print(f"diagnosis JSON: {out_dir / 'diagnosis.json'}")
    return 0
