"""What ``suanli serve`` is configured with (docs/serve.md): plain frozen values, documented defaults.

:mod:`suanli.web.config` reads them from YAML; scrape targets and log sources are the ingest
layer's own types (:class:`~suanli.ingest.scrape.ScrapeTarget`, :class:`~suanli.ingest.tail.LogSource`).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from suanli.ingest.scrape import ScrapeTarget
from suanli.ingest.tail import LogSource

__all__ = ["CLOCKS", "DEFAULT_LISTEN", "AuthSettings", "Backend", "Destination", "Evaluation", "Listen", "ReceiverLimits",
           "ReceiverSettings", "ServeConfig"]


@dataclass(frozen=True)
class Listen:
    """The address the service binds."""

    host: str = "127.0.0.1"
    port: int = 9177

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def loopback(self) -> bool:
        """True for 127.0.0.0/8, ::1 and ``localhost``: reachable from this machine only."""
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False


DEFAULT_LISTEN = Listen()


@dataclass(frozen=True)
class Backend:
    """Where data is kept and read: the embedded DuckDB file, or a Prometheus-compatible TSDB."""

    kind: str = "duckdb"
    path: str = "suanli.duckdb"
    url: str | None = None
    token_file: str | None = None
    """A file holding the bearer token sent to the TSDB (vmauth, an auth proxy); None: none sent."""
    basic_auth_file: str | None = None
    """A file holding ``USER:PASSWORD`` for the TSDB's basic auth (exclusive with ``token_file``)."""
    metric_maps: tuple[str, ...] = ()
    """The TSDB's names for suanli's metrics: presets or map files, later ones winning."""


@dataclass(frozen=True)
class Evaluation:
    """How often the pipeline's incremental step runs, over how long a sliding window."""

    interval_s: float = 30.0
    window_s: float = 3600.0
    clock: str = "auto"
    """``wall``, ``data`` (the latest time in the store: a database, a replay) or ``auto`` (wall
    with scrape targets or log sources, else data)."""


CLOCKS = ("auto", "wall", "data")


@dataclass(frozen=True)
class Destination:
    """An HTTP endpoint suanli sends to (Alertmanager's v2 API, a remote-write receiver)."""

    url: str
    timeout_s: float = 10.0
    token_file: str | None = None
    """A file holding a bearer token sent with each request (None: none sent)."""
    source: str = ""


@dataclass(frozen=True)
class AuthSettings:
    """Where the token comes from; whether reads need it (state changes always do)."""

    token_file: str | None = None
    """A file whose content (whitespace stripped) is the token; it wins over ``token_env``."""
    token_env: str | None = "SUANLI_TOKEN"
    """An environment variable holding the token."""
    open_reads: bool = False
    """True lets GET requests in without a token; only this explicit setting does."""


@dataclass(frozen=True)
class ReceiverLimits:
    """Bounds of one receiver: request size before and after gzip, and its queue."""

    max_body_bytes: int
    max_decompressed_bytes: int
    queue_items: int
    """Records (spans, notifications, uploads) accepted but not yet consumed, at most."""


@dataclass(frozen=True)
class ReceiverSettings:
    """The push receivers: OTLP/HTTP traces, the Alertmanager webhook, Kineto trace uploads."""

    otlp: ReceiverLimits = ReceiverLimits(16 << 20, 64 << 20, 200_000)
    alertmanager: ReceiverLimits = ReceiverLimits(1 << 20, 8 << 20, 1_000)
    kineto: ReceiverLimits = ReceiverLimits(256 << 20, 1 << 30, 16)
    kineto_upload_dir: str | None = None
    """Where uploaded traces are kept (None: a temporary file, removed once read)."""
    retry_after_s: float = 1.0
    """The ``Retry-After`` a full or stopped receiver answers with."""


@dataclass(frozen=True)
class ServeConfig:
    """Everything ``suanli serve`` reads from its config file; every field has a default."""

    listen: Listen = DEFAULT_LISTEN
    backend: Backend = Backend()
    inventory: str | None = None
    reload_interval_s: float = 5.0
    """How often the inventory and rule files are checked for changes."""
    rules: tuple[str, ...] = ()
    evaluation: Evaluation = Evaluation()
    scrape: tuple[ScrapeTarget, ...] = ()
    logs: tuple[LogSource, ...] = ()
    alertmanager: tuple[Destination, ...] = ()
    remote_write: tuple[Destination, ...] = ()
    auth: AuthSettings = AuthSettings()
    receivers: ReceiverSettings = field(default_factory=ReceiverSettings)
    source: str = ""
    """The file it was read from ("" for the defaults)."""
