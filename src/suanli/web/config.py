"""The ``suanli serve`` config file (docs/serve.md): YAML read with ``yaml.compose`` so that every
error names the file and line, as rule files do (``serve.yaml:12: scrape[0].timeout: ...``).

``SCHEMA`` lists every key of every section; the parser accepts those and no others, and a test
checks that each is documented. Relative paths are taken from the config file's folder.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from suanli.errors import InputError
from suanli.ingest.scrape import ScrapeTarget
from suanli.ingest.tail import JOURNAL_COMMAND, LogSource
from suanli.rules.conditions import parse_duration
from suanli.web.settings import (
    CLOCKS,
    AuthSettings,
    Backend,
    Destination,
    Evaluation,
    Listen,
    ReceiverLimits,
    ReceiverSettings,
    ServeConfig,
)
from suanli.yaml_nodes import NodeReader, compose

__all__ = ["SCHEMA", "bind_warning", "documented_keys", "load_serve_config", "merge_listen", "parse_listen",
           "parse_serve_config", "parse_size"]

_LIMIT_KEYS = ("max_body", "max_decompressed", "queue")
SCHEMA: dict[str, tuple[str, ...]] = {
    "": ("listen", "backend", "inventory", "reload_interval", "rules", "evaluation", "scrape", "logs",
         "alertmanager", "remote_write", "auth", "receivers"),
    "backend": ("kind", "path", "url", "token_file", "basic_auth_file", "metric_map"),
    "evaluation": ("interval", "window", "clock"),
    "scrape[]": ("job", "targets", "scheme", "path", "interval", "timeout", "labels", "max_body"),
    "logs[]": ("path", "journal", "host", "from_start"),
    "alertmanager[]": ("url", "timeout", "token_file"),
    "remote_write[]": ("url", "timeout", "token_file"),
    "auth": ("token_file", "token_env", "open_reads"),
    "receivers": ("retry_after", "otlp", "alertmanager", "kineto"),
    "receivers.otlp": _LIMIT_KEYS,
    "receivers.alertmanager": _LIMIT_KEYS,
    "receivers.kineto": (*_LIMIT_KEYS, "upload_dir"),
}
BACKENDS = ("duckdb", "prometheus")

_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
_HOSTPORT = re.compile(r"(?:\[(?P<v6>[0-9a-fA-F:.]+)\]|(?P<host>[A-Za-z0-9_.-]+)):(?P<port>\d{1,5})\Z")
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|KiB|MiB|GiB)?\Z")
_SIZE_UNITS = {None: 1, "B": 1, "KB": 1000, "MB": 1000**2, "GB": 1000**3, "KiB": 1 << 10, "MiB": 1 << 20,
               "GiB": 1 << 30}


def documented_keys() -> list[str]:
    """Every key as docs/serve.md names it: ``listen``, ``scrape[].interval``, ``receivers.otlp.queue``."""
    return [f"{section}.{key}" if section else key for section, keys in SCHEMA.items() for key in keys]


def parse_size(text: str) -> int:
    """``16MiB``, ``500KB``, ``1048576`` to bytes; ValueError if bad."""
    m = _SIZE.match(str(text).strip())
    if m is None:
        raise ValueError(f"bad size {text!r} (expected like 512KiB, 16MiB, 1GiB or a byte count)")
    return int(float(m.group(1)) * _SIZE_UNITS[m.group(2)])


def parse_listen(text: str) -> Listen:
    """``HOST:PORT`` (``[::1]:9177`` for IPv6); ValueError if bad."""
    m = _HOSTPORT.match(str(text).strip())
    port = int(m.group("port")) if m else 0
    if m is None or not 0 < port < 65536:
        raise ValueError(f"bad address {text!r} (expected HOST:PORT, like 127.0.0.1:9177)")
    return Listen(m.group("v6") or m.group("host"), port)


def merge_listen(config: ServeConfig, override: str | None) -> ServeConfig:
    """The config with ``--listen HOST:PORT`` applied (the command line wins over ``listen:``)."""
    if override is None:
        return config
    try:
        return replace(config, listen=parse_listen(override))
    except ValueError as exc:
        raise InputError(str(exc), key="--listen") from None


def bind_warning(listen: Listen) -> str | None:
    """The warning to print when the service binds an address other machines can reach."""
    if listen.loopback:
        return None
    return (f"warning: listening on {listen}, reachable from other machines; reads are protected only if "
            "auth.open_reads is false, and every change needs the token")


class _Ctx(NodeReader):
    def __init__(self, file: str, base: Path) -> None:
        super().__init__(file)
        self.base = base

    def mapping(self, node: yaml.Node, section: str) -> dict[str, yaml.Node]:
        if not isinstance(node, yaml.MappingNode):
            raise self.err(node, f"{section or 'config'}: expected a mapping")
        valid = SCHEMA[re.sub(r"\[\d+\]", "[]", section)]
        out: dict[str, yaml.Node] = {}
        for knode, vnode in node.value:
            key = str(knode.value)
            if key not in valid:
                where = f"{section}: " if section else ""
                raise self.err(knode, f"{where}unknown key {key!r}; valid keys: {', '.join(valid)}")
            out[key] = vnode
        return out

    def text(self, node: yaml.Node, what: str) -> str:
        if not isinstance(node, yaml.ScalarNode) or node.value == "":
            raise self.err(node, f"{what}: expected a non-empty string")
        return str(node.value)

    def bool(self, node: yaml.Node, what: str) -> bool:
        value = yaml.SafeLoader("").construct_object(node) if isinstance(node, yaml.ScalarNode) else None
        if not isinstance(value, bool):
            raise self.err(node, f"{what}: expected true or false")
        return value

    def convert(self, node: yaml.Node, what: str, fn: Any) -> Any:
        try:
            return fn(self.text(node, what))
        except ValueError as exc:
            raise self.err(node, f"{what}: {exc}") from None

    def duration(self, node: yaml.Node, what: str) -> float:
        value = float(self.convert(node, what, parse_duration))
        if value <= 0:
            raise self.err(node, f"{what}: must be more than 0")
        return value

    def count(self, node: yaml.Node, what: str) -> int:
        value = int(self.convert(node, what, parse_size))
        if value <= 0:
            raise self.err(node, f"{what}: must be more than 0")
        return value

    def path(self, node: yaml.Node, what: str) -> str:
        return str(self.base / Path(self.text(node, what)).expanduser())

    def url(self, node: yaml.Node, what: str) -> str:
        text = self.text(node, what)
        parts = urllib.parse.urlsplit(text)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise self.err(node, f"{what}: expected an http:// or https:// URL, got {text!r}")
        return text

    def where(self, node: yaml.Node) -> str:
        return f"{self.file}:{node.start_mark.line + 1}"


def _labels(ctx: _Ctx, node: yaml.Node, what: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(node, yaml.MappingNode):
        raise ctx.err(node, f"{what}: expected a mapping of label names to values")
    out = []
    for knode, vnode in node.value:
        name = str(knode.value)
        if not _LABEL.match(name) or name.startswith("__"):
            raise ctx.err(knode, f"{what}: bad label name {name!r}")
        if not isinstance(vnode, yaml.ScalarNode):
            raise ctx.err(vnode, f"{what}.{name}: expected a string")
        out.append((name, str(vnode.value)))
    return tuple(sorted(out))


def _scrape_job(ctx: _Ctx, node: yaml.Node, i: int) -> list[ScrapeTarget]:
    sec = f"scrape[{i}]"
    m = ctx.mapping(node, sec)
    for key in ("job", "targets"):
        if key not in m:
            raise ctx.err(node, f"{sec}: missing {key!r}")
    job = ctx.text(m["job"], f"{sec}.job")
    scheme = ctx.text(m["scheme"], f"{sec}.scheme") if "scheme" in m else "http"
    if scheme not in ("http", "https"):
        raise ctx.err(m["scheme"], f"{sec}.scheme: expected http or https")
    path = ctx.text(m["path"], f"{sec}.path") if "path" in m else "/metrics"
    if not path.startswith("/"):
        raise ctx.err(m["path"], f"{sec}.path: must start with '/'")
    interval = ctx.duration(m["interval"], f"{sec}.interval") if "interval" in m else 15.0
    timeout = ctx.duration(m["timeout"], f"{sec}.timeout") if "timeout" in m else min(10.0, interval)
    if timeout > interval:
        raise ctx.err(m.get("timeout", node), f"{sec}.timeout: longer than the interval ({interval:g}s)")
    labels = _labels(ctx, m["labels"], f"{sec}.labels") if "labels" in m else ()
    max_body = ctx.count(m["max_body"], f"{sec}.max_body") if "max_body" in m else 32 << 20
    out = []
    for tnode in ctx.seq(m["targets"], f"{sec}.targets"):
        inst = ctx.text(tnode, f"{sec}.targets")
        ctx.convert(tnode, f"{sec}.targets", parse_listen)
        out.append(ScrapeTarget(job, inst, f"{scheme}://{inst}{path}", interval, timeout, labels, max_body,
                                ctx.where(tnode)))
    if not out:
        raise ctx.err(m["targets"], f"{sec}.targets: no targets")
    return out


def _log_source(ctx: _Ctx, node: yaml.Node, i: int) -> LogSource:
    sec = f"logs[{i}]"
    m = ctx.mapping(node, sec)
    if ("path" in m) == ("journal" in m):
        raise ctx.err(node, f"{sec}: give either 'path' or 'journal'")
    host = ctx.text(m["host"], f"{sec}.host") if "host" in m else None
    from_start = ctx.bool(m["from_start"], f"{sec}.from_start") if "from_start" in m else False
    if "path" in m:
        return LogSource(path=ctx.path(m["path"], f"{sec}.path"), host=host, from_start=from_start,
                         source=ctx.where(node))
    jnode = m["journal"]
    args: tuple[str, ...] = ()
    if isinstance(jnode, yaml.SequenceNode):
        args = tuple(ctx.text(a, f"{sec}.journal") for a in jnode.value)
    elif not ctx.bool(jnode, f"{sec}.journal"):
        raise ctx.err(jnode, f"{sec}.journal: expected true or a list of extra journalctl arguments")
    return LogSource(command=(*JOURNAL_COMMAND, *args), host=host, source=ctx.where(node))


def _destination(ctx: _Ctx, node: yaml.Node, sec: str) -> Destination:
    m = ctx.mapping(node, sec)
    if "url" not in m:
        raise ctx.err(node, f"{sec}: missing 'url'")
    return Destination(ctx.url(m["url"], f"{sec}.url"),
                       ctx.duration(m["timeout"], f"{sec}.timeout") if "timeout" in m else 10.0,
                       ctx.path(m["token_file"], f"{sec}.token_file") if "token_file" in m else None,
                       ctx.where(node))


def _metric_map(ctx: _Ctx, node: yaml.Node) -> str:
    """A preset's name as it is, a map file relative to the config's folder."""
    from suanli.store.promql.metric_map import PRESETS

    text = ctx.text(node, "backend.metric_map")
    return text if text in PRESETS else ctx.path(node, "backend.metric_map")


def _backend(ctx: _Ctx, node: yaml.Node) -> Backend:
    m = ctx.mapping(node, "backend")
    kind = ctx.text(m["kind"], "backend.kind") if "kind" in m else "duckdb"
    if kind not in BACKENDS:
        raise ctx.err(m["kind"], f"backend.kind: unknown {kind!r}; valid: {', '.join(BACKENDS)}")
    url = ctx.url(m["url"], "backend.url") if "url" in m else None
    if kind == "prometheus" and url is None:
        raise ctx.err(node, "backend: kind prometheus needs 'url'")
    path = ctx.path(m["path"], "backend.path") if "path" in m else Backend.path
    tsdb_keys = [k for k in ("url", "token_file", "basic_auth_file", "metric_map") if k in m]
    if kind != "prometheus" and tsdb_keys:
        raise ctx.err(m[tsdb_keys[0]], f"backend: {', '.join(tsdb_keys)}: only with kind prometheus")
    if "token_file" in m and "basic_auth_file" in m:
        raise ctx.err(m["basic_auth_file"], "backend: token_file and basic_auth_file: give one of them")
    token = ctx.path(m["token_file"], "backend.token_file") if "token_file" in m else None
    basic = ctx.path(m["basic_auth_file"], "backend.basic_auth_file") if "basic_auth_file" in m else None
    maps = tuple(_metric_map(ctx, n) for n in ctx.seq(m["metric_map"], "backend.metric_map")) if "metric_map" in m else ()
    return Backend(kind, path, url, token, basic, maps)


def _limits(ctx: _Ctx, node: yaml.Node, sec: str, default: ReceiverLimits) -> ReceiverLimits:
    m = ctx.mapping(node, sec)
    return ReceiverLimits(
        ctx.count(m["max_body"], f"{sec}.max_body") if "max_body" in m else default.max_body_bytes,
        ctx.count(m["max_decompressed"], f"{sec}.max_decompressed") if "max_decompressed" in m
        else default.max_decompressed_bytes,
        ctx.count(m["queue"], f"{sec}.queue") if "queue" in m else default.queue_items)


def _receivers(ctx: _Ctx, node: yaml.Node) -> ReceiverSettings:
    m = ctx.mapping(node, "receivers")
    d = ReceiverSettings()
    upload_dir = None
    if "kineto" in m:
        km = ctx.mapping(m["kineto"], "receivers.kineto")
        upload_dir = ctx.path(km["upload_dir"], "receivers.kineto.upload_dir") if "upload_dir" in km else None
    lim = {k: _limits(ctx, m[k], f"receivers.{k}", getattr(d, k)) if k in m else getattr(d, k)
           for k in ("otlp", "alertmanager", "kineto")}
    return ReceiverSettings(
        lim["otlp"], lim["alertmanager"], lim["kineto"],
        kineto_upload_dir=upload_dir,
        retry_after_s=ctx.duration(m["retry_after"], "receivers.retry_after") if "retry_after" in m
        else d.retry_after_s)


def _auth(ctx: _Ctx, node: yaml.Node) -> AuthSettings:
    m = ctx.mapping(node, "auth")
    env = ctx.text(m["token_env"], "auth.token_env") if "token_env" in m else AuthSettings.token_env
    return AuthSettings(ctx.path(m["token_file"], "auth.token_file") if "token_file" in m else None, env,
                        ctx.bool(m["open_reads"], "auth.open_reads") if "open_reads" in m else False)


def _evaluation(ctx: _Ctx, node: yaml.Node) -> Evaluation:
    m = ctx.mapping(node, "evaluation")
    d = Evaluation()
    clock = ctx.text(m["clock"], "evaluation.clock") if "clock" in m else d.clock
    if clock not in CLOCKS:
        raise ctx.err(m["clock"], f"evaluation.clock: {clock!r}: expected {', '.join(CLOCKS)}")
    return Evaluation(ctx.duration(m["interval"], "evaluation.interval") if "interval" in m else d.interval_s,
                      ctx.duration(m["window"], "evaluation.window") if "window" in m else d.window_s, clock)


def _unique_targets(ctx: _Ctx, targets: list[ScrapeTarget]) -> None:
    seen: dict[str, str] = {}
    for t in targets:
        if t.name in seen:
            line = int(t.source.rsplit(":", 1)[1])
            raise InputError(f"scrape: target {t.name} given twice (first at {seen[t.name]})", file=ctx.file,
                             line=line)
        seen[t.name] = t.source


def parse_serve_config(text: str, source: str = "serve.yaml", base: Path | None = None) -> ServeConfig:
    """Parse config text; InputError (file:line: what) on anything wrong. Relative paths join ``base``."""
    ctx = _Ctx(source, base if base is not None else Path(source).parent)
    root = compose(text, source)
    if root is None:
        return ServeConfig(source=source)
    m = ctx.mapping(root, "")
    d = ServeConfig()
    targets = [t for i, n in enumerate(ctx.seq(m["scrape"], "scrape")) for t in _scrape_job(ctx, n, i)] \
        if "scrape" in m else []
    _unique_targets(ctx, targets)
    backend = _backend(ctx, m["backend"]) if "backend" in m else d.backend
    if backend.kind == "prometheus" and targets:
        raise ctx.err(m["scrape"], "scrape: with backend.kind prometheus the TSDB holds the metrics: scrape the "
                                   "exporters there (its scrape_configs), not in serve")
    return ServeConfig(
        listen=ctx.convert(m["listen"], "listen", parse_listen) if "listen" in m else d.listen,
        backend=backend,
        inventory=ctx.path(m["inventory"], "inventory") if "inventory" in m else None,
        reload_interval_s=ctx.duration(m["reload_interval"], "reload_interval") if "reload_interval" in m
        else d.reload_interval_s,
        rules=tuple(ctx.path(n, "rules") for n in ctx.seq(m["rules"], "rules")) if "rules" in m else (),
        evaluation=_evaluation(ctx, m["evaluation"]) if "evaluation" in m else d.evaluation,
        scrape=tuple(targets),
        logs=tuple(_log_source(ctx, n, i) for i, n in enumerate(ctx.seq(m["logs"], "logs"))) if "logs" in m else (),
        alertmanager=tuple(_destination(ctx, n, f"alertmanager[{i}]")
                           for i, n in enumerate(ctx.seq(m["alertmanager"], "alertmanager")))
        if "alertmanager" in m else (),
        remote_write=tuple(_destination(ctx, n, f"remote_write[{i}]")
                           for i, n in enumerate(ctx.seq(m["remote_write"], "remote_write")))
        if "remote_write" in m else (),
        auth=_auth(ctx, m["auth"]) if "auth" in m else d.auth,
        receivers=_receivers(ctx, m["receivers"]) if "receivers" in m else d.receivers,
        source=source)


def load_serve_config(path: Path | None) -> ServeConfig:
    """Read a config file; None gives the defaults (docs/serve.md)."""
    if path is None:
        return ServeConfig()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read config file: {exc.strerror or exc}", file=str(path)) from None
    return parse_serve_config(text, str(path), Path(path).resolve().parent)
