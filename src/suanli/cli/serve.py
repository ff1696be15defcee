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
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
import uvicorn
from rich.console import Console

from suanli.cli.base import app, err, out, run_verb
from suanli.errors import InputError

if TYPE_CHECKING:
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
    if cfg.backend.kind != "duckdb":
        raise InputError(f"backend.kind: {cfg.backend.kind}: serve keeps its state in DuckDB for now",
                         file=cfg.source or None)
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
    try:
        svc.scrape_once()
        svc.step()
        docs = [k.json() for k in svc.stepper.incidents()]
    finally:
        svc.close()
    if as_json:
        print(json.dumps({"incidents": docs}, indent=2))
    else:
        open_ = sum(d["state"] == "open" for d in docs)
        console.print(f"{len(docs)} incidents ({open_} open)")
    return 0


class _Server(uvicorn.Server):
    """uvicorn's server, except that a SIGTERM / SIGINT it caught is not raised again when it
    returns: ``serve`` still has its sources, its analysis loop and its store to stop."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        with super().capture_signals():
            yield
            self._captured_signals.clear()


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
    app_ = svc.build_app()
    server = _Server(uvicorn.Config(app_, log_level="warning", lifespan="on", access_log=False))
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
