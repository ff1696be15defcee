"""Fixtures: real Prometheus 2.42 backfilled by promtool and real VictoriaMetrics loaded through its
import API, one of each per public scenario (started on first use, stopped at the end), and the
scenario loaded into DuckDB by suanli's own loader for comparison."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from suanli.ingest.load import load_paths
from suanli.inventory import Inventory, load_inventory
from suanli.store.duck import DuckStore
from tests.backends.servers import (
    Server,
    backfill_prometheus,
    start_prometheus,
    start_victoria_metrics,
    vm_import,
)
from tests.conftest import shared_path

ServerFor = Callable[[str], Server]


@pytest.fixture(scope="session")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Server]]:
    running: dict[str, Server] = {}
    yield running
    for server in running.values():
        server.stop()


@pytest.fixture(scope="session")
def prometheus_for(servers: dict[str, Server], tmp_path_factory: pytest.TempPathFactory) -> ServerFor:
    """A Prometheus holding one scenario's metrics.om, backfilled with promtool."""

    def get(scenario: str) -> Server:
        name = f"prometheus/{scenario}"
        if name not in servers:
            work = tmp_path_factory.mktemp(f"prom-{scenario}")
            backfill_prometheus(shared_path("scenarios", scenario, "metrics.om"), work / "data")
            servers[name] = start_prometheus(work, work / "data")
        return servers[name]

    return get


@pytest.fixture(scope="session")
def vm_for(servers: dict[str, Server], tmp_path_factory: pytest.TempPathFactory) -> ServerFor:
    """A VictoriaMetrics holding one scenario's metrics.om, loaded through /api/v1/import/prometheus."""

    def get(scenario: str) -> Server:
        name = f"vm/{scenario}"
        if name not in servers:
            servers[name] = start_victoria_metrics(tmp_path_factory.mktemp(f"vm-{scenario}"))
            vm_import(servers[name], shared_path("scenarios", scenario, "metrics.om"))
        return servers[name]

    return get


@pytest.fixture(scope="session")
def backend_for(prometheus_for: ServerFor, vm_for: ServerFor) -> Callable[[str, str], Server]:
    def get(kind: str, scenario: str) -> Server:
        return prometheus_for(scenario) if kind == "prometheus" else vm_for(scenario)

    return get


@pytest.fixture(scope="session")
def empty_prometheus(servers: dict[str, Server], tmp_path_factory: pytest.TempPathFactory) -> Server:
    if "prometheus/empty" not in servers:
        work = tmp_path_factory.mktemp("prom-empty")
        servers["prometheus/empty"] = start_prometheus(work, work / "data")
    return servers["prometheus/empty"]


@pytest.fixture(scope="session")
def empty_vm(servers: dict[str, Server], tmp_path_factory: pytest.TempPathFactory) -> Server:
    if "vm/empty" not in servers:
        servers["vm/empty"] = start_victoria_metrics(tmp_path_factory.mktemp("vm-empty"))
    return servers["vm/empty"]


_DUCK: dict[str, DuckStore] = {}


@pytest.fixture(scope="session")
def duck_for() -> Iterator[Callable[[str], tuple[DuckStore, Inventory]]]:
    """The whole scenario folder in an in-memory DuckStore (suanli's loader), and its inventory."""

    def get(scenario: str) -> tuple[DuckStore, Inventory]:
        folder = shared_path("scenarios", scenario)
        if scenario not in _DUCK:
            store = DuckStore(None)
            load_paths([folder], store)
            _DUCK[scenario] = store
        return _DUCK[scenario], load_inventory(folder / "inventory.yaml")

    yield get
    for store in _DUCK.values():
        store.close()
    _DUCK.clear()


def secondary_for(scenario: str) -> DuckStore:
    """What the TSDB does not hold (traces, logs, the inventory) in an in-memory DuckStore."""
    folder = shared_path("scenarios", scenario)
    store = DuckStore(None)
    paths = [folder / n for n in ("inventory.yaml", "traces.otlp.jsonl", "kernel.log", "trainer.log")]
    load_paths([p for p in paths if p.exists()], store)
    return store


def scenario_path(scenario: str) -> Path:
    return shared_path("scenarios", scenario)
