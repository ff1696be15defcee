"""``suanli serve`` with ``backend: {kind: prometheus, url: ...}``: its analysis reads the metrics
from a real Prometheus 2.42 that promtool backfilled with a public scenario (the DuckDB file holds
no sample), the kernel and trainer logs through its log tails, the spans from the DuckDB file, and
``serve --once --json`` opens the incidents ``diagnose --prometheus`` finds on the same data, field
for field (and the scenario's truth.json names)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

from suanli.ingest.load import load_paths
from suanli.store.duck import DuckStore
from tests.backends.conftest import scenario_path
from tests.backends.servers import Server
from tests.cli.helpers import run

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCENARIO = "switch_port_errors"


def _config(tmp_path: Path, url: str, logs: bool = True) -> Path:
    folder = scenario_path(SCENARIO)
    db = tmp_path / "serve.duckdb"
    store = DuckStore(db)                          # what no TSDB holds: the spans (serve receives them)
    try:
        load_paths([folder / "traces.otlp.jsonl"], store)
    finally:
        store.close()
    lines = [f"backend: {{kind: prometheus, url: '{url}', path: '{db}'}}",
             f"inventory: '{folder / 'inventory.yaml'}'", "evaluation: {clock: data}"]
    if logs:
        lines += ["logs:", f"  - {{path: '{folder / 'kernel.log'}', from_start: true}}",
                  f"  - {{path: '{folder / 'trainer.log'}', from_start: true}}"]
    cfg = tmp_path / "serve.yaml"
    cfg.write_text("\n".join(lines) + "\n")
    return cfg


SERVE_ONLY = ("history", "state")
"""What only serve's tracker says of an incident (its changes, open or resolved)."""


def _incidents(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Each incident as diagnose writes it (spec/diagnosis.md): id, root cause, start, end, impact,
    evidence, alerts, decision, actions ..."""
    return [{k: v for k, v in i.items() if k not in SERVE_ONLY} for i in doc["incidents"]]


def test_serve_on_prometheus_opens_what_diagnose_finds(prometheus_for: Callable[[str], Server],
                                                       tmp_path: Path) -> None:
    server = prometheus_for(SCENARIO)
    folder = scenario_path(SCENARIO)
    cfg = _config(tmp_path, server.url)
    served = run("serve", "--config", cfg, "--once", "--json", timeout_s=600)
    assert served.returncode == 0, served.stderr
    got = json.loads(served.stdout)
    diagnosed = run("diagnose", "--prometheus", server.url, "--inventory", folder / "inventory.yaml",
                    "--logs", folder / "kernel.log", "--logs", folder / "trainer.log",
                    "--traces", folder / "traces.otlp.jsonl", "--json", timeout_s=600)
    assert diagnosed.returncode == 0, diagnosed.stderr
    want = json.loads(diagnosed.stdout)
    assert _incidents(got) == _incidents(want)
    assert [i["state"] for i in got["incidents"]] == ["open"]       # truth.json: the fault has no end
    truth = json.loads((folder / "truth.json").read_text())
    assert [(i["category"], i["root_cause"]["id"]) for i in got["incidents"]] == \
        [(f["category"], f["root_cause"]["id"]) for f in truth["faults"]]
    con = duckdb.connect(str(tmp_path / "serve.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM samples").fetchall() == [(0,)]   # every metric came from Prometheus
        assert con.execute("SELECT count(*) FROM events").fetchall()[0][0] > 0    # the tails' log events
    finally:
        con.close()

