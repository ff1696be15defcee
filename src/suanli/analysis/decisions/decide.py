"""Rank an incident's allowed actions by expected cost, with the reasoning as evidence lines.

For each allowed action and each way of carrying it out (:mod:`effects`), the options are: act
now, act after the job's next checkpoint (nothing to redo), and, for a fault that may clear by
itself, act when the stopping rule says (:mod:`stopping`). A fault that may clear takes the
stopping rule's timing; any other takes the cheapest option. The chosen action is the escalation's
when history escalates and the pack allows it, else the cheapest acting one if it beats staying
(for a fault that may clear: unless the rule would still be waiting at the horizon). Cost only
orders the allowed actions; it never adds one.
"""

from __future__ import annotations

from suanli.analysis.decisions.config import DEFAULT_CONFIG, DecisionConfig
from suanli.analysis.decisions.costs import Clearing, Effect, act_cost, after_rates, stay_cost
from suanli.analysis.decisions.effects import effects_of
from suanli.analysis.decisions.escalate import Verdict, verdict
from suanli.analysis.decisions.model import Decision, IncidentFacts, Option, Probabilities, RankedAction
from suanli.analysis.decisions.posterior import probabilities
from suanli.analysis.decisions.resolve import Resolved, resolve
from suanli.analysis.decisions.stopping import first_crossing
from suanli.analysis.decisions.text import duration, money

__all__ = ["DISRUPTION", "decide"]

#: Ties in cost go to the less disruptive action.
DISRUPTION: dict[str, int] = {"notify": 0, "open_ticket": 1, "mark_degraded": 2, "reset_gpu": 3, "retire_gpu": 4,
                              "reschedule_job": 5, "reboot_node": 6, "drain_node": 7}


class _Ctx:
    def __init__(self, facts: IncidentFacts, cfg: DecisionConfig) -> None:
        self.facts, self.cfg = facts, cfg
        self.res: Resolved = resolve(facts, cfg)
        self.probs: Probabilities = probabilities(facts, cfg)
        self.verdict: Verdict = verdict(facts, cfg)
        self.horizon = cfg.horizon_s
        self.clearing = Clearing(self.probs.clear, self.probs.clear_mean_s, self.probs.escalate)
        self.lasted = max(0.0, facts.now_s - facts.onset_s)
        self.cur = self.res.currency

    def m(self, x: float) -> str:
        return money(x, self.cur)


def _option(ctx: _Ctx, effect: Effect, mode: str, delay: float, why: str) -> Option:
    total, once, after = act_cost(effect, delay, ctx.res.jobs, ctx.clearing, ctx.horizon, ctx.res.spare_gpus, ctx.cfg)
    _, how = after_rates(effect, ctx.res.spare_gpus)
    when = {"immediate": "now", "after_checkpoint": f"after the next checkpoint (in {duration(delay)})",
            "after_timeout": f"in {duration(delay)} unless it clears (stopping rule)"}[mode]
    comeback = f" ({'; '.join(sorted(set(how)))})" if how else ""
    text = (f"{effect.label} {when}: {ctx.m(once)} once, then {ctx.m(after * 3600)}/h{comeback}"
            f" -> {ctx.m(total)} expected over {duration(ctx.horizon)}{why}")
    return Option(mode, delay, effect.scope, total, once, after * 3600.0, text)


def _resets(effect: Effect, horizon_s: float) -> list[float]:
    """When the restarted jobs' checkpoints complete within the horizon (the price drops there)."""
    out: list[float] = []
    for j in effect.jobs:
        t = j.to_checkpoint_s()
        while t is not None and t < horizon_s and len(out) < 10_000:
            out.append(t)
            t += j.interval / j.f
    return out


def _stopping(ctx: _Ctx, effect: Effect) -> tuple[float | None, str]:
    rent = sum(j.rate for j in effect.jobs)
    bare = Clearing(0.0, 1.0, 0.0)

    def price(t: float) -> float:
        _, once, after = act_cost(effect, t, effect.jobs, bare, ctx.horizon, ctx.res.spare_gpus, ctx.cfg)
        return once + after * (ctx.horizon - t)

    _, _, after = act_cost(effect, 0.0, effect.jobs, bare, ctx.horizon, ctx.res.spare_gpus, ctx.cfg)
    slope = sum(j.dollars_per_s * j.f for j in effect.jobs) - after
    wait = first_crossing(rent, ctx.lasted, price, slope, _resets(effect, ctx.horizon), ctx.horizon)
    line = (f"stopping rule: keep paying {ctx.m(rent * 3600)}/h while the sum since the onset "
            f"({ctx.m(rent * ctx.lasted)} so far) stays below the cost of acting ({ctx.m(price(0.0))} now)")
    if wait is None:
        return None, line + f"; they do not meet within {duration(ctx.horizon)}"
    return wait, line + (f"; they meet in {duration(wait)}, at {ctx.m(price(wait))}" if wait > 0 else "")


class _Best:
    """The options of one way of acting, the one it takes, and what the stopping rule said."""

    def __init__(self, best: Option, options: tuple[Option, ...], rule: str | None = None,
                 waits_out: bool = False) -> None:
        self.best, self.options, self.rule, self.waits_out = best, options, rule, waits_out


