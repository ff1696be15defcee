"""suanli's derived series sent by remote write after every step (the config's ``remote_write:``).

Each step's diagnosis becomes the series of :data:`suanli.store.remote_write.derived.DERIVED`
(MFU, goodput, time split, cost, health, incidents), stamped at the step's time, together with the
inventory's ``suanli_*_info`` series (re-sent each step so that PromQL joins never see them go
stale). One :class:`RemoteWriter` per destination keeps its bounded buffer across steps: a
receiver that is down gets the samples at a later step, the oldest dropped and counted beyond the
buffer. Retries are few (the loop must go on); nothing raises into the analysis.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from suanli.errors import InputError
from suanli.inventory import Inventory
from suanli.store.remote_write import RemoteWriteConfig, RemoteWriter, diagnosis_series, info_series
from suanli.store.remote_write.sender import SeriesSamples
from suanli.web.settings import Destination

__all__ = ["SeriesForwarder"]

log = logging.getLogger("suanli.serve")


def _writer(dest: Destination) -> RemoteWriter:
    token = None
    if dest.token_file is not None:
        try:
            token = Path(dest.token_file).read_text(encoding="utf-8").strip()
        except OSError as e:
            raise InputError(f"remote_write {dest.url}: cannot read token_file: {e.strerror}",
                             file=dest.token_file) from None
    return RemoteWriter(RemoteWriteConfig(dest.url, bearer_token=token or None, timeout_s=dest.timeout_s,
                                          max_retries=2, max_backoff_s=2.0))


class SeriesForwarder:
    """Sends each step's derived and info series to every ``remote_write`` destination."""

    def __init__(self, destinations: Sequence[Destination]) -> None:
        self.writers = [_writer(d) for d in destinations]
        self._info: tuple[Inventory, list[tuple[str, Mapping[str, str]]]] | None = None

    def _info_at(self, inventory: Inventory, t: float) -> list[SeriesSamples]:
        """The info series stamped ``t``: their labels built once per inventory (a second at 10,240
        GPUs), not once per step."""
        if self._info is None or self._info[0] is not inventory:
            self._info = (inventory, [(m, labels) for m, labels, _ in info_series(inventory, 0.0)])
        return [(m, labels, [(t, 1.0)]) for m, labels in self._info[1]]

    def push(self, doc: Mapping[str, Any], t: float, inventory: Inventory) -> None:
        if not self.writers:
            return
        series = [*diagnosis_series(doc, t, inventory), *self._info_at(inventory, t)]
        for w in self.writers:
            before = len(w.stats.errors)
            w.write(series)
            if len(w.stats.errors) > before:
                log.warning("remote write: %s", w.stats.errors[-1])

    def status(self) -> list[dict[str, Any]]:
        """Per destination: samples sent, rejected, dropped and pending, requests, the first errors."""
        return [{"url": w.config.url, "pending": w.pending,
                 **{k: v for k, v in asdict(w.stats).items() if k not in ("errors", "max_errors")},
                 "errors": w.stats.errors[:3]} for w in self.writers]

    def close(self) -> None:
        for w in self.writers:
            w.close()
