"""``suanli serve``: the live service (docs/serve.md): receivers, scraping, log tails, the analysis
loop, ``/metrics``, the JSON API and the console, in one process until SIGTERM or Ctrl-C.

``--once`` runs one analysis step (after one scrape of every target) and exits: for tests and cron.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from suanli.cli.base import app, err, out, run_verb
from suanli.errors import InputError

if TYPE_CHECKING:
    import uvicorn

    from suanli.sim.live import LiveTwin
    from suanli.web.service import Service
    from suanli.web.settings import ServeConfig

__all__ = ["serve", "serve_cmd"]


@app.command()
def serve(
    db: Annotated[Path | None, typer.Option(help="The DuckDB file (default: the config's, else ./suanli.duckdb).")] = None,
    config: Annotated[Path | None, typer.Option(help="The serve config (YAML, docs/serve.md).")] = None,
    listen: Annotated[str | None, typer.Option(help="HOST:PORT to bind (default 127.0.0.1:9177).")] = None,
    once: Annotated[bool, typer.Option("--once", help="Run one analysis step, print the incidents, exit.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="With --once: print {\"incidents\": [...]}.")] = False,
) -> None:
    """Serve the console, the HTTP API, OTLP/HTTP and /metrics; keep scraping and analysing."""
    run_verb(lambda: serve_cmd(out, db, config, listen, once, as_json))


def _service_config(db: Path | None, config: Path | None, listen: str | None) -> ServeConfig:
    import dataclasses

    from suanli.web import load_serve_config, merge_listen

    cfg = merge_listen(load_serve_config(config), listen)
    if db is not None:
        cfg = dataclasses.replace(cfg, backend=dataclasses.replace(cfg.backend, path=str(db)))
    return cfg


def serve_cmd(console: Console, db: Path | None, config: Path | None, listen: str | None, once: bool,
              as_json: bool) -> int:
    from suanli.web import bind_warning
    from suanli.web.service import Service

    cfg = _service_config(db, config, listen)
    if as_json and not once:
        raise InputError("--json goes with --once")
    lines = err if as_json else console             # --json: stdout holds the JSON alone
    svc = Service(cfg, os.environ, say=lambda line: lines.print(line, markup=False, highlight=False))
    if once:
        return _once(console, svc, as_json)
    warning = bind_warning(cfg.listen)
    if warning is not None:
        err.print(f"warning: {warning}", markup=False, highlight=False)
    try:
        sock = _bind(cfg.listen.host, cfg.listen.port)
    except BaseException:
        svc.close()
        raise
    _run(console, svc, sock)
    return 0


def _once(console: Console, svc: Service, as_json: bool) -> int:
    """One step; exit 1 (as ``diagnose``) when an analysis failed, each failure one stderr line."""
    from suanli.cli.diagnose import ANALYSIS_FAILED

    try:
        svc.scrape_once()
        svc.step()
        docs = [k.json() for k in svc.stepper.incidents()]
        failed = [str(e) for e in svc.stepper.stats.diagnosis.get("analysis_errors") or []]
    finally:
        svc.close()
    if as_json:
        print(json.dumps({"incidents": docs}, indent=2))
    else:
        open_ = sum(d["state"] == "open" for d in docs)
        console.print(f"{len(docs)} incidents ({open_} open)")
    for line in failed:
        err.print(f"analysis error: {line.splitlines()[0] if line else line} (run with --debug for a traceback)",
                  markup=False, highlight=False)
    return ANALYSIS_FAILED if failed else 0


def _server(config: uvicorn.Config) -> uvicorn.Server:
    """uvicorn's server, except that a SIGTERM / SIGINT it caught is not raised again when it
    returns: ``serve`` still has its sources, its analysis loop and its store to stop. (A class
    made here: uvicorn is imported when serving, not by every verb at start-up.)"""
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            with super().capture_signals():
                yield
                self._captured_signals.clear()

    return Server(config)


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise InputError(f"listen: cannot bind {host}:{port}: {exc.strerror or exc}") from None
    return sock


def _run(console: Console, svc: Service, sock: socket.socket) -> None:
    """Serve until SIGTERM / SIGINT (uvicorn's handlers), then stop everything in order."""
    import uvicorn

    app_ = svc.build_app()
    server = _server(uvicorn.Config(app_, log_level="warning", lifespan="on", access_log=False))
    logging.getLogger("suanli").setLevel(logging.INFO)
    started = False
    try:
        svc.start()
        started = True
        port = sock.getsockname()[1]
        console.print(f"suanli serve: console http://{svc.cfg.listen.host}:{port}/console "
                      f"(API /api/v1, OTLP /v1/traces, /metrics)", markup=False, highlight=False)
        server.run(sockets=[sock])          # returns after SIGTERM / SIGINT, queues drained
    finally:
        if started:
            svc.stop()
        else:
            svc.close()
        sock.close()
    console.print("suanli serve: stopped", markup=False, highlight=False)


def demo_live(console: Console, out_dir: Path, seed: int, speed: float) -> int:
    """``suanli demo --live``: the demo cluster played by the live twin into ``serve``, the incidents
    printed as they open, then the truth beside what was found."""
    import secrets
    import threading

    import uvicorn

    from suanli.sim import demo_cluster
    from suanli.sim.live import LiveTwin
    from suanli.web.service import Service

    folder = demo_cluster(out_dir / "scenario", seed=seed)
    db = out_dir / "live.duckdb"
    for old in (db, db.with_suffix(".duckdb.wal")):
        old.unlink(missing_ok=True)
    token = secrets.token_hex(16)
    sock = _bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    twin = LiveTwin(folder, speed, otlp_url=f"http://127.0.0.1:{port}/v1/traces", token=token,
                    logs_dir=out_dir / "logs")
    cfg = _twin_config(out_dir, folder, db, port, twin)
    svc = Service(cfg, {"SUANLI_TOKEN": token}, say=lambda line: console.print(line, markup=False, highlight=False))
    server = uvicorn.Server(uvicorn.Config(svc.build_app(), log_level="warning", lifespan="on", access_log=False))
    web = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="suanli-web", daemon=True)
    try:
        web.start()
        svc.start()
        twin.start()
        console.print(f"live twin of a 16-node cluster at {speed:g}x; console http://127.0.0.1:{port}/console "
                      "(Ctrl-C stops)", markup=False, highlight=False)
        while not twin.done:
            time.sleep(0.5)
        _drained(svc)
        svc.step()                                  # the whole scenario is in: one last step
    finally:
        twin.stop()
        server.should_exit = True
        web.join(60)
        svc.stop()
        sock.close()
    _truth_beside_found(console, twin, svc)
    return 0


