"""The actions and executors sections of a rule file: nothing fails open, every refusal names
the file and line (through ``suanli rules check`` as a user runs it, too)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from suanli.errors import InputError
from suanli.rules import ActionsConfig, parse_rules

HEAD = "rules:\n  - name: r\n    scope: gpu\n    conditions: {all: [gpu_temp > 1]}\n"


def _refused(text: str, match: str, line: int) -> None:
    with pytest.raises(InputError, match=match) as exc:
        parse_rules(HEAD + text, "my_rules.yaml")
    assert str(exc.value).startswith(f"my_rules.yaml:{line}: ")


@pytest.mark.parametrize("value", ["~", "null", "0", "1", "no", "yes", "off", '"false"', "'true'", "[true]",
                                   "!!bool yes", "''"])
def test_dry_run_takes_only_a_real_boolean(value: str) -> None:
    # issue 13: dry_run: ~, null, 0 or no all meant live
    _refused(f"actions:\n  dry_run: {value}\n", "actions.dry_run: expected true or false", 6)
    _refused(f"actions:\n  shadow: {value}\n", "actions.shadow: expected true or false", 6)


@pytest.mark.parametrize(("value", "dry"), [("true", True), ("false", False), ("True", True), ("FALSE", False)])
def test_real_booleans(value: str, dry: bool) -> None:
    assert parse_rules(HEAD + f"actions:\n  dry_run: {value}\n").actions.dry_run is dry


@pytest.mark.parametrize("key", ["max_drain_fraction", "max_job_drain_fraction", "breaker_fleet_fraction"])
@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf", '"0.5"', "1.5", "-0.1", "true", "~", "[0.5]"])
def test_fractions_are_finite_and_within_0_and_1(key: str, value: str) -> None:
    # issue 13: max_drain_fraction: .nan or "0.5" passed rules check
    _refused(f"actions:\n  dry_run: true\n  {key}: {value}\n", f"actions.{key}: expected", 7)


def test_good_fractions_counts_and_durations() -> None:
    a = parse_rules(HEAD + "actions:\n  max_drain_fraction: 0\n  breaker_fleet_fraction: 1\n"
                    "  breaker_window: 2m\n  breaker_max_gpus: 64\n  dedup_window: 90\n").actions
    assert (a.max_drain_fraction, a.breaker_fleet_fraction, a.breaker_window_s, a.breaker_max_gpus,
            a.dedup_window_s) == (0, 1, 120, 64, 90)


@pytest.mark.parametrize(("text", "match"), [
    ("  rate_limit_count: 2.5\n", "whole number"), ("  rate_limit_count: true\n", "whole number"),
    ("  breaker_max_nodes: -1\n", "whole number"), ("  breaker_max_jobs: 1e99\n", "whole number"),
    ("  dedup_window: soon\n", "bad duration"), ("  dedup_window: -5\n", "duration of 0 or more"),
    ("  dedup_window: .nan\n", "finite"), ("  rate_limit_window: ~\n", "expected a number"),
    ("  breaker_window: 99999999999999999999999999999999999999999999999999999999999999999999999999999999"
     "99999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999"
     "99999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999"
     "999999999999999999999999999999999999999999999999999h\n", "finite"),
    ("  audit_log: ''\n", "file path"), ("  audit_log: [a]\n", "file path"), ("  drain: true\n", "unknown key"),
])
def test_other_values_are_checked(text: str, match: str) -> None:
    _refused("actions:\n" + text, match, 6)


def test_python_callers_get_the_same_checks() -> None:
    for kw in ({"dry_run": None}, {"dry_run": 0}, {"max_drain_fraction": float("nan")},
               {"breaker_fleet_fraction": 2.0}, {"rate_limit_count": 1.5}):
        with pytest.raises(ValueError):
            ActionsConfig(**kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("executor", "match"), [
    ("{kind: shell, command: \"logger -t suanli {target}\"}", "argument list"),
    ("{kind: shell, command: [sh, -c, 'logger {target}']}", "starts a shell"),
    ("{kind: shell, command: [/usr/bin/bash, -c, 'logger {target}']}", "starts a shell"),
    ("{kind: shell, command: [env, dash, -c, x]}", "starts a shell"),
    ("{kind: shell, command: [perl, -e, 'system(\"{target}\")']}", "inline code"),
    ("{kind: shell, command: [logger, '{target.__class__}']}", "unknown placeholder"),
    ("{kind: shell, command: [logger, '{target']}", "command argument"),
    ("{kind: shell}", "needs 'command'"),
    ("{kind: slurm, job_ids: {'a b': 1}}", "not an inventory job id"),
    ("{kind: slurm, job_ids: {big: 'x;y'}}", "not a Slurm job id"),
    ("{kind: slurm, job_ids: {big: true}}", "not a Slurm job id"),
    ("{kind: slurm, scontrl: x}", "unknown setting 'scontrl'"),
    ("{kind: kubernetes, api_url: 'https://k:6443/?dryRun=All'}", "without query"),
    ("{kind: kubernetes, api_url: https://k, verify: 0}", "verify"),
    ("{kind: webhook, url: 'https://h', effect: maybe}", "effect"),
    ("{kind: slurm, timeout_s: .inf}", "timeout_s"),
    ("{kind: ssh}", "'kind' must be one of"),
])
def test_executor_settings_are_refused_with_file_and_line(executor: str, match: str) -> None:
    # issue 13: a template such as sh -c '... {target}' was injectable
    _refused(f"executors:\n  notify: {executor}\n", match, 6)


def test_good_executors() -> None:
    rs = parse_rules(HEAD + "executors:\n  notify: {kind: shell, command: [logger, -t, suanli, '{rule}', '{target}']}\n"
                     "  reschedule_job: {kind: slurm, job_ids: {llama-70b: 4242, b: '17_3'}}\n"
                     "  retire_gpu: {kind: webhook, url: 'https://h/x', effect: out_of_service}\n")
    assert rs.executors["notify"].settings == {"command": ["logger", "-t", "suanli", "{rule}", "{target}"]}
    assert rs.executors["reschedule_job"].settings == {"job_ids": {"llama-70b": "4242", "b": "17_3"}}


def test_rules_check_refuses_them(tmp_path: Path) -> None:
    bad = tmp_path / "rules.yaml"
    bad.write_text(HEAD + "actions:\n  dry_run: no\n")
    cli = Path(sys.executable).parent / "suanli"
    done = subprocess.run([str(cli), "rules", "check", str(bad)], capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].endswith(f"{bad}:6: actions.dry_run: expected true or false, "
                                                         "got 'no' (only a real boolean; ~, null, 0, no and "
                                                         "quoted strings are refused)")
    bad.write_text(HEAD + "executors:\n  notify: {kind: shell, command: [sh, -c, 'logger {target}']}\n")
    done = subprocess.run([str(cli), "rules", "check", str(bad)], capture_output=True, text=True, check=False)
    assert done.returncode == 2 and f"{bad}:6: executors.notify: command starts a shell" in done.stderr


def test_the_default_pack_states_the_defaults() -> None:
    from suanli.rules import load_rules

    assert load_rules(None).actions == ActionsConfig()
