"""Mutation testing (cosmic-ray) of the modules that compute answers; ``make mutate`` runs it.

    .venv/bin/python bench/mutation/mutate.py                 # every module below (hours on 2 cores)
    .venv/bin/python bench/mutation/mutate.py intervals xid   # only those
    .venv/bin/python bench/mutation/mutate.py --report        # rewrite the results from the sessions

Each module is mutated in a scratch copy of the repository's sources, tests and docs
(``$TMPDIR/suanli-mutate/wt``, or ``$SUANLI_MUTATE_DIR/wt``, with ``../shared`` linked beside
it), so the work tree is never touched and other work can go on. The tests that run per mutant
are the module's own (``MODULES``), with ``-x``: the first failure kills the mutant. A mutant
whose tests time out counts as killed (cosmic-ray's convention). Sessions are kept in
``bench/mutation/sessions/<module>.sqlite`` (git-ignored, but for the sessions of goodput and
degradation, committed with ``git add -f`` so that ``--report`` and ``--retest`` work on any machine;
a session holds source positions, so a changed module needs a fresh one: delete its file), so an
interrupted run goes on where it stopped; ``--retest`` runs a session's unexplained survivors again
after tests were added. Never ``git stash`` while a session runs: a committed session file is
tracked, and the stash rewrites it under cosmic-ray. The
scores, the survivors and their explanation (``EXPLAINED``) are written to
``bench/results/mutation.md`` and gathered into ``bench/RESULTS.md``.

The operator set is the classic one (arithmetic and comparison swaps, boundaries, negation,
boolean and/or, True/False, numbers +-1, break/continue, zero-iteration loops), not cosmic-ray's
full cross product of every binary operator with every other one (mostly bit shifts on floats).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SESSIONS = HERE / "sessions"
RESULT_MD = ROOT / "bench" / "results" / "mutation.md"


@dataclass(frozen=True)
class Module:
    path: str
    tests: tuple[str, ...]
    timeout_s: float = 300.0


MODULES: dict[str, Module] = {
    "intervals": Module("src/suanli/analysis/ledger/intervals.py",
                        ("tests/analysis/ledger/test_catch_ledger.py", "tests/analysis/ledger/test_props.py",
                         "tests/analysis/ledger/test_goodput.py")),
    "profile_intervals": Module("src/suanli/analysis/profile/intervals.py",
                                ("tests/analysis/ledger/test_catch_ledger.py", "tests/analysis/ledger/test_props.py",
                                 "tests/analysis/test_profile_hand.py", "tests/analysis/test_profile_props.py")),
    "counters": Module("src/suanli/store/counters.py",
                       ("tests/store/test_counter_props.py", "tests/rules/test_series_math.py")),
    "xid": Module("src/suanli/ingest/xid.py", ("tests/ingest/test_xid.py", "tests/ingest/test_catch_xid.py")),
    "changepoint": Module("src/suanli/analysis/changepoint.py",
                          ("tests/analysis/test_catch_changepoint.py", "tests/analysis/test_changepoint.py")),
    "inhibit": Module("src/suanli/incidents/inhibit.py",
                      ("tests/incidents/test_inhibit.py", "tests/incidents/test_inhibit_props.py")),
    "correlate": Module("src/suanli/incidents/correlate.py",
                        ("tests/incidents/test_catch_roots.py", "tests/incidents/test_correlate.py")),
    "goodput": Module("src/suanli/analysis/ledger/goodput.py",
                      ("tests/analysis/ledger/test_catch_ledger.py", "tests/analysis/ledger/test_goodput.py",
                       "tests/analysis/ledger/test_props.py")),
    "ledger_job": Module("src/suanli/analysis/ledger/job.py",
                         ("tests/analysis/ledger/test_catch_ledger.py", "tests/analysis/ledger/test_props.py",
                          "tests/analysis/ledger/test_ledger.py")),
    "hw_events": Module("src/suanli/analysis/health/events.py",
                        ("tests/ingest/test_catch_xid.py", "tests/store/test_counter_props.py",
                         "tests/analysis/health/test_hw_events.py",
                         "tests/analysis/health/test_xid_evidence_realdata.py")),
    "log_classify": Module("src/suanli/ingest/log_classify.py",
                           ("tests/ingest/test_catch_xid.py", "tests/ingest/test_logs.py",
                            "tests/ingest/test_logs_realdata.py")),
    "degradation": Module("src/suanli/analysis/health/degradation.py",
                          ("tests/analysis/health/test_catch_nhpp.py", "tests/analysis/health/test_degradation.py"),
                          timeout_s=300.0),
}

KEEP = (
    r"ReplaceBinaryOperator_(Add_Sub|Sub_Add|Mul_Div|Div_Mul|FloorDiv_Div|Pow_Mul|BitOr_BitAnd|BitAnd_BitOr)",
    r"ReplaceComparisonOperator_(Lt_LtE|LtE_Lt|Gt_GtE|GtE_Gt|Eq_NotEq|NotEq_Eq|Lt_Gt|Gt_Lt|LtE_GtE|GtE_LtE"
    r"|Is_IsNot|IsNot_Is|In_NotIn|NotIn_In)",
    r"ReplaceUnaryOperator_(USub_UAdd|Delete_USub|Delete_Not|Delete_Invert)",
    r"AddNot", r"ReplaceTrueWithFalse", r"ReplaceFalseWithTrue", r"ReplaceAndWithOr", r"ReplaceOrWithAnd",
    r"ReplaceBreakWithContinue", r"ReplaceContinueWithBreak", r"NumberReplacer", r"ZeroIterationForLoop",
)
EXCLUDE = "core/(?!(" + "|".join(KEEP) + ")$).*"

#: Survivors examined and found equivalent (no input tells them apart), or out of reach of a
#: test for a stated reason: (module, operator, the mutated source line stripped) -> why. Where
#: one line has several mutants of an operator and only some are equivalent, the key's line is
#: ``"source -> mutant"`` (both stripped), matched before the plain source line.
_UNIT_DEFAULT = "equivalent: `_UNITS.get`'s default is never used: the regex only lets units of `_UNITS` through"
_ONSET_AFTER_BASELINE = ("equivalent: a found onset is at or after the CUSUM's start, after the baseline (>= 1 sample; "
                         "an empty baseline makes every z NaN and never alarms), so ")
_PRESORTED = ("equivalent: the rows were sorted by (row, start) just above (`np.lexsort`), so sorting "
              "them again changes nothing")
_SAME_RANK = ("equivalent: `ok` already has `nxt < n`, so `np.minimum(nxt, n - 1)` is `nxt` (`n`, `n + 1` "
              "change nothing); with `n - 2` only `nxt = n - 1` changes, to a comparison that always holds, "
              "and it differs only where row n - 1 starts a rank, whose `has_restart` is never read")
ANNOTATION = "equivalent: a type annotation, never evaluated (`from __future__ import annotations`)"
_CAP_NEVER_BINDS = ("equivalent: a GPU's weights sum to 1 (to rounding) and the tail is at most 0.1, so fewer than "
                    "all K cumulative weights lie below `tail` or `1 - tail`: the index is at most K - 1 and a cap "
                    "of K - 1, K or K + 1 never binds (K - 2 does: test_a_draw_holding_most_of_the_weight_is_"
                    "both_ends_of_the_interval)")
_MODE_TEST = ("test_the_mode_is_the_optimum_an_independent_optimiser_finds holds the modes to 1e-4 of scipy's "
              "best of 36 starts")
_TIE_SLACK = ("tolerated: the 1e-10-nat slack of the step test (a tie either way, or a tie counted as worse); it "
              "decides whether a last step below the tolerance is taken, not the mode. " + _MODE_TEST)
_LONGER_BUDGET = ("tolerated: a GPU kept iterating longer (never counted as converged, or one iteration more or "
                  "fewer): 100 iterations at tolerance 1e-9 move no mode by more than 1e-6 (test_the_mode_is_the_"
                  "optimum_an_independent_optimiser_finds), and on the 40-GPU fleet 24, 26 iterations or a "
                  "negative tolerance change no result")
_ANCHORED_ONCE = ("equivalent: `_DEV_PREFIX` is anchored at `^` (no MULTILINE), so it can match once per line "
                  "whatever the count")
EXPLAINED: dict[tuple[str, str, str], str] = {
    ("counters", "NumberReplacer", "if len(ts) < 2:"):
        "equivalent: with one sample `np.diff` is empty, so the early return and the general path "
        "give the same two empty arrays",
    ("inhibit", "ReplaceTrueWithFalse", "@dataclass(frozen=True)"):
        "equivalent: the private `_View` is built once per signal and never assigned to nor hashed, "
        "so frozen or not it behaves the same",
    ("inhibit", "ReplaceOrWithAnd", "if not views or not rules:"):
        "equivalent: a shortcut; with no views or no rules `apply_inhibitions` mutes nothing and the "
        "general path returns the same signals in the same order",
    ("profile_intervals", "ReplaceOrWithAnd", "if len(sa) == 0 or len(sb) == 0:"):
        "equivalent: a shortcut; with one side empty the boundary sweep never reaches depth 2, so the "
        "general path gives 0.0 as well",
    ("profile_intervals", "NumberReplacer",
     "if len(sa) == 0 or len(sb) == 0: -> if len(sa) == -1 or len(sb) == 0:"):
        "equivalent: `len(..) == -1` never holds, and the general path gives 0.0 for an empty side",
    ("profile_intervals", "NumberReplacer",
     "if len(sa) == 0 or len(sb) == 0: -> if len(sa) == 0 or len(sb) == -1:"):
        "equivalent: `len(..) == -1` never holds, and the general path gives 0.0 for an empty side",
    ("intervals", "ReplaceUnaryOperator_Delete_USub", "prev_end[0] = -np.inf"):
        "equivalent: row 0 always starts a group (`new_group[0]` is True), so its `prev_end` is never read",
    ("intervals", "NumberReplacer", "span = float(e.max() - lo) + 1.0"):
        "equivalent: the margin; with `+ 0.0` (or `+ 2.0`) the span is still >= every `e - lo`, and "
        "`e - lo > 0`, so a later group's first shifted end already exceeds every earlier one (the "
        "`- 1.0` mutant is killed by test_a_short_group_after_a_long_one_is_merged_on_its_own)",
    ("intervals", "NumberReplacer", "shift = (g - g[0]).astype(np.float64) * span"):
        "equivalent: `g[-1]` only adds the same constant to every shifted value, which the running "
        "max carries and the `- shift` takes off again (`g[1]` is killed: one interval)",
    ("intervals", "ReplaceBinaryOperator_Sub_Add", "shift = (g - g[0]).astype(np.float64) * span"):
        "equivalent: `g + g[0]` still grows by `span` per group, only offset by a constant that the "
        "running max carries and `- shift` takes off again",
    ("intervals", "ReplaceUnaryOperator_USub_UAdd",
     "neg = prefix_max_before(group[::-1].max() - group[::-1] if len(group) else group, -values[::-1])"):
        "equivalent: the first `group[::-1]` only feeds `.max()`, which does not depend on the order",
    ("intervals", "ReplaceUnaryOperator_Delete_USub",
     "neg = prefix_max_before(group[::-1].max() - group[::-1] if len(group) else group, -values[::-1])"):
        "equivalent: the first `group[::-1]` only feeds `.max()`, which does not depend on the order",
    ("log_classify", "NumberReplacer", 'body = _DEV_PREFIX.sub("", line.strip(), count=1) -> '
     'body = _DEV_PREFIX.sub("", line.strip(), count= 0)'):
        _ANCHORED_ONCE,
    ("log_classify", "NumberReplacer", 'body = _DEV_PREFIX.sub("", line.strip(), count=1) -> '
     'body = _DEV_PREFIX.sub("", line.strip(), count= 2)'):
        _ANCHORED_ONCE,
    ("changepoint", "NumberReplacer", "a, o = _cusum_one(z2[0].tolist(), config)"):
        "equivalent: on this branch there is one row, so `z2[-1]` is `z2[0]`",
    ("changepoint", "NumberReplacer", "i_on, i_al = begin + int(onset[0]), begin + int(alarm[0])"):
        "equivalent: `cusum_alarms` of one row returns one-element arrays, so `[-1]` is `[0]`",
    ("ledger_job", "NumberReplacer",
     'world = max(job.world_size // max(int(job.parallelism.get("dp", 1)), 1), 1) -> '
     'world = max(job.world_size // max(int(job.parallelism.get("dp", 1)), 0), 1)'):
        "equivalent: the inventory reader rejects dp < 1 (`minimum=1`), so `max(dp, 0)` is dp",
    ("ledger_job", "NumberReplacer",
     'world = max(job.world_size // max(int(job.parallelism.get("dp", 1)), 1), 1) -> '
     'world = max(job.world_size // max(int(job.parallelism.get("dp", 1)), 1), 0)'):
        "equivalent: world_size // dp >= 1 (world_size is a product of dimensions, dp among them)",
    ("ledger_job", "NumberReplacer",
     'world = max(job.world_size // max(int(job.parallelism.get("dp", 1)), 1), 1) -> '
     'world = max(job.world_size // max(int(job.parallelism.get("dp", 0)), 1), 1)'):
        "equivalent: the inventory reader gives every job every dimension (1 when not stated), so "
        "`.get`'s default is never used",
    ("ledger_job", "NumberReplacer",
     'world = max(job.world_size // max(int(job.parallelism.get("dp", 1)), 1), 1) -> '
     'world = max(job.world_size // max(int(job.parallelism.get("dp", 2)), 1), 1)'):
        "equivalent: the inventory reader gives every job every dimension (1 when not stated), so "
        "`.get`'s default is never used",
    ("ledger_job", "NumberReplacer",
     "goodput=sum(shares.get(c, 0.0) for c in PRODUCTIVE), tokens=float(np.nansum(tokens)), cost=cost,"):
        "equivalent: `split.shares()` has every category (the split's `gpu_s` always does), so the "
        "default is never used",
    ("ledger_job", "NumberReplacer",
     "per_step = float(np.nanmedian(tokens)) if np.isfinite(tokens).any() else 0.0"):
        "equivalent: with no finite token count the window's rate is 0 and `forecast_finish` returns "
        "None whatever `done` is",
    ("ledger_job", "NumberReplacer",
     "return {k: sum(shares.get(c, 0.0) for c in cats) for k, cats in SPEC_SPLIT.items()}"):
        "equivalent: `split.shares()` has every category (the split's `gpu_s` always does), so the "
        "default is never used",
    ("ledger_job", "NumberReplacer", "downtime = fail_s / max(split.n_ranks, 1) / n_int if n_int else None -> "
     "downtime = fail_s / max(split.n_ranks, 0) / n_int if n_int else None"):
        "equivalent: a forecast needs steps, so n_ranks >= 1 and `max(n_ranks, 0)` is n_ranks",
    ("ledger_job", "ReplaceBinaryOperator_FloorDiv_Div",
     'world = max(job.world_size // max(int(job.parallelism.get("dp", 1)), 1), 1)'):
        "equivalent: `Job.world_size` is the product of the parallelism dimensions, dp among them, so "
        "the division is exact and `/` gives the same number as `//`",
    ("correlate", "NumberReplacer", "min_seed_confidence: float = 0.0 -> min_seed_confidence: float = -1.0"):
        "equivalent: confidences lie in [0, 1], so a floor of 0 or -1 lets every finding seed",
    ("hw_events", "ReplaceComparisonOperator_GtE_Gt", "if n >= max_events:"):
        "equivalent: once n = max_events every later `k = min(k, max_events - n)` is 0 and adds an empty "
        "array, so going on gives the same times",
    ("hw_events", "ReplaceBreakWithContinue", "break"):
        "equivalent: once n = max_events every later `k = min(k, max_events - n)` is 0 and adds an empty "
        "array, so going on gives the same times",
    ("hw_events", "ReplaceComparisonOperator_Lt_LtE", "if not np.isfinite(mask) or mask < 0:"):
        "equivalent: a mask of 0 has no bit set, so returning [] early or after the loop is the same",
    ("hw_events", "NumberReplacer", "if not np.isfinite(mask) or mask < 0:"):
        "equivalent: masks in [0, 1) have no bit set (`int(mask)` is 0), so returning [] early or "
        "after the loop is the same",
    ("hw_events", "NumberReplacer", "if not text.strip().isdecimal() or ok.size == 0: -> "
     "if not text.strip().isdecimal() or ok.size == -1:"):
        "equivalent: with no valid sample the general path broadcasts to empty arrays and returns [] as well",
    ("hw_events", "ReplaceComparisonOperator_LtE_Lt", "if k <= 0:"):
        "equivalent: increments are never negative (a reset counts the new value), and k = 0 adds "
        "`np.arange(0)`, an empty array, with n unchanged",
    ("hw_events", "NumberReplacer", "if k <= 0: -> if k <= -1:"):
        "equivalent: increments are never negative, and k = 0 adds an empty array with n unchanged",
    ("hw_events", "NumberReplacer", "for j in range(1, ok.size):"):
        "equivalent: at j = 0 the first valid sample's increment is 0 by construction, so `k <= 0` "
        "skips it before `ok[j - 1]` is read",
    ("hw_events", "NumberReplacer", "rise = np.where((v[ok] > 0) & (prev <= 0), 1.0, 0.0) -> "
     "rise = np.where((v[ok] > 0) & (prev <= 0), 1.0, -1.0)"):
        "equivalent: only rises `r > 0` become events, so 0 and -1 both drop",
    ("hw_events", "ReplaceTrueWithFalse",
     "return [_dcgm_xid(float(ts[i]), gpu_id, code, float(r)) for i, r in zip(ok, rise, strict=True) if r > 0]"):
        "equivalent: `rise` is built from `v[ok]`, so both sides have the same length and `strict` never fires",
    ("log_classify", "NumberReplacer",
     'return bounded_int(float(round(bounded_float(number, "size", 0, 1e21) * _UNITS.get(unit, 1))), "bytes", 0) -> '
     'return bounded_int(float(round(bounded_float(number, "size", 0, 1e+21) * _UNITS.get(unit, 1))), "bytes", 0)'):
        "equivalent: `1e21 +- 1` is the float 1e21 (the same number)",
    ("log_classify", "NumberReplacer",
     'return bounded_int(float(round(bounded_float(number, "size", 0, 1e21) * _UNITS.get(unit, 1))), "bytes", 0) -> '
     'return bounded_int(float(round(bounded_float(number, "size", 0, 1e21) * _UNITS.get(unit, 0))), "bytes", 0)'):
        _UNIT_DEFAULT,
    ("log_classify", "NumberReplacer",
     'return bounded_int(float(round(bounded_float(number, "size", 0, 1e21) * _UNITS.get(unit, 1))), "bytes", 0) -> '
     'return bounded_int(float(round(bounded_float(number, "size", 0, 1e21) * _UNITS.get(unit, 2))), "bytes", 0)'):
        _UNIT_DEFAULT,
    ("changepoint", "NumberReplacer", "min_sigma: float = 0.0 -> min_sigma: float = -1.0"):
        "equivalent: sigma is also at least 1e-300 > 0, so any floor <= 0 is no floor",
    ("changepoint", "NumberReplacer", "if alarm[0] < 0: -> if alarm[ -1] < 0:"):
        "equivalent: one row, a one-element array: `alarm[-1]` is `alarm[0]`",
    ("changepoint", "NumberReplacer", "return -1"):
        "equivalent: `_onset`'s caller only asks `i_found >= 0`, so -2 reads as -1",
    ("changepoint", "ReplaceComparisonOperator_GtE_Gt", "if i_found >= 0:"):
        _ONSET_AFTER_BASELINE + "`> 0` and `>= 0` agree",
    ("changepoint", "NumberReplacer", "if i_found >= 0:"):
        _ONSET_AFTER_BASELINE + "`>= 1` and `>= 0` agree",
    ("intervals", "ReplaceUnaryOperator_USub_UAdd", "prev_end[0] = -np.inf"):
        "equivalent: row 0 always starts a group (`new_group[0]` is True), so its `prev_end` is never read",
    ("intervals", "NumberReplacer", "prev_end[0] = -np.inf"):
        "equivalent: `prev_end[1]`/`[-1]` is overwritten by `prev_end[1:] = ...` (or is row 0 itself), "
        "and row 0 always starts a group, so its `prev_end` is never read",
    ("intervals", "NumberReplacer", "lo = float(min(s.min(), 0.0))"):
        "equivalent: any `lo <= min(start)` keeps every `e - lo > 0` and `span > e - lo`, all the "
        "shift needs; the 0.0 only keeps the shifted values near zero",
    ("intervals", "NumberReplacer", "lo = int(values.min()) if len(values) else 0"):
        "equivalent: the `else` value is used only for empty arrays, whose result is empty",
    ("intervals", "NumberReplacer", "span = int(values.max()) - lo + 2 if len(values) else 1"):
        "equivalent: `values - lo + 1` lies in [1, max - lo + 1], so any span >= max - lo + 1 (`+ 1` "
        "too) keeps each group above the one before; the `else` value is used only for empty arrays",
    ("intervals", "NumberReplacer", "prev[0] = 0"):
        "equivalent: row 0 always starts a group, so `np.where(first, ...)` never reads `prev[0]` "
        "(with `prev[-1] = 0` it is left unset, and `prev[-1]` is overwritten by `prev[1:] = ...`)",
    ("intervals", "NumberReplacer",
     "neg = prefix_max_before(group[::-1].max() - group[::-1] if len(group) else group, -values[::-1]) -> "
     "neg = prefix_max_before(group[::- 2].max() - group[::-1] if len(group) else group, -values[::-1])"):
        "equivalent: `group[::-2].max()` still holds the first element of the reversed groups, the "
        "largest (rows are sorted by group)",
    ("goodput", "NumberReplacer", "return np.where(ok, pos, -1).astype(np.int64) -> "
     "return np.where(ok, pos, - 2).astype(np.int64)"):
        "equivalent: `locate`'s callers only ask `row >= 0` / `restart_row >= 0`, so -2 reads as -1",
    ("goodput", "NumberReplacer", "prev_step[0] = 0"):
        "equivalent: row 0 always starts a rank (`first[0]` is True), so `rollback[0]` is False whatever "
        "`prev_step[0]` holds (with `prev_step[-1] = 0` it is left unset, and `prev_step[-1]` is "
        "overwritten by `prev_step[1:] = ...` or is row 0 itself)",
    ("goodput", "NumberReplacer", "prev_end[0] = 0.0"):
        "equivalent: row 0 always starts a rank (`first[0]` is True), so `fail[0]` is False and "
        "`prev_end[0]` is never read (with `prev_end[-1] = 0.0` it is left unset, and `prev_end[-1]` is "
        "overwritten by `prev_end[1:] = ...` or is row 0 itself)",
    ("goodput", "NumberReplacer",
     "if (step < 0).any():                       # no step numbers: number each rank's steps in order -> "
     "if (step < 1).any():                       # no step numbers: number each rank's steps in order"):
        "equivalent: the branch only replaces steps `< 0` (`np.where(step < 0, ordinal, step)`), so "
        "entering it when the smallest number is 0 changes nothing",
    ("goodput", "NumberReplacer", "st = _step_rows(steps, t0, step_flops, step_tokens, key_span=wall + 1.0)"):
        "equivalent: any `key_span >= wall` keeps rank r's keys (starts in [0, wall]) at or below rank "
        "r+1's; `locate` matters only for a child starting before its step's end (< wall) and for a "
        "restart whose next row is of the same rank, and a query at t = wall can only find rank r's "
        "last row, whose next row is another rank's",
    ("goodput", "ReplaceTrueWithFalse", "u_c = group_union_s(row[c], s[c], e[c], n, presorted=True)"):
        _PRESORTED,
    ("goodput", "NumberReplacer", "ok = (restart_row >= 0) & (nxt < n) -> ok = (restart_row >= -1) & (nxt < n)"):
        "equivalent: a restart before any step of its rank has `restart_row` -1, so `nxt` 0: row 0, which "
        "always starts a rank, so its `has_restart` is never read (`fail` needs `~first`)",
    ("goodput", "NumberReplacer", "ok[ok] &= st.rank[np.minimum(nxt[ok], n - 1)] == st.rank[restart_row[ok]]"):
        _SAME_RANK,
    ("goodput", "ReplaceBinaryOperator_Sub_Add",
     "ok[ok] &= st.rank[np.minimum(nxt[ok], n - 1)] == st.rank[restart_row[ok]]"):
        _SAME_RANK,
    ("goodput", "NumberReplacer", "e = np.concatenate([e, np.clip(le, 0.0, wall)]) -> "
     "e = np.concatenate([e, np.clip(le, -1.0, wall)])"):
        "equivalent: every layer starts at or after 0 (t0 is the earliest ranked start; failure gaps start "
        "at a step's end), so an end below 0 is below its start clipped to 0 or to -1, and `merge_groups` "
        "drops it (end <= start)",
    ("goodput", "NumberReplacer", "dense = np.where(known, pos, -1).astype(np.int64) -> "
     "dense = np.where(known, pos, - 2).astype(np.int64)"):
        "equivalent: every reader of the dense rank asks `>= 0` or `< 0`, so -2 reads as -1",
    ("goodput", "NumberReplacer",
     "known = (frame.rank >= 0) & (len(ranks) > 0) & np.isfinite(frame.start_s) & np.isfinite(frame.end_s) -> "
     "known = (frame.rank >= 0) & (len(ranks) > -1) & np.isfinite(frame.start_s) & np.isfinite(frame.end_s)"):
        "equivalent: `ranks` holds the rank of every span with a rank and finite times in both frames, so "
        "when it is empty no row passes the other three conditions",
    ("goodput", "NumberReplacer", "if n_ranks == 0 or len(starts) == 0: -> if n_ranks == 0 or len(starts) == -1:"):
        "equivalent: `starts` are the times of the spans with a dense rank, so it is empty exactly when "
        "`n_ranks == 0`, which the first condition catches (and `len(..) == -1` never holds)",
    ("goodput", "ReplaceTrueWithFalse", "u_ca = group_union_s(row[ca], s[ca], e[ca], n, presorted=True)"):
        _PRESORTED,
    ("goodput", "ReplaceTrueWithFalse", "u_all = group_union_s(row, s, e, n, presorted=True)"):
        _PRESORTED,
    ("goodput", "NumberReplacer",
     "pos = np.clip(pos, 0, max(len(ranks) - 1, 0)) -> pos = np.clip(pos, 0, max(len(ranks) - 1, -1))"):
        "equivalent: it differs only when `ranks` is empty, and then `known` is all False "
        "(`len(ranks) > 0`), so `pos` is never used",
    ("degradation", "ReplaceBreakWithContinue", "break"):
        "equivalent, at each of its three `break`s: in the step halving nothing is worse, so `scale` "
        "stays and every further round recomputes the same `new`; in the scoring loop no GPU is left "
        "active, so further rounds work on empty arrays and change nothing; after the last "
        "empirical-Bayes round `last` holds only for the final `r`, so the loop ends there anyway",
    ("degradation", "NumberReplacer",
     "t_max = float(obs.max()) if obs.size else 1.0 -> t_max = float(obs.max()) if obs.size else 0.0"):
        "equivalent: the next line turns a `t_max` of 0 into 1.0 as well",
    ("degradation", "NumberReplacer", "moved = np.where(accept, np.abs(new - th).max(axis=1), 0.0) -> "
     "moved = np.where(accept, np.abs(new - th).max(axis=1), -1.0)"):
        "equivalent: a rejected step's `moved` only meets `moved > config.tolerance`, which 0 and -1 both "
        "fail for any tolerance >= 0 (a negative one would mean never converging)",
    ("goodput", "NumberReplacer", "ordinal = idx - np.maximum.accumulate(np.where(first, idx, 0)) -> "
     "ordinal = idx - np.maximum.accumulate(np.where(first, idx, -1))"):
        "equivalent: row 0 always starts a rank with idx 0, so the running max is >= 0 and the fill of "
        "the other rows (0 or -1) never wins it",
    ("goodput", "NumberReplacer", "s = np.concatenate([s, np.clip(ls, 0.0, wall)]) -> "
     "s = np.concatenate([s, np.clip(ls, -1.0, wall)])"):
        "equivalent: every layer starts at or after 0 (t0 is the earliest ranked start; failure gaps start "
        "at a step's end), so a lower clip at -1 clips nothing that 0 would",
    ("goodput", "ReplaceTrueWithFalse", "return list(zip(s.tolist(), e.tolist(), strict=True))"):
        "equivalent: `merge_groups` returns starts and ends of the same length, so `strict` never fires",
    ("goodput", "ReplaceOrWithAnd", "if n_ranks == 0 or len(starts) == 0:"):
        "equivalent: `starts` are the times of the spans with a dense rank, so it is empty exactly when "
        "`n_ranks == 0`: the two conditions always agree",
    ("goodput", "NumberReplacer", "is_restart = _isin(others.name, config.restart_spans) & (others.rank >= 0) -> "
     "is_restart = _isin(others.name, config.restart_spans) & (others.rank >= -1)"):
        "equivalent: every step row has a rank >= 0, so `locate` finds no row of rank -1 for a rankless "
        "restart span and gives -1, which `restart_row >= 0` drops",
    ("degradation", "NumberReplacer",
     "return np.where(small, 1.0 + 0.5 * x, np.expm1(x) / np.where(small, 1.0, x)) -> "
     "return np.where(small, 1.0 + 0.5 * x, np.expm1(x) / np.where(small, 0.0, x))"):
        "equivalent: the divisor is replaced only where `small` holds, and there the outer `np.where` "
        "takes `1 + x/2`; the quotient computed there (0/0 at x = 0) is never picked",
    ("goodput", "ReplaceComparisonOperator_Lt_LtE",
     "if (step < 0).any():                       # no step numbers: number each rank's steps in order"):
        "equivalent: the branch only replaces steps `< 0` (`np.where(step < 0, ordinal, step)`), so "
        "entering it when the smallest number is 0 changes nothing",
    ("goodput", "NumberReplacer", "pos = np.clip(pos, 0, max(len(ranks) - 1, 0)) -> "
     "pos = np.clip(pos, -1, max(len(ranks) - 1, 0))"):
        "equivalent: `np.searchsorted` never returns a negative position",
    ("goodput", "NumberReplacer",
     "known = (frame.rank >= 0) & (len(ranks) > 0) & np.isfinite(frame.start_s) & np.isfinite(frame.end_s) -> "
     "known = (frame.rank >= -1) & (len(ranks) > 0) & np.isfinite(frame.start_s) & np.isfinite(frame.end_s)"):
        "equivalent: `ranks` holds only ranks >= 0, so a rank -1 fails `ranks[pos] == frame.rank` anyway",
    ("goodput", "ReplaceComparisonOperator_Gt_GtE",
     "known = (frame.rank >= 0) & (len(ranks) > 0) & np.isfinite(frame.start_s) & np.isfinite(frame.end_s)"):
        "equivalent: `ranks` holds the rank of every span with a rank and finite times in both frames, so "
        "when it is empty no row passes the other three conditions",
    ("goodput", "NumberReplacer", "if n_ranks == 0 or len(starts) == 0: -> if n_ranks == -1 or len(starts) == 0:"):
        "equivalent: `starts` are the times of the spans with a dense rank, so it is empty exactly when "
        "`n_ranks == 0`, which the second condition catches (and `n_ranks == -1` never holds)",
    ("degradation", "NumberReplacer",
     "return np.where(small, 1.0 + 0.5 * x, np.expm1(x) / np.where(small, 1.0, x)) -> "
     "return np.where(small, 1.0 + 0.5 * x, np.expm1(x) / np.where(small, 2.0, x))"):
        "equivalent: the divisor is replaced only where `small` holds, and there the outer `np.where` "
        "takes `1 + x/2`; the quotient computed there is never picked",
    ("degradation", "NumberReplacer",
     "b = np.exp(theta[:, 1:2]) * width[None, :] * cover * np.exp(theta[:, 2:3] * mid[None, :]) -> "
     "b = np.exp(theta[:, 1:2]) * width[None, :] * cover * np.exp(theta[:, 2: 4] * mid[None, :])"):
        "equivalent: theta has 3 columns, so `[:, 2:4]` is `[:, 2:3]`",
    ("degradation", "NumberReplacer",
     "ll = np.where(counts > 0, counts * np.log(np.maximum(lam, 1e-300)), 0.0) - lam -> "
     "ll = np.where(counts > 0, counts * np.log(np.maximum(lam, 1e-300)), -1.0) - lam"):
        "equivalent: it subtracts the number of empty bins, the same for every theta of a GPU, and "
        "`_penalised_ll` is only compared between thetas of the same GPU (an overflow stays -inf)",
    ("degradation", "ReplaceBinaryOperator_BitOr_BitAnd",
     "config: DegradationConfig = DegradationConfig(), prior: FleetPrior | None = None,"):
        ANNOTATION,
    ("degradation", "NumberReplacer",
     "ll = np.where(counts > 0, counts * np.log(np.maximum(lam, 1e-300)), 0.0) - lam -> "
     "ll = np.where(counts > 0, counts * np.log(np.maximum(lam, 1e-300)), 1.0) - lam"):
        "equivalent: it adds the number of empty bins, the same for every theta of a GPU, and "
        "`_penalised_ll` is only compared between thetas of the same GPU (an overflow stays -inf)",
    ("degradation", "ReplaceBinaryOperator_Add_Sub",
     "events = np.bincount(rows, weights=n_k * (np.log(lam) + log_w), minlength=len(theta))"):
        "equivalent: `- log_w` instead of `+ log_w` changes a draw's log weight by -2 sum_k n_k log_w_k, the "
        "same for every draw of a GPU, which the per-GPU normalisation of the weights takes off",
    ("degradation", "ReplaceBinaryOperator_Sub_Add",
     "lo = v[rows, np.minimum((cw < tail).sum(axis=1), v.shape[1] - 1)]"): _CAP_NEVER_BINDS,
    ("degradation", "NumberReplacer", "lo = v[rows, np.minimum((cw < tail).sum(axis=1), v.shape[1] - 1)] -> "
     "lo = v[rows, np.minimum((cw < tail).sum(axis=1), v.shape[1] - 0)]"): _CAP_NEVER_BINDS,
    ("degradation", "ReplaceBinaryOperator_Sub_Add",
     "hi = v[rows, np.minimum((cw < 1.0 - tail).sum(axis=1), v.shape[1] - 1)]"): _CAP_NEVER_BINDS,
    ("degradation", "NumberReplacer", "hi = v[rows, np.minimum((cw < 1.0 - tail).sum(axis=1), v.shape[1] - 1)] -> "
     "hi = v[rows, np.minimum((cw < 1.0 - tail).sum(axis=1), v.shape[1] - 0)]"): _CAP_NEVER_BINDS,
    ("degradation", "ReplaceComparisonOperator_Lt_LtE", "small = np.abs(x) < 1e-8"):
        "equivalent: at |x| = 1e-8 exactly the two branches agree to a double's resolution (1 + x/2 against "
        "(e^x - 1)/x, which differ by x^2/6 < 2e-17)",
    ("degradation", "NumberReplacer",
     "ll = np.where(counts > 0, counts * np.log(np.maximum(lam, 1e-300)), 0.0) - lam -> "
     "ll = np.where(counts > 0, counts * np.log(np.maximum(lam, -1.0)), 0.0) - lam"):
        "equivalent for the inputs built: Lambda_k is 0 only in a bin of no observed time (cover 0), and no such "
        "bin holds events (the health fit gives every GPU the window's length, and `bin_event_times` counts "
        "events within it), so the floor is only reached where `np.where` takes 0",
    ("degradation", "ReplaceComparisonOperator_Gt_GtE",
     "pd = np.asarray(np.linalg.eigvalsh(observed) > 1e-12).all(axis=1).reshape(-1, 1, 1)"):
        "equivalent: it differs only where an eigenvalue is exactly 1e-12",
    ("degradation", "NumberReplacer",
     "pd = np.asarray(np.linalg.eigvalsh(observed) > 1e-12).all(axis=1).reshape(-1, 1, 1) -> "
     "pd = np.asarray(np.linalg.eigvalsh(observed) > 1e-12).all(axis=1).reshape(- 2, 1, 1)"):
        "equivalent: numpy reads any negative size as the one inferred (`np.arange(6).reshape(-2, 1, 1)` has "
        "shape (6, 1, 1))",
    ("degradation", "NumberReplacer", "step = np.linalg.solve(info, score[:, :, None])[:, :, 0]"):
        "equivalent: the last axis has length 1, so index -1 is index 0",
    ("degradation", "NumberReplacer",
     "return np.stack([np.stack([xx, xy, xz], 1), np.stack([xy, yy, yz], 1), np.stack([xz, yz, zz], 1)], axis=1)"):
        "equivalent: stacking the rows along axis 2 gives the transpose, and the matrix is symmetric",
    ("degradation", "ReplaceComparisonOperator_Gt_GtE", "active = active[moved > config.tolerance]"):
        "equivalent: it differs only where a GPU's largest move is exactly the tolerance",
    ("degradation", "NumberReplacer", "if active.size == 0:"):
        "equivalent: without the early exit the remaining rounds work on empty arrays and change nothing",
    ("degradation", "ReplaceBinaryOperator_Sub_Add", "worse = new_ll < ll[active] - 1e-10"): _TIE_SLACK,
    ("degradation", "ReplaceComparisonOperator_Lt_LtE", "worse = new_ll < ll[active] - 1e-10"): _TIE_SLACK,
    ("degradation", "ReplaceBinaryOperator_Sub_Add", "accept = new_ll >= ll[active] - 1e-10"): _TIE_SLACK,
    ("degradation", "ReplaceComparisonOperator_GtE_Gt", "accept = new_ll >= ll[active] - 1e-10"): _TIE_SLACK,
    ("degradation", "NumberReplacer", "accept = new_ll >= ll[active] - 1e-10"):
        "tolerated: accepting a step that fails all 8 halvings (now within 1 nat): with the whole step scaled "
        "along an ascent direction (a positive-definite information) all halvings fail only where the step is "
        "already below the tolerance, at the mode. " + _MODE_TEST,
    ("degradation", "NumberReplacer", "moved = np.where(accept, np.abs(new - th).max(axis=1), 0.0) -> "
     "moved = np.where(accept, np.abs(new - th).max(axis=1), 1.0)"): _LONGER_BUDGET,
    ("degradation", "ReplaceBinaryOperator_Sub_Add",
     "moved = np.where(accept, np.abs(new - th).max(axis=1), 0.0)"): _LONGER_BUDGET,
    ("degradation", "NumberReplacer", "tolerance: float = 1e-5"): _LONGER_BUDGET,
    ("degradation", "NumberReplacer", "newton_iters: int = 25"): _LONGER_BUDGET,
    ("degradation", "NumberReplacer", "for _ in range(8):                                                # step halving"):
        "tolerated: one halving round more or fewer; the steps scale along an ascent direction, so the fit "
        "stops at the same mode. " + _MODE_TEST,
    ("degradation", "NumberReplacer", "scale = np.where(worse, scale * 0.5, scale)"):
        "tolerated: with -0.5 the odd halving rounds try the step reversed and the even ones forward at a "
        "quarter, so an ascent is still found, a round later, and the fit stops at the same mode. " + _MODE_TEST,
    ("degradation", "NumberReplacer",
     "step = step * np.minimum(1.0, 3.0 / np.maximum(np.abs(step).max(axis=1), 1e-300))[:, None] -> "
     "step = step * np.minimum(1.0, 3.0 / np.maximum(np.abs(step).max(axis=1), 1.0))[:, None]"):
        "equivalent: the guard only replaces a largest move below it, and any guard up to 3 leaves the factor "
        "min(1, 3 / guard) at 1 there, as the step's own size would",
    ("degradation", "NumberReplacer",
     "step = step * np.minimum(1.0, 3.0 / np.maximum(np.abs(step).max(axis=1), 1e-300))[:, None] -> "
     "step = step * np.minimum(1.0, 3.0 / np.maximum(np.abs(step).max(axis=1), -1.0))[:, None]"):
        "equivalent: the largest move is never negative, so a guard of -1 differs only at a step of exactly "
        "zero, where 3 / 0 = inf still gives the factor min(1, inf) = 1 and the step stays zero",
    ("degradation", "NumberReplacer",
     "step = step * np.minimum(1.0, 3.0 / np.maximum(np.abs(step).max(axis=1), 1e-300))[:, None]"):
        "tolerated: the trust region's size or its guard against a zero step; either changes the path to the "
        "mode, not the mode. " + _MODE_TEST,
    ("degradation", "ReplaceBinaryOperator_Mul_Div",
     "start = np.log(np.maximum(rate, np.exp(pr.mean[0] - 2 * pr.sd[0])) / 2.0)"):
        "tolerated: the floor of the start of a GPU with almost no events (e^(mean0 - 2/sd0) instead of "
        "e^(mean0 - 2 sd0)); a start, not the mode it leads to. " + _MODE_TEST,
    ("degradation", "NumberReplacer", "seed: int = 0"):
        "tolerated: another seed is another Monte-Carlo sample of the posterior; on the 40-GPU fleet of "
        "test_degradation (seed 3) it moves a GPU's current rate by at most 11.8 % of its 90 % interval's width "
        "and P(DBE 30 d) by at most 7.8 pp (16 % of its interval), and changes no recommendation",
    ("degradation", "NumberReplacer", "eb_draws: int = 64"):
        "tolerated: 63 or 65 draws in the intermediate empirical-Bayes rounds; on the same fleet the rate moves "
        "by at most 0.6 % of its interval, P(DBE) by 1.2 pp, no recommendation changes",
    ("degradation", "NumberReplacer", "eb_iters: int = 8"):
        "tolerated: 7 or 9 EM rounds; on the same fleet the rate moves by at most 4.6 % of its interval, P(DBE) "
        "by 1.9 pp, no recommendation changes (the EM is stopped, not converged: the lambda0/alpha split is "
        "weakly identified over 30 days and 50-100 rounds drift a prior sd to its floor)",
    ("degradation", "NumberReplacer", "eb_start_inflate: float = 2.0"):
        "tolerated: the first EM round's widening 3 instead of 2; on the same fleet the rate moves by at most "
        "6.8 % of its interval and P(DBE) by 8.6 pp (25 % of its interval), no recommendation changes",
    ("degradation", "ReplaceBinaryOperator_Mul_Div", "log_w = np.log(width[cols] * cover[rows, cols])"):
        "equivalent: `log_w` only adds sum_k n_k log_w_k to a draw's log weight, the same for every draw "
        "of a GPU, which the per-GPU normalisation of the weights takes off",
}


UNSIGNED = ("equivalent: the parsed text is digits (the regex's `\\d+`, `[\\d.]+` or `isdecimal`), never "
            "negative, so a lower bound of -1 accepts the same values as 0")


def _explain(name: str, op: str, line: str, mutant: str = "") -> str:
    """Why a survivor is no failure of the tests: the annotation and unsigned-bound rules, else
    ``EXPLAINED``; ``mutant`` is the mutated line (from the session's diff)."""
    if op == "ReplaceBinaryOperator_BitOr_BitAnd" and (line.startswith("def ") or re.match(r"^\w+: [^=]*\|", line)
                                                        or re.search(r"\) -> .*\|", line)):
        return ANNOTATION
    if (name == "log_classify" and op == "NumberReplacer"
            and "bounded_" in mutant and re.search(r",\s*-\s*1\s*[,)]", mutant)):   # a lower bound 0 -> -1
        return UNSIGNED
    return EXPLAINED.get((name, op, f"{line} -> {mutant}"), EXPLAINED.get((name, op, line), ""))


def _mutant(diff: str | None) -> str:
    """The mutated line of a session's diff."""
    plus = [ln[1:].strip() for ln in (diff or "").splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    return plus[0] if plus else ""


def _scratch() -> Path:
    base = Path(os.environ.get("SUANLI_MUTATE_DIR", Path(tempfile.gettempdir()) / "suanli-mutate"))
    wt = base / "wt"
    if wt.exists():
        shutil.rmtree(wt)
    wt.mkdir(parents=True)
    for part in ("src", "tests", "docs", "examples", "proto", "pyproject.toml"):  # tests read docs/ too
        src = ROOT / part
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, wt / part)
    link = base / "shared"
    if not link.exists():
        link.symlink_to(ROOT.parent / "shared")
    return wt


def _config(name: str, mod: Module, wt: Path, python: str) -> Path:
    tests = " ".join(mod.tests)
    text = f"""[cosmic-ray]
module-path = "{mod.path}"
timeout = {mod.timeout_s}
excluded-modules = []
test-command = "{python} {HERE / 'warm.py'} run {wt / 'warm.sock'} {mod.timeout_s} -x -q -p no:cacheprovider {tests}"

[cosmic-ray.distributor]
name = "local"

[cosmic-ray.filters.operators-filter]
exclude-operators = [{json.dumps(EXCLUDE)}]
"""
    path = wt / f"cr-{name}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _cr(tool: str) -> str:
    """A cosmic-ray executable next to this interpreter, else on PATH (COSMIC_RAY_BIN overrides)."""
    override = os.environ.get("COSMIC_RAY_BIN")
    if override:
        return str(Path(override).parent / tool)
    here = Path(sys.executable).parent / tool
    return str(here) if here.exists() else (shutil.which(tool) or tool)


def run_module(name: str, wt: Path, python: str) -> None:
    mod = MODULES[name]
    cfg = _config(name, mod, wt, python)
    env = {**os.environ, "PYTHONPATH": str(wt / "src"), "PYTHONDONTWRITEBYTECODE": "1", "SUANLI_MUTATE": "1"}
    base = subprocess.run([python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *mod.tests],
                          cwd=wt, env=env, capture_output=True, text=True, check=False)
    if base.returncode != 0:
        raise SystemExit(f"{name}: the tests fail without any mutation:\n{base.stdout[-2000:]}")
    SESSIONS.mkdir(exist_ok=True)
    session = SESSIONS / f"{name}.sqlite"
    if not session.exists():
        subprocess.run([_cr("cosmic-ray"), "init", str(cfg), str(session)], cwd=wt, env=env, check=True)
        subprocess.run([_cr("cr-filter-operators"), str(session), str(cfg)], cwd=wt, env=env, check=True)
    server = subprocess.Popen([python, str(HERE / "warm.py"), "serve", str(wt / "warm.sock")], cwd=wt, env=env)
    try:
        for _ in range(600):                    # the server is up once its socket exists
            if (wt / "warm.sock").exists():
                break
            time.sleep(0.1)
        subprocess.run([_cr("cosmic-ray"), "exec", str(cfg), str(session)], cwd=wt, env=env, check=True)
    finally:
        server.terminate()
        server.wait()


@dataclass
class Score:
    name: str
    total: int
    killed: int
    timeouts: int
    pending: int
    survivors: list[dict[str, str]]

    @property
    def equivalent(self) -> int:
        return sum(1 for v in self.survivors if v["why"].startswith("equivalent"))

    @property
    def percent(self) -> float:
        """Killed over the mutants run, equivalent ones left out (no test can kill them)."""
        done = self.total - self.pending - self.equivalent
        return 100.0 * self.killed / done if done else float("nan")


def _line(path: Path, start: list[int]) -> str:
    lines = path.read_text(encoding="utf-8").splitlines()
    return lines[start[0] - 1].strip() if 0 < start[0] <= len(lines) else "?"


def score(name: str) -> Score | None:
    session = SESSIONS / f"{name}.sqlite"
    if not session.exists():
        return None
    out = subprocess.run([_cr("cosmic-ray"), "dump", str(session)], capture_output=True, text=True, check=True)
    total = killed = timeouts = pending = 0
    survivors: list[dict[str, str]] = []
    for row in out.stdout.splitlines():
        item, result = json.loads(row)
        total += 1
        if result is None:
            pending += 1
            continue
        if result.get("worker_outcome") == "skipped":
            total -= 1
            continue
        if result.get("worker_outcome") == "timeout":
            timeouts += 1
            killed += 1
        elif result.get("test_outcome") in ("killed", "incompetent"):
            killed += 1
        else:
            mut = item["mutations"][0]
            line = _line(ROOT / MODULES[name].path, mut["start_pos"])
            op = mut["operator_name"].removeprefix("core/")
            survivors.append({"line": str(mut["start_pos"][0]), "operator": op, "source": line,
                              "why": _explain(name, op, line, _mutant(result.get("diff")))})
    return Score(name, total, killed, timeouts, pending, survivors)


def _pct(x: float) -> str:
    return "not run" if x != x else f"{x:.1f} %"


def _previous() -> tuple[dict[str, str], dict[str, list[str]]]:
    """The table rows and survivor lines of the existing ``mutation.md``, by module: what a
    module whose session is gone (or was measured elsewhere) keeps."""
    rows: dict[str, str] = {}
    survivors: dict[str, list[str]] = {}
    section: list[str] | None = None
    text = RESULT_MD.read_text(encoding="utf-8") if RESULT_MD.exists() else ""
    for line in text.splitlines():
        if (m := re.match(r"\| (\w+) \| `", line)) and m.group(1) in MODULES:
            rows[m.group(1)] = line
        elif line.startswith("### survivors: "):
            section = survivors.setdefault(line.removeprefix("### survivors: ").strip(), [])
        elif line.startswith("#"):
            section = None
        elif section is not None and line.startswith("- "):
            section.append(line)
    return rows, survivors


def write_report(names: list[str]) -> Path:
    """Rewrite ``mutation.md``: modules with a session are scored from it; the others keep their
    row and survivors from the existing file."""
    scores = {s.name: s for s in (score(n) for n in names) if s is not None}
    old_rows, old_survivors = _previous()
    out = ["## mutation", "",
           "Mutation testing with cosmic-ray 8.7 (`make mutate`, `bench/mutation/mutate.py`): per module, the "
           "mutants of the classic operator set, each run against that module's tests. Killed includes "
           "timeouts; equivalent survivors (no input tells them apart) are left out of the score; tolerated "
           "survivors (a numerical setting of a fit, whose change moves the answers by less than their stated "
           "uncertainty, with the figure measured) stay in it as survived; \"not run\" were left when time ran "
           "out.", "",
           "| module | file | mutants | killed | survived | equivalent | not run | score |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for n in names:
        if (s := scores.get(n)) is not None:
            survived = s.total - s.pending - s.killed - s.equivalent
            out.append(f"| {s.name} | `{MODULES[s.name].path}` | {s.total} | {s.killed} | {survived} | "
                       f"{s.equivalent} | {s.pending} | {_pct(s.percent)} |")
        elif n in old_rows:
            out.append(old_rows[n])
    missing = [n for n in MODULES if n not in scores and n not in old_rows]
    if missing:
        out += ["", "Not run yet (no session): " + ", ".join(f"`{n}`" for n in missing) + "."]
    for n in names:
        s = scores.get(n)
        lines = old_survivors.get(n, []) if s is None else [
            f"- line {v['line']}, {v['operator']}: `{v['source']}` — {v['why'] or 'not yet examined'}"
            for v in s.survivors]
        if lines:
            out += ["", f"### survivors: {n}", "", *lines]
    RESULT_MD.write_text("\n".join(out) + "\n", encoding="utf-8")
    return RESULT_MD


def _forget_survivors(name: str) -> None:
    """Drop the session's results of the survivors not explained as equivalent, so that ``exec``
    runs them again against the current tests."""
    session = SESSIONS / f"{name}.sqlite"
    if not session.exists():
        return
    path = ROOT / MODULES[name].path
    with sqlite3.connect(session) as db:
        rows = db.execute("SELECT r.job_id, m.operator_name, m.start_pos_row, m.start_pos_col, r.diff "
                          "FROM work_results r JOIN mutation_specs m ON m.job_id = r.job_id "
                          "WHERE r.test_outcome = 'SURVIVED'").fetchall()
        again = [(job,) for job, op, row, col, diff in rows
                 if not _explain(name, op.removeprefix("core/"), _line(path, [row, col]),
                                 _mutant(diff)).startswith("equivalent")]
        db.executemany("DELETE FROM work_results WHERE job_id = ?", again)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("modules", nargs="*", help=f"of: {', '.join(MODULES)}")
    ap.add_argument("--report", action="store_true", help="only rewrite the results from the sessions")
    ap.add_argument("--retest", action="store_true",
                    help="run the survivors of the sessions again against the current tests "
                         "(those explained as equivalent are kept)")
    args = ap.parse_args(argv)
    names = args.modules or list(MODULES)
    unknown = [n for n in names if n not in MODULES]
    if unknown:
        ap.error(f"unknown module(s): {', '.join(unknown)}")
    python = os.environ.get("MUTATE_PYTHON", sys.executable)
    if args.retest:
        for name in names:
            _forget_survivors(name)
    if not args.report:
        wt = _scratch()
        for name in names:
            print(f"== {name}", flush=True)
            run_module(name, wt, python)
            write_report(list(MODULES))
    print(f"wrote {write_report(list(MODULES))}")
    sys.path.insert(0, str(ROOT / "bench"))
    from run import gather  # the one place RESULTS.md is assembled

    print(f"wrote {gather()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
