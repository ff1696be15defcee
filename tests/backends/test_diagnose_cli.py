"""``suanli diagnose --prometheus URL --inventory FILE --logs ... --traces ...`` against a real
Prometheus 2.42 (promtool backfill) and a real VictoriaMetrics 1.79 (import API) holding a public
scenario's metrics.om: the same incidents (category, root cause, start) and costed actions as
``suanli diagnose DIR`` over the files, the ledger within 0.5 point; with and without a window;
bad flags and an unreachable server are one line and exit 2."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.backends.conftest import scenario_path
from tests.backends.servers import Server, free_port
from tests.cli.helpers import assert_one_line_error, run

pytestmark = pytest.mark.slow

SCENARIOS = ("switch_port_errors", "pcie_riser")


@cache
def _files(scenario: str) -> dict[str, Any]:
    proc = run("diagnose", scenario_path(scenario), "--json", timeout_s=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def _flags(scenario: str) -> list[str | Path]:
    folder = scenario_path(scenario)
    return ["--inventory", folder / "inventory.yaml", "--logs", folder / "kernel.log", "--logs", folder / "trainer.log",
            "--traces", folder / "traces.otlp.jsonl"]


def _same(got: dict[str, Any], want: dict[str, Any]) -> None:
    def incidents(doc: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [(i["category"], i["root_cause"]["id"], i["start"], [(a["action"], a["target"]) for a in i["actions"]])
                for i in doc["incidents"]]

    assert incidents(got) == incidents(want) and want["incidents"]
    assert got["window"] == want["window"]
    assert got["missing"] == want["missing"] == []
    for g, w in zip(got["incidents"], want["incidents"], strict=True):
        assert g["decision"]["chosen"] == w["decision"]["chosen"]
        assert abs(g["decision"]["stay_cost"] - w["decision"]["stay_cost"]) <= 0.01 * w["decision"]["stay_cost"] + 0.01
    for gj, wj in zip(got["efficiency"]["jobs"], want["efficiency"]["jobs"], strict=True):
        assert gj["id"] == wj["id"]
        for key in ("mfu", "goodput"):
            assert abs(gj[key] - wj[key]) <= 0.005, (key, gj[key], wj[key])


@pytest.mark.parametrize("kind", ["prometheus", "victoriametrics"])
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_diagnose_from_the_tsdb_equals_the_files(kind: str, scenario: str,
                                                backend_for: Callable[[str, str], Server]) -> None:
    server = backend_for(kind, scenario)
    proc = run("diagnose", "--prometheus", server.url, *_flags(scenario), "--json", timeout_s=600)
    assert proc.returncode == 0, proc.stderr
    _same(json.loads(proc.stdout), _files(scenario))


def test_a_window_and_bearer_auth(backend_for: Callable[[str, str], Server], tmp_path: Path) -> None:
    want = _files("switch_port_errors")
    server = backend_for("prometheus", "switch_port_errors")
    token = tmp_path / "token"
    token.write_text("not-needed-by-prometheus\n")
    proc = run("diagnose", "--prometheus", server.url, *_flags("switch_port_errors"), "--start",
               want["window"]["start"], "--end", want["window"]["end"], "--bearer-token-file", token, "--json",
               timeout_s=600)
    assert proc.returncode == 0, proc.stderr
    _same(json.loads(proc.stdout), want)


def test_the_terminal_report_names_the_choice(backend_for: Callable[[str, str], Server]) -> None:
    server = backend_for("prometheus", "switch_port_errors")
    proc = run("diagnose", "--prometheus", server.url, *_flags("switch_port_errors"), timeout_s=600)
    assert proc.returncode == 0, proc.stderr
    assert "root cause  switch_port leaf-02/p16" in proc.stdout
    assert "chosen: " in proc.stdout and "economics: $" in proc.stdout and " saved over 4 h ($" in proc.stdout


def test_bad_flags_and_an_unreachable_server_are_one_line(tmp_path: Path) -> None:
    inv = scenario_path("healthy") / "inventory.yaml"
    proc = run("diagnose", "--prometheus", "http://127.0.0.1:9")
    assert_one_line_error(proc.returncode, proc.stderr, "--prometheus needs --inventory FILE")
    proc = run("diagnose", scenario_path("healthy"), "--prometheus", "http://127.0.0.1:9", "--inventory", inv)
    assert_one_line_error(proc.returncode, proc.stderr, "one of them")
    proc = run("diagnose", scenario_path("healthy"), "--logs", inv)
    assert_one_line_error(proc.returncode, proc.stderr, "--logs: only with --prometheus URL")
    proc = run("diagnose", "--prometheus", "ftp://x", "--inventory", inv)
    assert_one_line_error(proc.returncode, proc.stderr, "expected an http:// or https:// URL")
    proc = run("diagnose", "--prometheus", "http://127.0.0.1:9090", "--inventory", inv, "--traces",
               tmp_path / "nope.jsonl")
    assert_one_line_error(proc.returncode, proc.stderr, "nope.jsonl: no such file or folder")
    auth = tmp_path / "auth"
    auth.write_text("no-colon\n")
    proc = run("diagnose", "--prometheus", "http://127.0.0.1:9090", "--inventory", inv, "--basic-auth-file", auth)
    assert_one_line_error(proc.returncode, proc.stderr, "expected one line USER:PASSWORD")
    proc = run("diagnose", "--prometheus", f"http://127.0.0.1:{free_port()}", "--inventory", inv)
    assert_one_line_error(proc.returncode, proc.stderr, "127.0.0.1")