def _drained(svc: Service, timeout_s: float = 120.0) -> None:
    """Wait until the receivers have stored every span they accepted."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(q.stats().pending for q in svc.app.state.receivers.all()):
        time.sleep(0.2)


def _twin_config(out_dir: Path, folder: Path, db: Path, port: int, twin: LiveTwin) -> ServeConfig:
    import yaml

    from suanli.web import parse_serve_config

    doc = {"listen": f"127.0.0.1:{port}", "backend": {"path": str(db)}, "inventory": str(folder / "inventory.yaml"),
           "evaluation": {"interval": "5s", "window": "30m", "clock": "data"},
           "auth": {"open_reads": True}, "scrape": twin.scrape_config(twin.serve_endpoints()),
           "logs": twin.logs.log_config() if twin.logs is not None else []}
    path = out_dir / "serve.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return parse_serve_config(path.read_text(), str(path), out_dir)


def _truth_beside_found(console: Console, twin: LiveTwin, svc: Service) -> None:
    """Each injected fault and the incident found at it, with the simulated time it took."""
    from suanli.timefmt import parse_time

    found = {(k.incident.category, k.incident.root_id): k for k in svc.stepper.incidents()}
    for fault in twin.faults():
        key = (fault["category"], fault["root_cause"]["id"])
        k = found.pop(key, None)
        onset = parse_time(fault["start"]) + twin.clock.offset
        if k is None:
            console.print(f"injected {key[0]} at {key[1]}: not found", markup=False, highlight=False)
            continue
        opened = next(t for t, what in k.history if what == "opened")
        console.print(f"injected {key[0]} at {key[1]}: found {k.incident.id}, opened {opened - onset:.0f} s "
                      f"(simulated) after the onset", markup=False, highlight=False)
    for (cat, root), k in found.items():
        console.print(f"also found {k.incident.id} {cat} at {root} (not injected)", markup=False, highlight=False)
