"""Condition values as [entity, time] matrices, for all entities of a rule's scope at once.

Reads the store once per metric and window (``store.series``) and computes PromQL-equivalent
values with :class:`SeriesBlock`; events come from ``store.events`` and analysis values from the
``values`` argument. A series that feeds several rule entities (or an entity fed by several
series, e.g. AER ``severity`` series) is combined with "any series satisfies".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from suanli.ingest.records import Event
from suanli.rules.conditions import Condition
from suanli.rules.entities import EntityIndex
from suanli.rules.names import DERIVED, METRICS
from suanli.rules.series_math import SeriesBlock
from suanli.store.api import Series

__all__ = ["ConditionData", "RuleStore", "RulesConfig"]

F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]


class RuleStore(Protocol):
    """The part of :class:`suanli.store.api.Store` the rules read."""

    def series(self, metric: str, entity_ids: Sequence[str] | None = None,
               start: float | None = None, end: float | None = None) -> list[Series]: ...

    def events(self, entity_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None,
               start: float | None = None, end: float | None = None) -> list[Event]: ...


@dataclass(frozen=True)
class RulesConfig:
    """Evaluation settings of the rule engine (defaults follow Prometheus' rule manager)."""

    eval_interval_s: float = 15.0
    """Evaluation interval, as Prometheus' ``evaluation_interval``."""
    lookback_s: float = 300.0
    """Instant-selector lookback: a gauge's latest sample counts for 5 m (Prometheus' lookback delta)."""
    rate_window_s: float = 60.0
    """Range of ``rate()`` for ``/s`` and ``/min`` conditions: ``rate(x[1m])``."""
    rate_window_long_s: float = 3600.0
    """Range of ``rate()`` for ``/h`` and ``/day`` conditions: ``rate(x[1h])``."""
    sudden_short_s: float = 300.0
    """sudden_increase: the recent window, ``rate(x[5m])``."""
    sudden_baseline_s: float = 3600.0
    """sudden_increase: the baseline window before it, ``rate(x[1h] offset 5m)``."""
    sudden_factor: float = 10.0
    """sudden_increase: the recent rate must exceed this many times the baseline rate ..."""
    sudden_min_rate_per_s: float = 1.0
    """... and this absolute rate (per second), so a counter going from 0 to 1 is no change point."""
    event_window_s: float = 3600.0
    """Window of an event condition written without ``within`` (``xid(79)``)."""
    promql_v2: bool = False
    """Range/lookback edges of Prometheus 2.x (closed on the left) instead of 3.x (open)."""


def _compare(v: F64, op: str, thr: float, present: B) -> B:
    with np.errstate(invalid="ignore"):
        res: B = {">": v > thr, ">=": v >= thr, "<": v < thr, "<=": v <= thr, "==": v == thr,
                  "!=": v != thr}[op]
    return res & present


class ConditionData:
    """Computes condition matrices for one evaluation (a batch window or one incremental step)."""

    def __init__(self, store: RuleStore, index: EntityIndex, config: RulesConfig, start: float, end: float,
                 values: Mapping[str, Mapping[str, float]] | None = None) -> None:
        self.store, self.index, self.config = store, index, config
        self.start, self.end = start, end
        self.values = values or {}
        self._blocks: dict[str, tuple[SeriesBlock, list[str]]] = {}
        self._pairs: dict[tuple[str, str, tuple[str, ...], tuple[str, ...]],
                          tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]] = {}
        self.max_window_s = max(config.lookback_s, config.rate_window_long_s,
                                config.sudden_short_s + config.sudden_baseline_s)
        self._history: dict[str, float] = {}

    def history_s(self, cond: Condition) -> float:
        """How far before an evaluation time a condition reads data."""
        cfg = self.config
        if cond.kind == "metric":
            return cfg.lookback_s
        if cond.kind == "rate":
            return cfg.rate_window_s if (cond.per_s or 0) <= 60 else cfg.rate_window_long_s
        if cond.kind == "ratio":
            return cfg.rate_window_s
        if cond.kind == "sudden":
            return cfg.sudden_short_s + cfg.sudden_baseline_s
        return 0.0

    def plan(self, conditions: list[Condition]) -> None:
        """Read each metric only as far back as the conditions using it need (live steps stay cheap)."""
        for c in conditions:
            for m in self.metrics_of(c):
                self._history[m] = max(self._history.get(m, 0.0), self.history_s(c))

    def block(self, metric: str) -> tuple[SeriesBlock, list[str]]:
        """All series of one stored metric over the window (plus the look-back its conditions need),
        and the entity id of each (\"\" for an unresolved series)."""
        if metric not in self._blocks:
            back = self._history.get(metric, self.max_window_s)
            got = self.store.series(metric, None, self.start - back - 1.0, self.end)
            self._blocks[metric] = (SeriesBlock([s.ts for s in got], [s.values for s in got]),
                                    [s.key.entity_id or "" for s in got])
        return self._blocks[metric]

    def metrics_of(self, cond: Condition) -> list[str]:
        """Stored metrics a condition reads."""
        if cond.kind in ("analysis", "event"):
            return []
        names = DERIVED.get(cond.name, (cond.name,))
        return [METRICS[n].metric for n in names]

    def drop(self, metric: str) -> None:
        """Forget a metric's block (the batch evaluator drops each after its last rule)."""
        self._blocks.pop(metric, None)

    def _pairs_for(self, scope: str, kind: str, rows: list[str], entities: list[str]
                   ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        key = (scope, kind, tuple(rows), tuple(entities))   # rules of one scope may cover different entities
        if key not in self._pairs:
            by_ent: dict[str, list[int]] = {}
            for r, e in enumerate(rows):
                by_ent.setdefault(e, []).append(r)
            ri: list[int] = []
            si: list[int] = []
            for i, e in enumerate(entities):
                for m in self.index.members(scope, e, kind):
                    for r in by_ent.get(m, ()):
                        ri.append(i)
                        si.append(r)
            self._pairs[key] = (np.asarray(ri, dtype=np.int64), np.asarray(si, dtype=np.int64))
        return self._pairs[key]

    def _to_rule(self, scope: str, kind: str, rows: list[str], entities: list[str], hit: B, val: F64
                 ) -> tuple[B, F64]:
        """Row matrices -> rule-entity matrices: true if any feeding row is true; value of a true row."""
        n_t = hit.shape[1]
        out_b = np.zeros((len(entities), n_t), dtype=bool)
        out_v = np.full((len(entities), n_t), np.nan)
        ri, si = self._pairs_for(scope, kind, rows, entities)
        if ri.size == 0:
            return out_b, out_v
        cut = np.flatnonzero(np.r_[True, ri[1:] != ri[:-1]])
        out_b[ri[cut]] = np.logical_or.reduceat(hit[si], cut, axis=0)
        masked = np.where(hit[si], val[si], np.nan)
        with np.errstate(invalid="ignore"):
            out_v[ri[cut]] = np.fmax.reduceat(masked, cut, axis=0)
        return out_b, out_v

    def matrix(self, scope: str, entities: list[str], cond: Condition, times: F64) -> tuple[B, F64]:
        """(condition true, its value) as [entity, time] for the rule entities."""
        if cond.kind == "analysis":
            v = np.array([self.values.get(e, {}).get(cond.name, np.nan) for e in entities], dtype=np.float64)
            vv = np.repeat(v[:, None], len(times), axis=1)
            return _compare(vv, cond.op, cond.threshold, ~np.isnan(vv)), vv
        if cond.kind == "event":
            return self._events(scope, entities, cond, times)
        if cond.kind == "ratio":
            return self._ratio(scope, entities, cond, times)
        mdef = METRICS[cond.name]
        blk, rows = self.block(mdef.metric)
        cfg, v2 = self.config, self.config.promql_v2
        if cond.kind == "metric":
            val = blk.instant(times, cfg.lookback_s, v2)
            hit = _compare(val, cond.op, cond.threshold, ~np.isnan(val))
        elif cond.kind == "rate":
            assert cond.per_s is not None
            win = cfg.rate_window_s if cond.per_s <= 60 else cfg.rate_window_long_s
            val = blk.rate(times, win, v2) * cond.per_s
            hit = _compare(val, cond.op, cond.threshold, ~np.isnan(val))
        else:   # sudden
            val = blk.rate(times, cfg.sudden_short_s, v2)
            base = blk.rate(times - cfg.sudden_short_s, cfg.sudden_baseline_s, v2)
            factor = cond.factor if cond.factor is not None else cfg.sudden_factor
            with np.errstate(invalid="ignore"):
                hit = (val > factor * base) & (val > cfg.sudden_min_rate_per_s)
        return self._to_rule(scope, mdef.scope, rows, entities, hit, val)

    def _ratio(self, scope: str, entities: list[str], cond: Condition, times: F64) -> tuple[B, F64]:
        num_name, den_name = DERIVED[cond.name]
        nb, nrows = self.block(METRICS[num_name].metric)
        db, drows = self.block(METRICS[den_name].metric)
        dpos = {e: i for i, e in enumerate(drows)}
        pairs = [(i, dpos[e]) for i, e in enumerate(nrows) if e in dpos]
        ni = np.array([p[0] for p in pairs], dtype=np.int64)
        di = np.array([p[1] for p in pairs], dtype=np.int64)
        win, v2 = self.config.rate_window_s, self.config.promql_v2
        with np.errstate(invalid="ignore", divide="ignore"):
            val = nb.rate(times, win, v2)[ni] / db.rate(times, win, v2)[di]
        hit = _compare(val, cond.op, cond.threshold, np.isfinite(val))
        return self._to_rule(scope, METRICS[num_name].scope, [nrows[i] for i in ni], entities, hit, val)

    def _events(self, scope: str, entities: list[str], cond: Condition, times: F64) -> tuple[B, F64]:
        within = cond.within_s if cond.within_s is not None else self.config.event_window_s
        got = self.store.events(None, [cond.name], self.start - within, self.end)
        pos = {e: i for i, e in enumerate(entities)}
        per: dict[int, list[tuple[float, float]]] = {}
        for ev in got:
            if cond.codes and ev.code not in cond.codes:
                continue
            for tgt in self.index.project(ev.entity_kind, ev.entity_id, ev.host, scope):
                if tgt in pos:
                    per.setdefault(pos[tgt], []).append((ev.ts, float(ev.count)))
        counts = np.zeros((len(entities), len(times)))
        for i, evs in per.items():
            evs.sort()
            ts = np.array([e[0] for e in evs])
            cum = np.concatenate([[0.0], np.cumsum([e[1] for e in evs])])
            hi = np.searchsorted(ts, times, side="right")
            lo = np.searchsorted(ts, times - within, side="right")
            counts[i] = cum[hi] - cum[lo]
        return _compare(counts, cond.op, cond.threshold, np.ones_like(counts, dtype=bool)), counts
