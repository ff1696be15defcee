"""``suanli serve`` put together: the store, the live sources, the receivers and the analysis loop.

:class:`Service` opens the DuckDB store, the inventory (the config's file, re-read when it changes
and kept in the store; else the one the store holds) and the rule file, and builds the app. With
``backend.kind: prometheus`` the metrics are read from the TSDB (a :class:`PromStore` slid to each
step's window, as ``diagnose --prometheus`` reads them) and the DuckDB file keeps the rest: logs
from the tails, received spans and alerts, the incidents, the inventory, the decision history.
``start()`` starts the scrape targets, the log tails, the file watch and the analysis loop (one
:class:`Stepper` step every ``evaluation.interval``); the receivers' queues start and drain with
the app. ``stop()`` stops them in the order that loses nothing and closes the store.

The clock: with scrape targets or log sources the steps run at the wall clock; without them
(a database, and perhaps pushes) at the data's own latest time, so ``suanli serve --db FILE``
shows the data's last window as it was (on a TSDB: its latest sample within
:data:`EXTENT_LOOKBACK_S`).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI

from suanli.analysis.health.overrides import Override, load_overrides, record_override
from suanli.config import Config, LiveConfig
from suanli.errors import InputError
from suanli.ingest.log_config import LogConfig
from suanli.ingest.scrape import Scraper, TargetScraper
from suanli.ingest.tail import LogTail, open_tail
from suanli.inventory import Inventory, load_inventory
from suanli.pipeline import open_db, stored_inventory
from suanli.pipeline.inputs import Inputs
from suanli.pipeline.live import Pipeline
from suanli.pipeline.sources import EDGE_PAD_S, EXTENT_LOOKBACK_S
from suanli.rules import RuleSet
from suanli.rules.actions import MODES
from suanli.rules.audit import default_audit_path
from suanli.rules.merge import load_rule_files
from suanli.store.boot_times import LiveBootTimes
from suanli.store.duck import DuckStore
from suanli.store.promql import PromConfig, PromStore
from suanli.store.promql.secrets import read_basic_auth, read_secret
from suanli.timefmt import to_rfc3339
from suanli.web.am_push import AlertPusher
from suanli.web.app import create_app
from suanli.web.auth import Auth
from suanli.web.incident_log import IncidentLog, KeptIncident
from suanli.web.reload import Reloader
from suanli.web.rw_push import SeriesForwarder
from suanli.web.settings import ServeConfig
from suanli.web.sinks import StoreSinks
from suanli.web.stepper import Stepper

__all__ = ["Service"]

log = logging.getLogger("suanli.serve")
Say = Callable[[str], None]


def _rules(cfg: ServeConfig) -> RuleSet:
    return load_rule_files([Path(p) for p in cfg.rules])


def _tsdb(cfg: ServeConfig) -> PromConfig:
    """The TSDB's connection settings; secrets are read from their files now (an InputError naming
    the key and file), metric maps combined in order (later ones win)."""
    from suanli.store.promql.metric_map import combine, load_metric_map

    b = cfg.backend
    assert b.url is not None                    # the config parser requires it
    token = read_secret(Path(b.token_file), "backend.token_file") if b.token_file is not None else None
    user, password = (read_basic_auth(Path(b.basic_auth_file), "backend.basic_auth_file")
                      if b.basic_auth_file is not None else (None, None))
    names = combine(load_metric_map(m) for m in b.metric_maps)
    return PromConfig(b.url.rstrip("/"), username=user, password=password, bearer_token=token, metric_map=names)


class Service:
    """Everything ``serve`` runs; ``say`` prints the incident lines."""

    def __init__(self, cfg: ServeConfig, environ: Mapping[str, str], *, say: Say = print,
                 config: Config | None = None, clock: Callable[[], float] | None = None) -> None:
        self.cfg, self.say, self.clock = cfg, say, clock
        live = LiveConfig(window_s=cfg.evaluation.window_s)
        self.config = dataclasses.replace(config or Config(), live=live)
        self.auth = Auth.from_settings(cfg.auth, environ)
        self.db = open_db(Path(cfg.backend.path), must_exist=False, config=self.config)
        self.store: DuckStore | PromStore = self.db
        try:
            self._open()
        except BaseException:
            self.store.close()
            raise

    def _open(self) -> None:
        cfg = self.cfg
        self._action_mode: str | None = None
        self.inventory = self._load_inventory()
        if cfg.backend.kind == "prometheus":
            self.store = PromStore(_tsdb(cfg), self.inventory, window=self._window(time.time()), secondary=self.db)
        self.rules = Reloader(list(cfg.rules), lambda: _rules(cfg), lambda _rs: self._rebuild())
        self.watch_inventory = (Reloader([cfg.inventory], self._load_inventory, self._use_inventory)
                                if cfg.inventory else None)
        self.sinks = StoreSinks(self.db)
        self.pusher = AlertPusher(cfg.alertmanager, f"http://{cfg.listen}",
                                  hold_s=max(300.0, 4 * cfg.evaluation.interval_s))
        self.stepper = Stepper(self._pipeline(), IncidentLog(self.db), self._announce)
        self.forwarder = SeriesForwarder(cfg.remote_write)
        resolver = self.inventory.resolver
        self.scraper = Scraper(cfg.scrape, self.sinks.scrape, resolver=resolver) if cfg.scrape else None
        # lines placed as file ingest places them: the inventory's zone, the scraped boot times
        log_cfg = LogConfig(timezone=self.inventory.timezone, boot_times=LiveBootTimes(self.store))
        self.tails: list[LogTail] = [open_tail(s, self.sinks.events, resolver=resolver, config=log_cfg)
                                     for s in cfg.logs]
        clock = cfg.evaluation.clock
        self.live = clock == "wall" or (clock == "auto" and bool(cfg.scrape or cfg.logs))
        self._stop = threading.Event()
        self._loop: threading.Thread | None = None

    # -- inventory and rules --------------------------------------------------------------------
    def _load_inventory(self) -> Inventory:
        if self.cfg.inventory is None:
            return stored_inventory(self.db)
        path = Path(self.cfg.inventory)
        inv = load_inventory(path)
        text = path.read_text(encoding="utf-8")
        if self.db.inventory_text() != text:
            self.db.put_inventory(text, str(path))
        return inv

    def _use_inventory(self, inv: Inventory) -> None:
        self.inventory = inv            # a TSDB store takes it at the next step (on the analysis thread)
        for tail in self.tails:             # from the tail's next parser run on
            tail.config = dataclasses.replace(tail.config, timezone=inv.timezone)
        if self.scraper is not None:
            self.scraper.set_resolver(inv.resolver)
        if hasattr(self, "app"):
            self.app.state.receivers.use_resolver(inv.resolver)
        self._rebuild()

    @property
    def overrides_path(self) -> Path:
        """The operator overrides' audit file beside the database (as ``suanli gpu-override`` writes it)."""
        return Path(self.cfg.backend.path).with_suffix(".overrides.jsonl")

    @property
    def action_mode(self) -> str:
        """How actions are carried out: the mode a person set through the API, else the rule file's
        (``dry_run`` unless it says ``dry_run: false``)."""
        return self._action_mode or self.rules.value.actions.mode

    def _pipeline(self, action_mode: str | None = None) -> Pipeline:
        inputs = Inputs(self.rules.value, self.sinks.alert_payloads())
        health = dataclasses.replace(self.config.health, overrides=tuple(load_overrides(self.overrides_path)))
        audit = default_audit_path(self.rules.value.actions.audit_log, self.cfg.backend.path)
        return Pipeline(self.store, self.inventory, dataclasses.replace(self.config, health=health), inputs,
                        action_mode=action_mode or self.action_mode, audit_path=audit)

    def set_action_mode(self, mode: str, who: str, reason: str) -> dict[str, Any]:
        """Carry out actions as ``mode`` from the next step (``dry_run``, ``shadow``, ``live``); the
        change is a record in the audit log. InputError when that mode cannot run (no audit log
        file to write, an executor that cannot start)."""
        if mode not in MODES:
            raise InputError(f"mode {mode!r}: expected one of {', '.join(MODES)}", key="mode")
        pipe = self._pipeline(mode)
        t = time.time()
        rec = {"event": "mode", "mode": mode, "previous": self.action_mode, "who": who, "reason": reason,
               "ts": t, "time": to_rfc3339(t)}
        if pipe.runner is not None:
            rec = pipe.runner.audit.append(rec)
        self._action_mode = mode
        self.stepper.use(pipe)
        log.warning("actions are now %s (by %s: %s)", mode, who, reason)
        return rec

    def record_override(self, gpu: str, state: str, reason: str, who: str) -> Override:
        """An operator override (audited in the overrides file), in force from the next step."""
        gpu_id = self.inventory.resolver.gpu_any(gpu)
        if gpu_id is None:
            raise InputError(f"{gpu}: no such GPU in the inventory", key="gpu")
        ov = record_override(self.overrides_path, gpu_id, state, reason, who)
        self._rebuild()
        return ov

    def _rebuild(self) -> None:
        self.stepper.use(self._pipeline())

    def reload(self) -> list[str]:
        """Check the inventory and rule files now; which were re-read."""
        done = ["rules"] if self.rules.check() else []
        if self.watch_inventory is not None and self.watch_inventory.check():
            done.append("inventory")
        return done

    # -- the app --------------------------------------------------------------------------------
    def build_app(self, routers: list[Any] | None = None) -> FastAPI:
        from suanli.web.api import api_router
        from suanli.web.api_lists import lists_router
        from suanli.web.console import console_router
        from suanli.web.metrics import metrics_router

        rs = [api_router(self), lists_router(self), metrics_router(self), console_router(self), *(routers or [])]
        self.app = create_app(self.cfg.receivers, self.sinks.consumers(), self.auth,
                              resolver=self.inventory.resolver, status=self.status, routers=rs)
        return self.app

    def status(self) -> dict[str, Any]:
        """The sources' health and the analysis loop's (for ``/api/v1/ingest/status``)."""
        targets = self.scraper.health() if self.scraper is not None else {}
        s = self.stepper.stats
        return {"scrape": {name: dataclasses.asdict(h) for name, h in targets.items()},
                "logs": [dataclasses.asdict(t.health) for t in self.tails],
                "ingested": dict(self.sinks.counts), "ingest_errors": dict(self.sinks.errors),
                "analysis": {"steps": s.steps, "errors": s.errors, "last_error": s.last_error,
                             "last_step_s": s.last_duration_s, "last_now": s.last_now},
                "alertmanager": dataclasses.asdict(self.pusher.stats),
                "remote_write": self.forwarder.status(),
                "reload": {"inventory": self.watch_inventory.last_error if self.watch_inventory else None,
                           "rules": self.rules.last_error}}

    # -- the loop -------------------------------------------------------------------------------
    def now(self) -> float:
        """The time a step analyses up to: ``clock`` when given, else the wall clock or the data's."""
        if self.clock is not None:
            return self.clock()
        if self.live:
            return time.time()
        if isinstance(self.store, PromStore):
            wall = time.time()
            self.store.slide((wall - EXTENT_LOOKBACK_S, wall))
        extent = self.store.time_range()
        return extent[1] if extent is not None else time.time()

    def _window(self, now: float) -> tuple[float, float]:
        """What a TSDB-backed step reads: its window, the reach of the rules before it (a sudden
        increase's baseline hour), and :data:`EDGE_PAD_S` after it."""
        r = self.config.rules
        reach = max(EDGE_PAD_S, r.lookback_s, r.rate_window_long_s, r.sudden_short_s + r.sudden_baseline_s,
                    r.event_window_s)
        return now - self.config.live.window_s - reach, now + EDGE_PAD_S

    def step(self) -> list[tuple[str, KeptIncident]]:
        """One step now (the scrapes and alert payloads received so far included), then the
        Alertmanager push."""
        self.sinks.flush_scrapes()
        pipe = self.stepper.pipeline
        pipe.inputs = dataclasses.replace(pipe.inputs, alert_payloads=self.sinks.alert_payloads())
        if isinstance(self.store, PromStore):
            self.store.use_inventory(self.inventory)
        now = self.now()
        if isinstance(self.store, PromStore):
            self.store.slide(self._window(now))
        changes = self.stepper.step(now)
        resolved = [k for what, k in changes if what == "resolved"]
        self.pusher.push([*self.stepper.incidents("open"), *resolved])
        self.forwarder.push(self.stepper.stats.diagnosis, now, self.inventory)
        return changes

    def _announce(self, what: str, k: KeptIncident) -> None:
        inc, imp = k.incident, k.incident.impact
        cost = f", ${imp.lost_cost:,.2f} lost" if imp.lost_cost is not None else ""
        self.say(f"{what} {inc.id} {inc.category} at {inc.root_id} ({imp.gpus} GPUs{cost})")

    def _run(self) -> None:
        while True:
            try:
                self.step()
            except Exception as exc:
                self.stepper.stats.errors += 1
                self.stepper.stats.last_error = f"{type(exc).__name__}: {exc}"
                log.exception("analysis step failed")
            if self._stop.wait(self.cfg.evaluation.interval_s):
                return

    def scrape_once(self) -> None:
        """Every target scraped once and every log source read to its end, now (``--once``)."""
        with httpx.Client() as client:
            for target in self.cfg.scrape:
                self.sinks.scrape(TargetScraper(target, self.inventory.resolver).scrape(client))
        self.sinks.flush_scrapes()
        for tail in self.tails:         # a tail stopped delivers what its source holds until now
            tail.start()
            tail.stop(timeout_s=120.0)

    def start(self) -> None:
        """The sources, the file watch and the analysis loop (the receivers start with the app)."""
        if self.scraper is not None:
            self.scraper.start()
        for tail in self.tails:
            tail.start()
        self.rules.start(self.cfg.reload_interval_s)
        if self.watch_inventory is not None:
            self.watch_inventory.start(self.cfg.reload_interval_s)
        self._loop = threading.Thread(target=self._run, name="suanli-analysis", daemon=True)
        self._loop.start()

    def stop(self) -> None:
        """Sources first (what they read is delivered), then the loop, then the store."""
        if self.scraper is not None:
            self.scraper.stop()
        self.sinks.flush_scrapes()
        for tail in self.tails:
            tail.stop(timeout_s=120.0)
        self.rules.stop()
        if self.watch_inventory is not None:
            self.watch_inventory.stop()
        self._stop.set()
        if self._loop is not None:
            self._loop.join(120)
        self.close()

    def close(self) -> None:
        try:
            self.sinks.flush_scrapes()  # nothing scraped is left behind (a no-op after stop)
        finally:
            self.forwarder.close()
            self.store.close()      # a PromStore closes its secondary store, the DuckDB file, too
