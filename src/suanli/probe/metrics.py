"""MFU and step time for Prometheus, served by rank 0 (``prometheus_client``, its own registry)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

__all__ = ["StepMetrics", "mfu_of_step"]


def mfu_of_step(model_flops: float | None, step_s: float, peak_flops: float | None) -> float | None:
    """Model FLOPs of this rank's step over (step time x one device's peak); None when unknown."""
    if model_flops is None or peak_flops is None or not peak_flops > 0 or not step_s > 0:
        return None
    value = model_flops / (step_s * peak_flops)
    return value if math.isfinite(value) else None


class StepMetrics:
    """Gauges of the last step and counters of the probe, on ``addr:port`` (port 0: any free one)."""

    def __init__(self, job_id: str, port: int, addr: str, dropped: Callable[[], float]) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

        self.registry = CollectorRegistry()
        labels = ["job"]
        self._mfu = Gauge("suanli_probe_mfu", "Model FLOPs utilisation of the last step on rank 0 (0-1).",
                          labels, registry=self.registry).labels(job_id)
        self._step = Gauge("suanli_probe_step_time_seconds", "Wall time of the last step on rank 0.",
                           labels, registry=self.registry).labels(job_id)
        self._steps = Counter("suanli_probe_steps", "Steps measured on rank 0.", labels,
                              registry=self.registry).labels(job_id)
        dropped_g = Gauge("suanli_probe_spans_dropped", "Spans left out because export could not keep up.",
                          labels, registry=self.registry).labels(job_id)
        dropped_g.set_function(dropped)
        self._mfu.set(float("nan"))
        self.server: Any
        self.server, self._thread = start_http_server(port, addr=addr, registry=self.registry)

    @property
    def port(self) -> int:
        return int(self.server.server_port)

    def observe(self, step_s: float, mfu: float | None) -> None:
        self._step.set(step_s)
        self._steps.inc()
        if mfu is not None:
            self._mfu.set(mfu)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
