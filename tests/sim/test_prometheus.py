"""One scenario backfilled into a real Prometheus and read back through its HTTP API."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from suanli.sim import simulate
from tests.conftest import need_tool

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pick_sample(metrics: Path) -> tuple[str, str, float, float]:
    """A GPU temperature sample from the middle of the file: (node, gpu, value, timestamp)."""
    lines = [ln for ln in metrics.read_text().splitlines()
             if ln.startswith('DCGM_FI_DEV_GPU_TEMP{gpu="3"') and 'Hostname="node-002"' in ln]
    line = lines[len(lines) // 2]
    _labels, value, ts = line.rsplit(" ", 2)
    return "node-002", "3", float(value), float(ts)


@pytest.mark.slow
def test_backfill_and_query(tmp_path: Path) -> None:
    promtool, prometheus = need_tool("promtool"), need_tool("prometheus")
    d = simulate("healthy", tmp_path / "s", seed=7, nodes=2, minutes=5)
    db = tmp_path / "db"
    done = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(d / "metrics.om"), str(db)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    node, gpu, value, ts = _pick_sample(d / "metrics.om")
    cfg = tmp_path / "prometheus.yml"
    cfg.write_text("global:\n  scrape_interval: 15s\n")
    port = _free_port()
    proc = subprocess.Popen([prometheus, f"--storage.tsdb.path={db}", f"--web.listen-address=127.0.0.1:{port}",
                             f"--config.file={cfg}", "--storage.tsdb.retention.time=100y"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                if httpx.get(f"{url}/-/ready", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        q = f'DCGM_FI_DEV_GPU_TEMP{{Hostname="{node}",gpu="{gpu}"}}'
        r = httpx.get(f"{url}/api/v1/query", params={"query": q, "time": ts}, timeout=10.0).json()
        assert r["status"] == "success"
        got = [float(x["value"][1]) for x in r["data"]["result"]]
        assert got == [value]     # the sample at exactly that timestamp is the one in the file
    finally:
        proc.terminate()
        proc.wait(timeout=20)
