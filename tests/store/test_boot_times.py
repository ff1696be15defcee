"""Boot times as a store holds them (node-exporter's node_boot_time_seconds), and the live view
serve's tailer uses: a host scraped after the tail started is found at the next read."""

from __future__ import annotations

from pathlib import Path

from suanli.ingest.load import load_paths
from suanli.store.boot_times import LiveBootTimes, boot_times
from suanli.store.duck import DuckStore
from tests.conftest import shared_path


def _scrape(store: DuckStore, tmp_path: Path, text: str) -> None:
    prom = tmp_path / "scrape.prom"
    prom.write_text(text)
    load_paths([prom, shared_path("scenarios", "switch_port_errors", "inventory.yaml")], store)
    store.flush()


def test_boot_times_per_node_distinct_and_sorted(tmp_path: Path) -> None:
    store = DuckStore(None)
    # node-001 rebooted between two scrapes; node-002 twice the same value; a host the inventory lacks
    _scrape(store, tmp_path, 'node_boot_time_seconds{instance="node-001:9100"} 1000 1772582400000\n'
                             'node_boot_time_seconds{instance="node-001:9100"} 5000 1772582415000\n'
                             'node_boot_time_seconds{instance="node-002:9100"} 700 1772582400000\n'
                             'node_boot_time_seconds{instance="node-002:9100"} 700 1772582415000\n')
    got = boot_times(store)
    assert got["node-001"] == (1000.0, 5000.0) and got["node-002"] == (700.0,)


def test_live_view_learns_a_host_at_its_next_read(tmp_path: Path) -> None:
    store = DuckStore(None)
    now = [0.0]
    live = LiveBootTimes(store, refresh_s=5.0, clock=lambda: now[0])
    assert live.get("node-001") is None                       # nothing scraped yet
    _scrape(store, tmp_path, 'node_boot_time_seconds{instance="node-001:9100"} 1234 1772582400000\n')
    now[0] = 4.9
    assert live.get("node-001") is None                       # read less than refresh_s ago
    now[0] = 5.0
    assert live.get("node-001") == (1234.0,) and list(live) == ["node-001"]
