"""GPU memory findings from ECC counters, row remapping and memory Xids.

A double-bit error, an uncorrectable remap, a failed remap or a memory Xid is a failure. A
degradation is an SBE rate that rises or that no healthy card reaches, a correctable row remap
(the card retired a row of its own), or Xid 92 (the driver's own "high single-bit ECC rate").

SBEs alone are judged against physics, not against zero: healthy cards count a few per hour, so
"the baseline was zero and now there are three" is noise. The window's SBE count must be one a
card at the background ceiling (``DetectConfig.sbe_background_per_h``) would reach with
probability below ``sbe_alpha`` over the span the counter was observed (Poisson tail), or the later
half of the span must hold more than an even spread of the same count could put there (binomial
tail: a rising rate). Counter resets and gaps are the counter reader's (Prometheus' reset rule,
NaN skipped): a reset adds no increase, a gap puts its increase at the sample after it.
"""

from __future__ import annotations

import numpy as np

from suanli.analysis.categories import policy
from suanli.analysis.health import events as hw
from suanli.analysis.health.detect import DetectConfig, Detection, GpuData, confirmed_onset
from suanli.analysis.median import median

__all__ = ["detect_memory", "sbe_significance"]

_HOUR_S = 3600.0


def _fmt_count(x: float) -> str:
    return f"{x:,.0f}"


def sbe_significance(sbe: hw.CounterDelta) -> tuple[float, float]:
    """(observed span in s, P(at least the later half's count | the count spread evenly)).

    The span runs from the first to the last valid reading plus one scrape interval (the first
    reading's increase arrived over the interval before it); the later half is its second half.
    """
    ok = np.flatnonzero(np.isfinite(sbe.increments))
    if ok.size < 2 or sbe.total <= 0:
        return 0.0, 1.0
    ts = sbe.ts[ok]
    step = median(np.diff(ts))
    span = float(ts[-1] - ts[0]) + step
    mid = float(ts[0]) - step + span / 2.0
    late = float(sbe.increments[ok][ts > mid].sum())
    from scipy.stats import binom  # here: SciPy's import costs every CLI verb a second

    return span, float(binom.sf(late - 1, round(sbe.total), 0.5))


def _background_tail(total: float, span_s: float, per_h: float) -> float:
    """P(N >= total) for N ~ Poisson(per_h x span)."""
    from scipy.stats import poisson

    return float(poisson.sf(total - 1, per_h * span_s / _HOUR_S))


def _sbe_evidence(g: GpuData, sbe: hw.CounterDelta | None, sbe_per_day: float,
                  config: DetectConfig) -> tuple[float, str] | None:
    if sbe is None or sbe.total < config.sbe_min_increase or sbe.onset_s is None:
        return None
    span, p_rise = sbe_significance(sbe)
    if span <= 0:
        return None
    p_bg = _background_tail(sbe.total, span, config.sbe_background_per_h)
    if min(p_bg, p_rise) >= config.sbe_alpha:
        return None
    why = (f"{sbe.total / span * _HOUR_S:,.0f}/h, P {p_bg:.1g} at a healthy card's "
           f"{config.sbe_background_per_h:g}/h" if p_bg < config.sbe_alpha
           else f"rising: P {p_rise:.1g} that an even rate puts so many in the later half")
    return (confirmed_onset(sbe, config) or sbe.onset_s,
            f"{g.gpu_id} SBE +{_fmt_count(sbe.total)} in {span / 60:.0f} min ({why}; "
            f"~{sbe_per_day:,.1f}/day fitted)")


def _failure_evidence(g: GpuData) -> list[tuple[float, str]]:
    out: list[tuple[float, str]] = []
    for metric, what in ((hw.DBE, "double-bit ECC errors"), (hw.REMAP_UNCORR, "uncorrectable remapped rows"),
                         (hw.REMAP_FAIL, "row remap failures")):
        d = hw.counter_delta(*g.series[metric]) if metric in g.series else None
        if d is not None and d.total > 0 and d.onset_s is not None:
            out.append((d.onset_s, f"{g.gpu_id} {what} +{_fmt_count(d.total)}"))
    for e in g.events:
        if e.kind == "xid" and e.code is not None and hw.xid_category(e.code) == "gpu_memory_failure":
            out.append((e.ts, f"{g.gpu_id} Xid {e.code} ({e.meaning or hw.xid_meaning(e.code)}) "
                              f"x{e.count:.0f} [{e.source}]"))
    return out


def _degradation_evidence(g: GpuData, sbe_per_day: float, config: DetectConfig) -> list[tuple[float, str]]:
    out: list[tuple[float, str]] = []
    sbe = hw.counter_delta(*g.series[hw.SBE]) if hw.SBE in g.series else None
    line = _sbe_evidence(g, sbe, sbe_per_day, config)
    if line is not None:
        out.append(line)
    corr = hw.counter_delta(*g.series[hw.REMAP_CORR]) if hw.REMAP_CORR in g.series else None
    if corr is not None and corr.total > 0 and corr.onset_s is not None:
        out.append((corr.onset_s, f"{g.gpu_id} correctable remapped rows +{_fmt_count(corr.total)}"))
    for e in g.events:
        if e.kind == "xid" and e.code is not None and hw.xid_category(e.code) == "gpu_memory_degradation":
            out.append((e.ts, f"{g.gpu_id} Xid {e.code} ({hw.xid_meaning(e.code)})"))
    return out


def detect_memory(g: GpuData, sbe_per_day: float, recommendation: str, forecast_note: str,
                  config: DetectConfig) -> Detection | None:
    """DBE / uncorrectable remaps / memory Xids -> failure; an SBE rate no healthy card shows or a
    rising one, correctable remaps, Xid 92 -> degradation. The forecast's "retire" adds its note
    to that evidence; on its own (a forecast from a few SBEs) it is a prediction, not a finding."""
    fail_ev = _failure_evidence(g)
    deg_ev = _degradation_evidence(g, sbe_per_day, config)
    if fail_ev:
        ev = sorted(fail_ev) + sorted(deg_ev)
        return Detection("gpu_memory_failure", ev[0][0], policy("gpu_memory_failure").confidence.strong,
                         tuple(s for _, s in ev))
    if not deg_ev:
        return None
    ev = sorted(deg_ev)
    if recommendation == "retire" and forecast_note:
        ev.append((ev[0][0], forecast_note))
    conf_of = policy("gpu_memory_degradation").confidence
    conf = conf_of.strong if len(ev) > 1 or recommendation == "retire" else conf_of.weak
    return Detection("gpu_memory_degradation", ev[0][0], conf, tuple(s for _, s in ev))
