"""Several rule files as one rule set (serve's ``rules:`` list): rules side by side in file order,
and a clash (a rule name twice, ``actions`` in two files) one error naming both places."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
import yaml

from suanli.errors import InputError
from suanli.rules.merge import load_rule_files
from suanli.web.service import Service
from suanli.web.settings import Backend, ServeConfig
from tests.conftest import shared_path
from tests.web._serve import env

HOT = """\
rules:
  - name: hot
    scope: gpu
    category: gpu_thermal
    conditions: {all: [gpu_temp > 90 for 5m]}
inhibit_rules:
  - name: hot_mutes_idle
    source_matchers: ['alertname="hot"']
    target_matchers: ['alertname="idle"']
    equal: [node]
"""
IDLE = """\
rules:
  - name: idle
    scope: gpu
    conditions: {all: [gpu_util < 5 for 10m]}
actions:
  max_drain_fraction: 0.1
"""


def _write(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.write_text(text)
    return p


def test_rules_and_inhibitions_side_by_side(tmp_path: Path) -> None:
    rs = load_rule_files([_write(tmp_path, "a.yaml", HOT), _write(tmp_path, "b.yaml", IDLE)])
    assert [r.name for r in rs.rules] == ["hot", "idle"]
    assert [r.source for r in rs.rules] == [f"{tmp_path}/a.yaml:2", f"{tmp_path}/b.yaml:2"]
    assert [i.name for i in rs.inhibit_rules] == ["hot_mutes_idle"]
    assert rs.actions.max_drain_fraction == 0.1           # the one file with an actions section
    assert rs.source == f"{tmp_path}/a.yaml, {tmp_path}/b.yaml"


def test_a_rule_name_in_two_files_names_both(tmp_path: Path) -> None:
    a = _write(tmp_path, "a.yaml", HOT)
    b = _write(tmp_path, "b.yaml", "\n\n" + HOT.split("inhibit_rules")[0])     # 'hot' again, at line 4
    with pytest.raises(InputError) as e:
        load_rule_files([a, b])
    assert f"{a}:2" in str(e.value) and f"{b}:4" in str(e.value) and "unique" in str(e.value)


def test_actions_in_two_files_is_an_error(tmp_path: Path) -> None:
    a = _write(tmp_path, "a.yaml", IDLE)
    b = _write(tmp_path, "b.yaml", IDLE.replace("idle", "idle2").replace("0.1", "0.2"))
    with pytest.raises(InputError, match="'actions' is set in both"):
        load_rule_files([a, b])


def test_serve_loads_every_rule_file(tmp_path: Path) -> None:
    shipped = resources.files("suanli.rules").joinpath("default_rules.yaml").read_text()
    n_shipped = len(yaml.safe_load(shipped)["rules"])
    files = (str(_write(tmp_path, "default.yaml", shipped)), str(_write(tmp_path, "extra.yaml", HOT)))
    inv = str(shared_path("scenarios", "healthy", "inventory.yaml"))
    svc = Service(ServeConfig(backend=Backend(path=str(tmp_path / "s.duckdb")), inventory=inv, rules=files), env())
    try:
        assert len(svc.rules.value.rules) == n_shipped + 1
        assert svc.rules.value.rules[-1].name == "hot"
    finally:
        svc.close()
