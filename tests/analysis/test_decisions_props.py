"""No gaps, no NaN: for any input combination every cost is finite, the ranking is total and holds
exactly the allowed actions, and the JSON is strict (no NaN / Infinity)."""

from __future__ import annotations

import json
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from suanli.analysis.decisions import (
    DEFAULT_PRIORS,
    AllowedAction,
    Capacity,
    IncidentFacts,
    JobFacts,
    Suspect,
    actions_json,
    decide,
    decision_json,
    savings,
)
from suanli.analysis.decisions.stopping import first_crossing
from suanli.store.history import History, IncidentRecord, RemediationRecord

ANY_NUMBER = st.one_of(
    st.none(), st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10**6),
    st.sampled_from([0.0, -1.0, 1e-300, 1e300, 2**63, 10**400]),
)
POSITIVE = st.one_of(st.none(), st.floats(1e-3, 1e5), st.floats(allow_nan=True, allow_infinity=True))
ACTIONS = ["mark_degraded", "retire_gpu", "drain_node", "reschedule_job", "open_ticket", "notify", "reset_gpu",
           "frobnicate"]
CATEGORIES = [*DEFAULT_PRIORS, "something_new"]
GPU = "node-001/gpu2"


@st.composite
def jobs(draw: st.DrawFn, job_id: str) -> JobFacts:
    return JobFacts(job_id, draw(ANY_NUMBER), draw(ANY_NUMBER), draw(POSITIVE), draw(POSITIVE), draw(st.booleans()),
                    draw(ANY_NUMBER), draw(ANY_NUMBER), draw(ANY_NUMBER), draw(st.one_of(st.none(), st.booleans())),
                    draw(ANY_NUMBER), draw(st.booleans()))


@st.composite
def histories(draw: st.DrawFn, now: float) -> History:
    n = draw(st.integers(0, 4))
    incs = tuple(IncidentRecord(f"h{i}", "gpu", draw(st.sampled_from([GPU, "node-002/gpu0"])),
                                draw(st.sampled_from(CATEGORIES)), now - draw(st.floats(0, 4e6)),
                                draw(st.one_of(st.none(), st.just(now - 10.0))),
                                draw(st.sampled_from([None, "xid:48", "xid:13"])), "node-001", ("j0",))
                 for i in range(n))
    rems = tuple(RemediationRecord("gpu", GPU, draw(st.sampled_from(["reset_gpu", "reboot_node", "reschedule_job"])),
                                   now - draw(st.floats(0, 4e6)), "node-001", draw(st.sampled_from([None, "h0", "h1"])))
                 for _ in range(draw(st.integers(0, 3))))
    return History(incs, rems)


@st.composite
def incidents(draw: st.DrawFn) -> IncidentFacts:
    now = 1.7e9
    n_jobs = draw(st.integers(0, 3))
    js = tuple(draw(jobs(f"j{i}")) for i in range(n_jobs))
    allowed = tuple(AllowedAction(a, draw(st.sampled_from([GPU, "node-001", "j0", "j1", "GPU-x"])))
                    for a in draw(st.lists(st.sampled_from(ACTIONS), max_size=6)))
    suspect = draw(st.sampled_from([Suspect(), Suspect(GPU, "GPU-x", ("p0",), ("node-001",), 8),
                                    Suspect(nodes=("node-001", "node-003"), node_gpus=None)]))
    cap = Capacity(draw(st.one_of(st.none(), st.integers(-5, 10**9))), draw(st.one_of(st.none(), st.integers(-1, 50))))
    onset = now - draw(st.floats(-1e4, 1e7))
    return IncidentFacts("inc-p", draw(st.sampled_from(CATEGORIES)), draw(st.sampled_from(["gpu", "job", "storage"])),
                         GPU, onset, now, allowed, js, suspect, cap, draw(st.sampled_from([None, "xid:48"])),
                         draw(st.booleans()), draw(st.sampled_from([None, "USD", "EUR", "XYZ"])),
                         draw(histories(now)))


