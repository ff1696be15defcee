"""The inventory is re-read when its file changes; an invalid new version leaves the old one in force."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from suanli.errors import InputError
from suanli.inventory import Inventory, load_inventory
from suanli.web.reload import Reloader
from tests.conftest import shared_path


def test_inventory_reloaded_on_change_old_kept_when_invalid(tmp_path: Path) -> None:
    path = tmp_path / "inventory.yaml"
    shutil.copy(shared_path("scenarios", "switch_port_errors", "inventory.yaml"), path)
    seen: list[Inventory] = []
    watch = Reloader([path], lambda: load_inventory(path), seen.append)
    first = watch.value
    assert not watch.check()                               # nothing changed
    text = path.read_text()
    assert "node-001" in text
    path.write_text(text.replace("node-001", "node-901"))
    assert watch.check() and seen == [watch.value]
    assert "node-901" in watch.value.nodes and "node-001" not in watch.value.nodes
    path.write_text("racks: [\n")                          # a broken edit
    assert not watch.check()
    assert watch.last_error is not None and watch.last_error.startswith(f"{path}:")
    assert "node-901" in watch.value.nodes and watch.reloads == 1
    assert first is not watch.value


def test_invalid_at_start_is_raised(tmp_path: Path) -> None:
    path = tmp_path / "inventory.yaml"
    path.write_text("racks: [\n")
    with pytest.raises(InputError):
        Reloader([path], lambda: load_inventory(path))