def _options(ctx: _Ctx, effect: Effect) -> _Best:
    if not effect.acts:
        stay = stay_cost(ctx.res.jobs, ctx.clearing, ctx.horizon, ctx.cfg)
        opt = Option("immediate", 0.0, "none", stay, 0.0, 0.0, f"{effect.label} -> {ctx.m(stay)} (as staying)")
        return _Best(opt, (opt,))
    opts = [_option(ctx, effect, "immediate", 0.0, "")]
    lead = max(effect.jobs, key=lambda j: j.dollars_per_s, default=None)
    ckpt = lead.to_checkpoint_s() if lead is not None else None
    if ckpt is not None and 0.0 < ckpt < ctx.horizon:
        opts.append(_option(ctx, effect, "after_checkpoint", ckpt, ""))
    cheapest = min(opts, key=lambda o: o.expected_cost)
    if not ctx.probs.may_clear:
        return _Best(cheapest, tuple(opts))
    wait, line = _stopping(ctx, effect)
    if wait is None:
        return _Best(cheapest, tuple(opts), line + " -> waits past the horizon", waits_out=True)
    if wait <= 0.0:
        return _Best(cheapest, tuple(opts), line + " -> reached: act")
    ski = _option(ctx, effect, "after_timeout", wait, "")
    return _Best(ski, (*opts, ski), line)


def _rank(ctx: _Ctx) -> tuple[list[RankedAction], list[str], set[tuple[str, str]]]:
    ranked: list[RankedAction] = []
    rule_lines: list[str] = []
    waits_out: set[tuple[str, str]] = set()
    esc = ctx.verdict.escalation
    unique = {(a.action, a.target): a for a in reversed(ctx.facts.allowed)}     # the first of duplicates
    for allowed in sorted(unique.values(), key=ctx.facts.allowed.index):
        got = [_options(ctx, e) for e in effects_of(allowed, ctx.facts, ctx.res, ctx.probs, ctx.verdict.points_at,
                                                    ctx.cfg)]
        best = min(got, key=lambda b: b.best.expected_cost)
        if best.rule:
            rule_lines.append(f"{allowed.action} {allowed.target}: {best.rule}")
        if best.waits_out:
            waits_out.add((allowed.action, allowed.target))
        escalated = esc is not None and allowed.action in esc.prefer
        ranked.append(RankedAction(allowed, best.best, tuple(o for b in got for o in b.options), escalated))
    prefer = esc.prefer if esc is not None else ()
    ranked.sort(key=lambda r: (not r.escalated, prefer.index(r.allowed.action) if r.escalated else 0,
                               round(r.expected_cost, 2), DISRUPTION.get(r.allowed.action, 9),
                               r.allowed.action, r.allowed.target))
    return ranked, rule_lines, waits_out


def _choose(ctx: _Ctx, ranked: list[RankedAction], stay: float, waits_out: set[tuple[str, str]]
            ) -> RankedAction | None:
    if ranked and ranked[0].escalated:
        return ranked[0]
    acting = [r for r in ranked if r.best.scope != "none"]
    if not acting:
        return None
    top = acting[0]
    if ctx.probs.may_clear:
        return None if (top.allowed.action, top.allowed.target) in waits_out else top
    return top if top.expected_cost < stay else None


def _lines(ctx: _Ctx, ranked: list[RankedAction], chosen: RankedAction | None, stay: float, rate: float,
           rule_lines: list[str]) -> list[str]:
    h = duration(ctx.horizon)
    out = [f"stay degraded: {ctx.m(rate * 3600)}/h, {ctx.m(stay)} expected over {h}"]
    out += [f"{i}. {r.allowed.action} {r.allowed.target}: {r.best.reasoning}" for i, r in enumerate(ranked, 1)]
    out += rule_lines
    esc = ctx.verdict.escalation
    if esc is not None:
        allowed = {a.action for a in ctx.facts.allowed}
        ok = [a for a in esc.prefer if a in allowed]
        out.append(f"escalation: {esc.reason}" + ("" if ok else
                   f"; the rule pack allows none of {', '.join(esc.prefer)} here: add one to the rule"))
    if chosen is None:
        out.append(f"chosen: stay degraded ({'no allowed action beats it' if ranked else 'no action allowed'})")
    else:
        out.append(f"chosen: {chosen.allowed.action} {chosen.allowed.target} ({chosen.best.mode}), "
                   f"saves {ctx.m(stay - chosen.expected_cost)} against staying over {h}")
    out += list(ctx.verdict.lines) + list(ctx.probs.lines)
    out += [f"assumed: {a}" for a in ctx.res.assumptions]
    return out


def decide(facts: IncidentFacts, config: DecisionConfig = DEFAULT_CONFIG) -> Decision:
    """The ranked, costed actions of one incident (module docstring)."""
    ctx = _Ctx(facts, config)
    stay = stay_cost(ctx.res.jobs, ctx.clearing, ctx.horizon, config)
    rate = sum(j.rate for j in ctx.res.jobs)
    ranked, rule_lines, waits_out = _rank(ctx)
    chosen = _choose(ctx, ranked, stay, waits_out)
    return Decision(facts.incident_id, facts.category, ctx.cur, ctx.horizon, stay, rate * 3600.0, tuple(ranked),
                    chosen, ctx.probs, ctx.verdict.escalation,
                    tuple(_lines(ctx, ranked, chosen, stay, rate, rule_lines)), ctx.res.assumptions)
