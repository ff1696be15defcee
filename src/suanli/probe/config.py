"""The probe's settings: every option, its environment variable and its default (docs/probe.md).

Precedence: an argument given to ``Probe(...)`` wins over the environment, which wins over the
default. The OpenTelemetry variables keep their standard meaning; suanli's own start with
``SUANLI_PROBE``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

__all__ = [
    "ENV_ENABLED", "ENV_FILE", "ENV_FLOPS_PER_TOKEN", "ENV_JOB_ID", "ENV_METRICS_ADDR", "ENV_METRICS_PORT",
    "ENV_OTLP_ENDPOINT", "ENV_OTLP_TIMEOUT", "ENV_OTLP_TRACES_ENDPOINT", "ENV_PEAK_FLOPS", "ENV_QUEUE_SIZE",
    "ENV_RESOURCE_ATTRIBUTES", "ENV_SLA_ID", "ProbeConfig", "is_off",
]

ENV_ENABLED = "SUANLI_PROBE"
"""``0``, ``off``, ``false`` or ``no``: the probe does nothing (each annotation costs a method call)."""
ENV_JOB_ID = "SUANLI_PROBE_JOB_ID"
"""The inventory job id, when the code does not pass ``job_id`` (``job.id`` of OTEL_RESOURCE_ATTRIBUTES also works)."""
ENV_SLA_ID = "SUANLI_PROBE_SLA_ID"
"""The SLA the job serves (resource attribute ``business.sla_id``)."""
ENV_FILE = "SUANLI_PROBE_FILE"
"""Write OTLP/JSON lines to this file (the Collector's file-exporter format) instead of sending OTLP/HTTP."""
ENV_QUEUE_SIZE = "SUANLI_PROBE_QUEUE_SIZE"
"""Most spans held for export; past it new ones are dropped and counted."""
ENV_METRICS_PORT = "SUANLI_PROBE_METRICS_PORT"
"""Rank 0 serves MFU and step time for Prometheus on this port (unset or 0: not served)."""
ENV_METRICS_ADDR = "SUANLI_PROBE_METRICS_ADDR"
"""Address the metrics port binds (default 127.0.0.1)."""
ENV_FLOPS_PER_TOKEN = "SUANLI_PROBE_FLOPS_PER_TOKEN"
"""Model FLOPs per trained token, when the code does not give them."""
ENV_PEAK_FLOPS = "SUANLI_PROBE_PEAK_FLOPS"
"""Peak FLOP/s of one device for MFU (else no MFU on CPU; on a GPU from its model name when known)."""
ENV_OTLP_ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
"""OTLP/HTTP base address; spans go to ``<endpoint>/v1/traces`` (default http://localhost:4318)."""
ENV_OTLP_TRACES_ENDPOINT = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
"""Full OTLP/HTTP traces address; wins over OTEL_EXPORTER_OTLP_ENDPOINT."""
ENV_OTLP_TIMEOUT = "OTEL_EXPORTER_OTLP_TIMEOUT"
"""Seconds one export may take before it is abandoned (default here 5)."""
ENV_RESOURCE_ATTRIBUTES = "OTEL_RESOURCE_ATTRIBUTES"
"""``key=value,...`` resource attributes; they win over what the probe detects (host, rank, GPU)."""

_OFF = {"0", "off", "false", "no"}


def is_off(env: Mapping[str, str] | None = None) -> bool:
    """True when ``SUANLI_PROBE`` switches the probe off."""
    value = (os.environ if env is None else env).get(ENV_ENABLED, "")
    return value.strip().lower() in _OFF


def _num(env: Mapping[str, str], key: str) -> float | None:
    raw = env.get(key, "").strip()
    try:
        return float(raw) if raw else None
    except ValueError:
        return None


@dataclass(frozen=True)
class ProbeConfig:
    """Everything ``Probe(...)`` accepts as a keyword; None means detect or default."""

    job_id: str | None = None
    """Inventory job id (resource ``job.id``)."""
    rank: int | None = None
    """Global rank (resource ``framework.pytorch.rank``); else torch.distributed, else ``RANK``, else 0."""
    world_size: int | None = None
    """Number of ranks; else torch.distributed, else ``WORLD_SIZE``, else 1."""
    local_rank: int | None = None
    """Device index on this host; else ``LOCAL_RANK``, else 0 (picks the GPU whose UUID is reported)."""
    host: str | None = None
    """Node id (resource ``host.name``); else the host name."""
    gpu_uuid: str | None = None
    """GPU UUID (resource ``resource.gpu.id``); else read through NVML when a GPU is there."""
    sla_id: str | None = None
    """SLA the job serves (resource ``business.sla_id``)."""
    parallelism: Mapping[str, int] | None = None
    """``{"dp": .., "tp": .., "pp": ..}``; default pure data parallel over the world."""
    nccl_group_id: str | None = None
    """Data-parallel group id (resource ``nccl.group_id``); else derived as ``JOB/dp/pp0-tp0``."""
    nccl_rank: int | None = None
    """Rank inside that group (resource ``nccl.rank``)."""
    enabled: bool | None = None
    """False: do nothing. Default: on unless ``SUANLI_PROBE`` says off."""
    endpoint: str | None = None
    """OTLP/HTTP traces address; default from OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT."""
    file: str | None = None
    """OTLP/JSON lines file to append to instead of OTLP/HTTP."""
    export_timeout_s: float = 5.0
    """Longest one export may take (OTEL_EXPORTER_OTLP_TIMEOUT wins)."""
    queue_size: int = 8192
    """Spans held for export at most; more are dropped and counted."""
    flops_per_token: float | None = None
    """Model FLOPs per token (``train.model_flops`` = tokens x this)."""
    peak_flops: float | None = None
    """Peak FLOP/s of one device, for MFU."""
    metrics_port: int | None = None
    """Rank 0 serves ``/metrics`` here (MFU, step time, drops)."""
    metrics_addr: str = "127.0.0.1"
    """Address of the metrics server."""
    resource_attributes: Mapping[str, Any] = field(default_factory=dict)
    """More resource attributes (win over everything detected)."""
    max_errors: int = 100
    """Internal errors tolerated before the probe switches itself off."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **given: Any) -> ProbeConfig:
        """Defaults, then the environment, then ``given`` (unknown keys: TypeError, as a typo should be)."""
        e = os.environ if env is None else env
        names = {f.name for f in fields(cls)}
        unknown = set(given) - names
        if unknown:
            raise TypeError(f"unknown probe option(s): {', '.join(sorted(unknown))}")
        port = _num(e, ENV_METRICS_PORT)
        timeout = _num(e, ENV_OTLP_TIMEOUT)
        queue = _num(e, ENV_QUEUE_SIZE)
        cfg = cls(
            job_id=e.get(ENV_JOB_ID) or None, sla_id=e.get(ENV_SLA_ID) or None,
            enabled=False if is_off(e) else None, file=e.get(ENV_FILE) or None,
            endpoint=e.get(ENV_OTLP_TRACES_ENDPOINT) or _traces_url(e.get(ENV_OTLP_ENDPOINT)),
            export_timeout_s=timeout if timeout is not None and timeout > 0 else cls.export_timeout_s,
            queue_size=int(queue) if queue is not None and queue >= 1 else cls.queue_size,
            flops_per_token=_num(e, ENV_FLOPS_PER_TOKEN), peak_flops=_num(e, ENV_PEAK_FLOPS),
            metrics_port=int(port) if port else None,
            metrics_addr=e.get(ENV_METRICS_ADDR) or cls.metrics_addr)
        return replace(cfg, **{k: v for k, v in given.items() if v is not None})


def _traces_url(base: str | None) -> str | None:
    """``<base>/v1/traces``, as the OTLP/HTTP exporter specification builds it."""
    if not base:
        return None
    return base.rstrip("/") + "/v1/traces"
