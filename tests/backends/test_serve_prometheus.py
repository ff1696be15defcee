"""``suanli serve`` with ``backend: {kind: prometheus, url: ...}``: its analysis reads the metrics
from a real Prometheus 2.42 that promtool backfilled with a public scenario (and from a real
VictoriaMetrics behind vmauth, with ``backend.token_file``; the DuckDB file holds no sample), the kernel and trainer logs through its log tails, the spans from the DuckDB file, and
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
from tests.backends.servers import Server, start_vmauth
from tests.cli.helpers import assert_one_line_error, run

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCENARIO = "switch_port_errors"


def _config(tmp_path: Path, url: str, logs: bool = True, token_file: Path | None = None) -> Path:
    folder = scenario_path(SCENARIO)
    db = tmp_path / "serve.duckdb"
    store = DuckStore(db)                          # what no TSDB holds: the spans (serve receives them)
    try:
        load_paths([folder / "traces.otlp.jsonl"], store)
    finally:
        store.close()
    token = f", token_file: '{token_file}'" if token_file is not None else ""
    lines = [f"backend: {{kind: prometheus, url: '{url}', path: '{db}'{token}}}",
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


def _diagnosed(url: str) -> dict[str, Any]:
    folder = scenario_path(SCENARIO)
    proc = run("diagnose", "--prometheus", url, "--inventory", folder / "inventory.yaml", "--logs",
               folder / "kernel.log", "--logs", folder / "trainer.log", "--traces", folder / "traces.otlp.jsonl",
               "--json", timeout_s=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def test_serve_on_prometheus_opens_what_diagnose_finds(prometheus_for: Callable[[str], Server],
                                                       tmp_path: Path) -> None:
    server = prometheus_for(SCENARIO)
    folder = scenario_path(SCENARIO)
    cfg = _config(tmp_path, server.url)
    served = run("serve", "--config", cfg, "--once", "--json", timeout_s=600)
    assert served.returncode == 0, served.stderr
    got = json.loads(served.stdout)
    want = _diagnosed(server.url)
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



@pytest.mark.integration
def test_serve_on_victoria_metrics_behind_a_token(vm_for: Callable[[str], Server], tmp_path: Path) -> None:
    """VictoriaMetrics behind vmauth: with ``backend.token_file`` serve opens what diagnose finds
    on the VictoriaMetrics itself; without the token it is one line, exit 2."""
    vm = vm_for(SCENARIO)
    proxy = start_vmauth(tmp_path / "vmauth", "t0ken", vm.url)
    try:
        token = tmp_path / "token"
        token.write_text("t0ken\n")
        served = run("serve", "--config", _config(tmp_path, proxy.url, token_file=token), "--once", "--json",
                     timeout_s=600)
        assert served.returncode == 0, served.stderr
        assert _incidents(json.loads(served.stdout)) == _incidents(_diagnosed(vm.url))
        (tmp_path / "serve.duckdb").unlink()
        refused = run("serve", "--config", _config(tmp_path, proxy.url), "--once", timeout_s=600)
        assert_one_line_error(refused.returncode, refused.stderr, proxy.url, "401")
    finally:
        proxy.stop()
