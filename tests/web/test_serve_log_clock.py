"""``serve``'s log tailer places lines the way file ingest does: a ``dmesg -T`` stamp (local wall
clock, no zone) in the inventory's ``timezone``, a raw ``dmesg`` ``[seconds since boot]`` stamp by
the host's ``node_boot_time_seconds`` that the store holds (scraped; here loaded) — the Service as
``suanli serve`` builds it, its tail on a real file, the events read back from its store."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from suanli.ingest.load import load_paths
from suanli.web import load_serve_config
from suanli.web.service import Service
from tests.conftest import shared_path
from tests.web._serve import env

BOOT_S = datetime(2026, 3, 4, 0, 0, tzinfo=UTC).timestamp()      # node-001 booted at midnight UTC
LOCAL_T = "[Wed Mar  4 10:00:00 2026] "                            # 10:00 in Shanghai (UTC+8, no DST)
XID = "NVRM: Xid (PCI:0000:{bus}:00): 79, pid=1234, name=python, GPU has fallen off the bus."


def _service(tmp_path: Path) -> Service:
    inv = tmp_path / "inventory.yaml"
    inv.write_text("timezone: Asia/Shanghai\n" +
                   shared_path("scenarios", "switch_port_errors", "inventory.yaml").read_text())
    log = tmp_path / "kern.log"
    log.write_text(LOCAL_T + XID.format(bus="18") + "\n" + "[12345.678000] " + XID.format(bus="2a") + "\n")
    cfg = tmp_path / "serve.yaml"
    cfg.write_text(f"backend: {{path: {tmp_path / 'live.duckdb'}}}\ninventory: {inv}\n"
                   f"logs:\n  - path: {log}\n    host: node-001\n    from_start: true\n")
    return Service(load_serve_config(cfg), env(), say=lambda _: None)


def test_tailer_places_local_and_since_boot_stamps_like_file_ingest(tmp_path: Path) -> None:
    svc = _service(tmp_path)
    try:
        boot = tmp_path / "node.prom"           # what scraping node-001's node-exporter stores
        boot.write_text(f'node_boot_time_seconds{{instance="node-001:9100",job="node"}} {BOOT_S} '
                        f"{int((BOOT_S + 20000) * 1000)}\n")
        load_paths([boot], svc.store)
        svc.store.flush()
        (tail,) = svc.tails
        tail.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and tail.health.events < 2:
            time.sleep(0.2)
        tail.stop()
        got = {e.entity_id: e.ts for e in svc.store.events(kinds=["xid"])}
    finally:
        svc.close()
    assert got == {
        "node-001/gpu0": datetime(2026, 3, 4, 2, 0, tzinfo=UTC).timestamp(),   # 10:00 +08:00 = 02:00Z
        "node-001/gpu1": BOOT_S + 12345.678,                                   # boot + seconds since boot
    }
