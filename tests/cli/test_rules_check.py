"""``suanli rules check`` says what the actions would do instead of accepting ``dry_run: false`` in
silence and then forcing a dry run (issue 14)."""

from __future__ import annotations

from pathlib import Path

from tests.cli.helpers import invoke

RULES = """\
rules:
  - name: hot
    scope: gpu
    conditions: {all: [gpu_temp > 90 for 5m]}
    actions: [drain_node, reschedule_job, notify]
actions: {dry_run: false, audit_log: audit.jsonl}
executors:
  drain_node: {kind: slurm}
  notify: {kind: shell, command: [logger, -t, suanli, '{rule}', '{target}']}
"""


def test_a_live_file_names_what_would_run_and_what_would_fail(tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(RULES)
    res = invoke("rules", "check", path)
    assert res.exit_code == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "1 rules, 0 inhibit rules: ok"
    assert lines[1].startswith("actions: mode live")
    assert lines[2] == "  would run under `suanli serve`: drain_node (slurm), notify (shell)"
    assert lines[3] == "  no executor, so a live run would fail them: reschedule_job"
    assert "`suanli diagnose` forces a dry run" in lines[4]


def test_the_shipped_pack_is_a_dry_run() -> None:
    res = invoke("rules", "check")
    assert res.exit_code == 0
    assert "actions: mode dry_run" in res.stdout and "would run" not in res.stdout
