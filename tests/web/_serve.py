"""``suanli serve`` as a real process on a loopback port, real Alertmanager beside it, and a
scenario database to serve."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from suanli.ingest.load import load_paths
from suanli.store.duck import DuckStore
from tests.backends.servers import Server, _spawn, _wait_ready, free_port, need
from tests.conftest import shared_path
from tests.web._server import AUTH, TOKEN

SUANLI = [sys.executable, "-c", "from suanli.cli import main; main()"]


def scenario_db(path: Path, scenario: str = "pcie_riser") -> Path:
    """A DuckDB file holding one public scenario, ingested through the real loaders."""
    store = DuckStore(path)
    try:
        load_paths([shared_path("scenarios", scenario)], store)
    finally:
        store.close()
    return path


def truth(scenario: str = "pcie_riser") -> dict[str, Any]:
    return dict(json.loads((shared_path("scenarios", scenario) / "truth.json").read_text()))


def env() -> dict[str, str]:
    return {**os.environ, "SUANLI_TOKEN": TOKEN}


def suanli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SUANLI, *args], capture_output=True, text=True, timeout=timeout, env=env())


@dataclass
class Serve:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path

    def get(self, path: str, **kw: Any) -> httpx.Response:
        return httpx.get(self.url + path, headers=AUTH, timeout=30, **kw)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(120)


def start_serve(workdir: Path, db: Path, config: Path | None = None, timeout_s: float = 180.0) -> Serve:
    """``suanli serve --db DB`` on a free port; returns once its first step is done."""
    port = free_port()
    argv = [*SUANLI, "serve", "--db", str(db), "--listen", f"127.0.0.1:{port}"]
    if config is not None:
        argv += ["--config", str(config)]
    log = workdir / f"serve-{port}.log"
    with log.open("wb") as fh:
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env())
    srv = Serve(f"http://127.0.0.1:{port}", proc, log)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"serve exited {proc.returncode}: {log.read_text()[-3000:]}")
        try:
            if srv.get("/api/v1/service").json()["analysis"]["steps"] >= 1:
                return srv
        except (httpx.TransportError, ValueError, KeyError):
            pass
        time.sleep(0.3)
    srv.stop(signal.SIGKILL)
    raise RuntimeError(f"serve did not finish a step: {log.read_text()[-3000:]}")


BLACKHOLE = "route:\n  receiver: blackhole\n  group_wait: 1s\nreceivers:\n  - name: blackhole\n"


def start_alertmanager(workdir: Path, config_text: str = BLACKHOLE) -> Server:
    """Debian's prometheus-alertmanager on a free loopback port, clustering off, with
    ``config_text`` as its configuration (default: one receiver that notifies nobody)."""
    binary = need("prometheus-alertmanager")
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "alertmanager.yml"
    config.write_text(config_text)
    port = free_port()
    argv = [binary, f"--config.file={config}", f"--storage.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address=", "--log.level=warn"]
    log = workdir / "alertmanager.log"
    server = Server("alertmanager", f"http://127.0.0.1:{port}", _spawn("alertmanager", argv, log), log)
    _wait_ready(server, "/-/ready")
    return server