def _finite(x: float) -> bool:
    return isinstance(x, float | int) and math.isfinite(x)


@settings(max_examples=300, deadline=None)
@given(incidents())
def test_every_input_gives_finite_costs_a_total_ranking_and_only_allowed_actions(f: IncidentFacts) -> None:
    d = decide(f)
    assert _finite(d.stay_cost) and d.stay_cost >= 0 and _finite(d.stay_rate_per_h)
    assert sorted((r.allowed.action, r.allowed.target) for r in d.ranked) == \
        sorted({(a.action, a.target) for a in f.allowed})
    for r in d.ranked:
        for o in r.options:
            assert _finite(o.expected_cost) and o.expected_cost >= 0
            assert _finite(o.one_time_cost) and _finite(o.rate_after_per_h) and _finite(o.delay_s)
            assert 0.0 <= o.delay_s <= d.horizon_s
    unescalated = [r.expected_cost for r in d.ranked if not r.escalated]
    assert unescalated == sorted(unescalated, key=lambda c: round(c, 2))
    assert d.chosen is None or d.chosen in d.ranked
    assert _finite(d.saving)
    p = d.probabilities
    assert all(0.0 <= x <= 1.0 for x in (p.clear, p.escalate, p.reset_fix, p.restart_fix))
    text = json.dumps({"actions": actions_json(d, f), "decision": decision_json(d)}, allow_nan=False)
    figures = " ".join(line for line in d.evidence if not line.startswith("assumed:"))   # those quote the input
    assert not re.search(r"\b(nan|inf|infinity)\b", figures, re.IGNORECASE), figures
    assert json.loads(text)["decision"]["horizon_s"] == d.horizon_s
    view = savings([d], d.currency)
    assert _finite(view.total_saving)


@given(st.floats(1e-6, 1e6), st.floats(0, 1e9), st.floats(0, 1e9))
def test_break_even_waiting_pays_at_most_twice_the_hindsight_optimum(rent: float, buy: float, lasts: float) -> None:
    # Constant price: the adversary picks how long the fault lasts. Online: rent until the sum reaches the
    # price, then buy. Hindsight: min(rent x lasts, buy).
    t = first_crossing(rent, 0.0, lambda _t: buy, 0.0, (), math.inf)
    assert t is not None and t == pytest.approx(buy / rent)
    online = rent * lasts if lasts <= t else rent * t + buy
    assert online <= 2 * min(rent * lasts, buy) * (1 + 1e-9) + 1e-9


@given(st.floats(0.01, 10.0), st.floats(1.0, 1e4), st.floats(0.0, 1e4), st.floats(10.0, 1e4), st.floats(0.0, 1.0),
       st.floats(0.0, 5e4))
def test_with_a_checkpoint_sawtooth_price_it_pays_at_most_2_pmax_over_pmin(
        rent: float, base: float, grow: float, period: float, phase: float, lasts: float) -> None:
    # P(t) = base + grow x (share of the checkpoint cycle done at t): it rises, then drops at each checkpoint.
    def price(t: float) -> float:
        return base + grow * math.fmod(phase + t / period, 1.0)

    resets = [period * (k + 1 - phase) for k in range(200)]
    horizon = 200 * period
    t = first_crossing(rent, 0.0, price, grow / period, resets, horizon)
    if t is None:                                                   # the sum never reached even the lowest price
        assert rent * horizon <= base + grow
        return
    assert rent * t >= price(t) * (1 - 1e-9) - 1e-9                 # it acts only once the sum reached the price
    online = rent * lasts if lasts <= t else rent * t + price(t)
    points = [0.0, lasts, *(r for r in resets if r <= lasts)]
    hindsight = min(rent * lasts, *(rent * x + price(x) for x in points))
    assert online <= 2 * (base + grow) / base * hindsight * (1 + 1e-9) + 1e-9
