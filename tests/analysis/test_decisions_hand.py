"""Decisions worked by hand on simulated stragglers: the ranking flips where the arithmetic says.

Every straggler below is simulated as a step timeline (healthy step b = 1.6 s, then one slow rank
stretches every step to d = 2.0 s, so the job runs at f = b/d = 0.8 of its pace) with a
checkpoint every K = 900 steps (I = 900 × 1.6 = 1,440 s of work between checkpoints) and a
restart that took R = 300 s (init span to first step). The engine reads those arrays through
suanli.analysis.decisions.facts, exactly as the pipeline does with the store's spans.

Clearing and escalation priors are set to nothing (Beta(0, 1)), so the costs are plain arithmetic.
With D = G·p/3600 (what one second of the whole job costs), requeue Q = 300 s, pod start 120 s,
horizon H = 14,400 s, and u = work since the checkpoint (steps since it × 1.6 s):

* stay degraded:                  (1 - f)·D·H              = 0.2·14,400·D = 2,880·D
* restart without the node now:   D·(u + R + Q)            = (u + 600)·D
* restart after the next checkpoint, w = (I - u)/f seconds away:
                                  (1 - f)·D·w + D·(R + Q)  = 0.25·(1,440 - u)·D + 600·D

now < after-checkpoint  <=>  u < (1 - f)·I = 0.2·1,440 = 288 s = 180 steps.
Both sides are multiples of D = G·p/3600, so job size and price never move this threshold.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from suanli.analysis.decisions import (
    AllowedAction,
    Capacity,
    CategoryPrior,
    DecisionConfig,
    IncidentFacts,
    JobFacts,
    Suspect,
    decide,
)
from suanli.analysis.decisions.facts import checkpoints, pace, restart_time

B, F, K, R = 1.6, 0.8, 900, 300.0
NOTHING = (0.0, 1.0)
CFG = DecisionConfig(priors={"gpu_straggler": CategoryPrior(NOTHING, 1800.0, NOTHING, NOTHING, NOTHING)})
H = CFG.horizon_s
GPU = "node-002/gpu3"


def _simulate(steps_since_ckpt: int, slow_steps: int = 120) -> tuple[np.ndarray, ...]:
    """A straggler's arrays: (step ends, step durations, checkpoint ends, init starts), and now.

    Two checkpoint cycles of healthy steps, then steps until ``steps_since_ckpt`` past the last
    save, the last ``slow_steps`` of them at the slow pace."""
    n = 2 * K + steps_since_ckpt
    dur = np.full(n, B)
    dur[n - slow_steps:] = B / F
    start0 = 10_000.0
    ends = start0 + R + np.cumsum(dur)
    saves = ends[[K - 1, 2 * K - 1]] + 1e-3            # a save right after steps K and 2K
    inits = np.array([start0])                        # the job's (re)start: init, load, first step 300 s later
    return ends, dur, saves, inits


def _facts(gpus: int, price: float, steps_since_ckpt: int, spare_gpus: int, elastic: bool = False,
           allowed: tuple[str, ...] = ("mark_degraded", "reschedule_job")) -> IncidentFacts:
    ends, dur, saves, inits = _simulate(steps_since_ckpt)
    now = float(ends[-1]) + 0.5
    onset = float(ends[-121])                         # the slow steps began after this one
    p = pace(ends, dur, onset, now)
    c = checkpoints(saves, ends, now, p.healthy_step_s)
    job = JobFacts("llama", gpus, price, p.healthy_step_s, p.current_step_s, p.stalled,
                   c.progress_since_checkpoint_s, c.checkpoint_interval_s, restart_time(inits, ends - dur),
                   elastic, gpus_on_suspect=8)
    targets = {"mark_degraded": GPU, "reschedule_job": "llama", "drain_node": "node-002"}
    return IncidentFacts("inc-x", "gpu_straggler", "gpu", GPU, onset, now,
                         tuple(AllowedAction(a, targets[a]) for a in allowed), (job,),
                         Suspect(GPU, "GPU-0f3a", ("llama-worker-1",), ("node-002",), 8),
                         Capacity(spare_gpus=spare_gpus), currency="USD")


def _cost(d, action: str) -> float:
    return next(r.expected_cost for r in d.ranked if r.allowed.action == action)


def test_the_simulated_facts_are_what_the_timeline_holds() -> None:
    f = _facts(16, 2.5, 30, 8)
    job = f.jobs[0]
    assert job.healthy_step_s == pytest.approx(1.6)
    assert job.current_step_s == pytest.approx(2.0)
    assert job.progress_since_checkpoint_s == pytest.approx(30 * 1.6)
    assert job.checkpoint_interval_s == pytest.approx(900 * 1.6)
    assert job.restart_s == pytest.approx(300.0)


def test_16_gpu_job_a_minute_after_its_checkpoint_restarts_now() -> None:
    # A minute after the checkpoint = 30 slow steps of 2 s: u = 30 x 1.6 = 48 s of work.
    # D = 16 x 2.50 / 3600 = 0.011111 $/s.
    # now:   (48 + 600) D = 648 D = $7.20;  after: 0.25 x 1,392 D + 600 D = 948 D = $10.53;  stay: 2,880 D = $32.00
    d = decide(_facts(16, 2.5, 30, spare_gpus=8), CFG)
    D = 16 * 2.5 / 3600
    assert d.stay_cost == pytest.approx(2880 * D, rel=1e-6)
    assert d.chosen is not None and d.chosen.allowed.action == "reschedule_job"
    assert d.chosen.best.mode == "immediate"
    assert d.chosen.expected_cost == pytest.approx(648 * D, rel=1e-6)
    after = next(o for o in d.chosen.options if o.mode == "after_checkpoint")
    assert after.expected_cost == pytest.approx(948 * D, rel=1e-6)
    assert after.delay_s == pytest.approx((1440 - 48) / 0.8)
    assert d.saving == pytest.approx((2880 - 648) * D, rel=1e-6)
    assert [r.allowed.action for r in d.ranked] == ["reschedule_job", "mark_degraded"]
    assert "$32.00 expected over 4 h" in d.evidence[0]


def test_4096_gpu_job_two_seconds_before_its_checkpoint_waits_for_it() -> None:
    # 899 steps since the checkpoint: u = 1,438.4 s; the next save is one 2 s step away.
    # now:   (1,438.4 + 600) D = 2,038.4 D;  after: 0.2 x 2 D + 600 D = 600.4 D;  stay 2,880 D.
    # D = 4096 x 2.50 / 3600 = 2.8444 $/s: after = $1,707.80, now = $5,798.12.
    d = decide(_facts(4096, 2.5, 899, spare_gpus=8), CFG)
    D = 4096 * 2.5 / 3600
    assert d.chosen is not None and d.chosen.best.mode == "after_checkpoint"
    assert d.chosen.best.delay_s == pytest.approx(2.0)
    assert d.chosen.expected_cost == pytest.approx(600.4 * D, rel=1e-6)
    now = next(o for o in d.chosen.options if o.mode == "immediate")
    assert now.expected_cost == pytest.approx(2038.4 * D, rel=1e-6)


@pytest.mark.parametrize("gpus", [16, 256, 4096])
@pytest.mark.parametrize("price", [1.2, 2.5, 9.0])
def test_now_or_after_checkpoint_flips_at_180_steps_whatever_the_size_and_price(gpus: int, price: float) -> None:
    # u* = (1 - f) I = 288 s = 180 steps.  At 179 steps (u = 286.4): now 886.4 D, after 0.25 x 1,153.6 + 600
    # = 888.4 D -> now.  At 181 (u = 289.6): now 889.6 D, after 887.6 D -> after the checkpoint.
    D = gpus * price / 3600
    before, past = decide(_facts(gpus, price, 179, 8), CFG), decide(_facts(gpus, price, 181, 8), CFG)
    assert before.chosen is not None and before.chosen.best.mode == "immediate"
    assert before.chosen.expected_cost == pytest.approx(886.4 * D, rel=1e-6)
    assert past.chosen is not None and past.chosen.best.mode == "after_checkpoint"
    assert past.chosen.expected_cost == pytest.approx(887.6 * D, rel=1e-6)


def test_no_spare_and_a_fixed_world_size_stays_degraded() -> None:
    # Without the node the job cannot run (not elastic, no spare): it stalls for the rest of the horizon.
    # now: 648 D + D x 14,400 = 15,048 D  >  stay 2,880 D.  After the checkpoint: 348 D... + 600 D + 12,660 D.
    d = decide(_facts(16, 2.5, 30, spare_gpus=0), CFG)
    D = 16 * 2.5 / 3600
    assert d.chosen is None
    assert _cost(d, "reschedule_job") == pytest.approx((348 + 600 + (14400 - 1740)) * D, rel=1e-6)
    assert d.saving == 0.0
    assert any("stalls" in line for line in d.evidence)


@pytest.mark.parametrize(("gpus", "restarts"), [(48, False), (64, True)])
def test_an_elastic_job_without_spare_shrinks_only_when_big_enough(gpus: int, restarts: bool) -> None:
    # Shrinking by the node's 8 GPUs costs 8 p/3600 per second for the horizon: restart now costs
    # G(u + 600) + 8H, stay costs 0.2 G H (both x p/3600).  Restart wins iff G > 8H / (0.2H - 648)
    # = 115,200 / 2,232 = 51.6 GPUs.  48 GPUs: 146,304 vs stay 138,240 -> stay; 64: 156,672 vs 184,320.
    d = decide(_facts(gpus, 3.0, 30, spare_gpus=0, elastic=True), CFG)
    p = 3.0 / 3600
    assert _cost(d, "reschedule_job") == pytest.approx((gpus * 648 + 8 * 14400) * p, rel=1e-6)
    assert d.stay_cost == pytest.approx(gpus * 2880 * p, rel=1e-6)
    assert (d.chosen is not None) is restarts


def test_a_fault_on_one_gpu_drains_only_its_pods() -> None:
    # Per-GPU drain: (48 + 300 + 120) D = 468 D with one spare GPU.  Whole node: (48 + 600) D plus its 7 healthy
    # GPUs idle for the horizon, 7 x 2.5/3600 x 14,400 = $70 -> the per-GPU drain, by UUID.
    d = decide(_facts(16, 2.5, 30, spare_gpus=8, allowed=("mark_degraded", "reschedule_job", "drain_node")), CFG)
    D = 16 * 2.5 / 3600
    assert d.chosen is not None and d.chosen.allowed.action == "drain_node"
    assert d.chosen.best.scope == "gpu"
    assert d.chosen.expected_cost == pytest.approx(468 * D, rel=1e-6)
    node = next(o for o in d.chosen.options if o.scope == "node" and o.mode == "immediate")
    assert node.expected_cost == pytest.approx(648 * D + 7 * 2.5 / 3600 * 14400, rel=1e-6)


def test_a_fault_that_may_clear_waits_until_the_degraded_sum_reaches_the_cost_of_acting() -> None:
    # Thermal episode, P(clears) prior 0.5 >= 0.2: the stopping rule.  f = 0.8, u = 48 now, restart + requeue 600.
    # Staying costs r = 0.2 D per second; acting at t costs P(t) = (u(t) + 600) D, where the work since the
    # checkpoint grows 0.8 per second and drops to 0 at each checkpoint: at t = (1,440 - 48)/0.8 = 1,740 s and
    # every 1,440/0.8 = 1,800 s after.  The onset was 120 slow steps of 2 s and half a second ago: e = 240.5 s.
    # The rule acts at the first t with 0.2 (e + t) >= P(t)/D:
    #   [0, 1,740):     0.2 x 240.5 = 48.1 < 648 and P grows faster (0.8) than the sum (0.2): no.
    #   [1,740, 3,540): 0.2 x 1,980.5 = 396.1 < 600 at the drop, and falls behind again: no.
    #   3,540:          0.2 x 3,780.5 = 756.1 >= 600 right after the second checkpoint: act then.
    thermal = CategoryPrior((1.0, 1.0), 900.0, NOTHING, NOTHING, NOTHING)
    cfg = DecisionConfig(priors={"gpu_thermal": thermal})
    f = _facts(16, 2.5, 30, spare_gpus=8)
    f = IncidentFacts(f.incident_id, "gpu_thermal", f.root_kind, f.root_id, f.onset_s, f.now_s, f.allowed,
                      f.jobs, f.suspect, f.capacity, currency="USD")
    d = decide(f, cfg)
    assert d.probabilities.may_clear
    assert d.chosen is not None and d.chosen.best.mode == "after_timeout"
    assert d.chosen.best.delay_s == pytest.approx(3540.0, rel=1e-6)
    # Its expected cost, from the docs' formula: q = P(clears | lasted 240.5 s) = 0.5 e^(-240.5/900) / (that + 0.5),
    # t = 3,540: 0.2 D M(t) + S(t) x 600 D, M(t) = q 900 (1 - e^(-t/900)) + (1 - q) t, S(t) = q e^(-t/900) + 1 - q.
    # q = 0.4336, M = 2,387.7, S = 0.5749: 0.2 x 2,387.7 + 0.5749 x 600 = 822.5 D = $9.14.
    D = 16 * 2.5 / 3600
    k = 0.5 * math.exp(-240.5 / 900)
    q = k / (k + 0.5)
    t = 3540.0
    m = q * 900 * (1 - math.exp(-t / 900)) + (1 - q) * t
    s = q * math.exp(-t / 900) + 1 - q
    assert d.chosen.expected_cost == pytest.approx(0.2 * D * m + s * 600 * D, rel=1e-6)
    assert d.chosen.expected_cost == pytest.approx(9.14, abs=0.01)
    # An episode that has already lasted 3,500 s: 0.2 x 3,500 = 700 >= 648 -> act now.
    late = IncidentFacts(f.incident_id, f.category, f.root_kind, f.root_id, f.now_s - 3500, f.now_s, f.allowed,
                         f.jobs, f.suspect, f.capacity, currency="USD")
    d2 = decide(late, cfg)
    assert d2.chosen is not None and d2.chosen.best.mode in ("immediate", "after_checkpoint")
    assert any("reached: act" in line for line in d2.evidence)


def test_a_stalled_job_pays_no_option_for_work_it_has_already_lost() -> None:
    # A GPU fell off the bus: the job stopped, the 500 s of work since its checkpoint are gone whatever is done.
    # stay: the whole job idles, D x 14,400;  restart without the node: D x (R + Q) = 600 D (no work to redo).
    lost = CategoryPrior(NOTHING, 3600.0, NOTHING, NOTHING, NOTHING)
    job = JobFacts("llama", 16, 2.5, 1.6, None, True, 500.0, 1440.0, 300.0, False, 8)
    f = IncidentFacts("inc-l", "gpu_lost", "gpu", GPU, 1e9, 1e9 + 120, (AllowedAction("reschedule_job", "llama"),),
                      (job,), Suspect(GPU, None, (), ("node-002",), 8), Capacity(spare_gpus=8), currency="USD")
    d = decide(f, DecisionConfig(priors={"gpu_lost": lost}))
    D = 16 * 2.5 / 3600
    assert d.stay_cost == pytest.approx(14400 * D, rel=1e-6)
    assert d.chosen is not None and d.chosen.expected_cost == pytest.approx(600 * D, rel=1e-6)
    assert [o.mode for o in d.chosen.options] == ["immediate"]        # no checkpoint is coming


@pytest.mark.parametrize(("fix", "wins"), [((3.0, 1.0), "drain_node"), ((1.0, 0.0), "reset_gpu")])
def test_a_gpu_reset_wins_only_when_it_is_likely_to_fix_the_fault(fix: tuple[float, float], wins: str) -> None:
    # Reset in place: D (48 + 300 + 60) = 408 D now, and with P(fixes) = φ the slowness stays with 1 - φ for the
    # horizon: + (1 - φ) 0.2 D 14,400.  Per-GPU drain onto a spare: D (48 + 300 + 120) = 468 D.
    # φ = 3/4: 408 + 720 = 1,128 D > 468 D -> drain.  φ = 1 (Beta(1, 0)): 408 D < 468 D -> reset.
    cfg = DecisionConfig(priors={"gpu_straggler": CategoryPrior(NOTHING, 1800.0, NOTHING, fix, NOTHING)})
    f = _facts(16, 2.5, 30, 8, allowed=("drain_node",))
    f = IncidentFacts(f.incident_id, f.category, f.root_kind, f.root_id, f.onset_s, f.now_s,
                      (*f.allowed, AllowedAction("reset_gpu", GPU)), f.jobs, f.suspect, f.capacity, currency="USD")
    d = decide(f, cfg)
    D = 16 * 2.5 / 3600
    phi = fix[0] / (fix[0] + fix[1])
    reset = next(r for r in d.ranked if r.allowed.action == "reset_gpu")
    assert reset.expected_cost == pytest.approx((408 + (1 - phi) * 0.2 * 14400) * D, rel=1e-6)
    assert d.chosen is not None and d.chosen.allowed.action == wins


@pytest.mark.parametrize(("pod_gpus", "stalls"), [(1, False), (8, True)])
def test_a_per_gpu_drain_moves_the_whole_pod_that_holds_the_gpu(pod_gpus: int, stalls: bool) -> None:
    # Four spare GPUs. A pod per GPU: one moves, (48 + 300 + 120) D = 468 D. One pod holding all 8 GPUs of the
    # node: 8 must move, only 4 are free, the fixed-size job stalls for the horizon: 468 D + 14,400 D.
    f = _facts(16, 2.5, 30, spare_gpus=4, allowed=("drain_node",))
    f = dataclasses.replace(f, jobs=(dataclasses.replace(f.jobs[0], gpus_in_suspect_pods=pod_gpus),))
    d = decide(f, CFG)
    D = 16 * 2.5 / 3600
    gpu = next(o for o in d.ranked[0].options if o.scope == "gpu" and o.mode == "immediate")
    assert gpu.expected_cost == pytest.approx((468 + (14400 if stalls else 0)) * D, rel=1e-6)
    assert (d.chosen is None) is stalls
