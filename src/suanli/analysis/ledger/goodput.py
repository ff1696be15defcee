"""Goodput: where a job's wall time went, from its training spans (pure functions over SpanFrame).

Definitions (docs/ledger.md has the long form):

* The job's wall time is ``[first span start, last span end]`` over all its ranks; the ledger
  splits ``ranks × wall`` GPU-seconds, so the shares add up to exactly 1.
* Inside a productive ``train_step`` the time is split by the UNION of its children's intervals,
  with precedence compute (forward / backward / optimizer) > exposed communication
  (collectives not hidden under compute) > data loading > in-step other; overlapped
  communication is therefore never counted twice. A step without any phase child is compute.
* Straggler wait: in a synchronous collective every rank leaves together, so the rank that
  arrived last (the slowest compute) waits least; its exposed communication is what the network
  needed. Each rank's exposed communication beyond the minimum over the ranks of that step is
  time spent waiting on stragglers (a part of, not an addition to, exposed communication).
* Outside steps: ``checkpoint_save`` / ``checkpoint_load`` = checkpoint; ``init`` = init;
  a gap between two steps of a rank is a failure when the next step rolls back (its number is
  not above the step before it) or when the gap is longer than ``failure_gap_steps`` × median step
  and holds an ``init``/``checkpoint_load`` (a restart); everything in such a gap is failure
  downtime. Steps redone after a rollback were lost: their first execution is failure time
  (progress lost since the last checkpoint). A rank that stops more than
  ``failure_gap_steps`` × median step before the job's end is down (failure). Other gaps are idle.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from suanli.analysis.codes import distinct_ints
from suanli.analysis.ledger.intervals import I64, group_union_s, merge_groups, suffix_min_after
from suanli.analysis.median import median
from suanli.store.api import SpanFrame, coded

__all__ = ["CATEGORIES", "GoodputConfig", "JobSplit", "StepTable", "split_job"]

F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]

CATEGORIES: tuple[str, ...] = (
    "compute", "exposed_communication", "straggler_wait", "data_loading", "step_other",
    "checkpoint", "init", "failure_downtime", "failure_lost_progress", "idle",
)


@dataclass(frozen=True)
class GoodputConfig:
    """How spans are read into the time split."""

    failure_gap_steps: float = 3.0
    """A gap between steps longer than this many median step times, holding a restart
    (init / checkpoint_load), is a failure; shorter gaps are idle."""
    step_span: str = "train_step"
    """Name of the per-rank step span."""
    compute_phases: tuple[str, ...] = ("forward", "backward", "optimizer")
    """Children of a step that are compute."""
    comm_phases: tuple[str, ...] = ("allreduce",)
    """Children of a step that are collectives (spec: ``allreduce`` stands for any collective)."""
    data_phases: tuple[str, ...] = ("data_load",)
    """Children of a step that load data."""
    checkpoint_spans: tuple[str, ...] = ("checkpoint_save", "checkpoint_load")
    """Spans outside steps that save or load checkpoints."""
    init_spans: tuple[str, ...] = ("init",)
    """Spans outside steps from process start to the first step."""
    restart_spans: tuple[str, ...] = ("init", "checkpoint_load")
    """Spans whose presence in a long gap marks a restart (failure)."""


@dataclass(frozen=True)
class StepTable:
    """Productive steps, one row per step number, summed over the ranks that ran it.

    ``start_s``/``end_s`` are epoch seconds (earliest start, latest end over ranks); the
    ``*_s`` phase columns are GPU-seconds summed over ranks; ``flops`` the step's model FLOPs
    (sum of ``train.model_flops`` over ranks, NaN where no rank gave it), ``tokens`` likewise.
    """

    step: I64
    start_s: F64
    end_s: F64
    n_ranks: I64
    compute_s: F64
    exposed_comm_s: F64
    straggler_wait_s: F64
    data_s: F64
    other_s: F64
    flops: F64
    tokens: F64

    @property
    def wall_s(self) -> F64:
        return self.end_s - self.start_s


@dataclass(frozen=True)
class JobSplit:
    """A job's wall time split: GPU-seconds per category (``CATEGORIES``) over ``n_ranks × wall_s``."""

    start_s: float
    end_s: float
    n_ranks: int
    gpu_s: dict[str, float]
    steps: StepTable
    interruptions: list[tuple[float, float]] = field(default_factory=list)
    """(start, end) epoch seconds of each failure gap, merged over ranks."""
    median_step_s: float = float("nan")
    skipped_spans: int = 0
    """Spans without a rank, or children outside any step: not counted."""

    @property
    def wall_s(self) -> float:
        return self.end_s - self.start_s

    def shares(self) -> dict[str, float]:
        total = sum(self.gpu_s.values())
        return {k: (v / total if total > 0 else 0.0) for k, v in self.gpu_s.items()}


@dataclass
class _Steps:
    """Step rows of one job sorted by (rank, start), times relative to the job start."""

    rank: I64
    step: I64
    start: F64
    end: F64
    flops: F64
    tokens: F64
    key_span: float

    def key(self, rank: I64, t: F64) -> F64:
        return rank.astype(np.float64) * self.key_span + t

    def locate(self, rank: I64, t: F64) -> I64:
        """Index of the last step row of ``rank`` starting at or before ``t`` (-1 if none)."""
        pos = np.searchsorted(self.key(self.rank, self.start), self.key(rank, t), side="right") - 1
        ok = pos >= 0
        ok[ok] &= self.rank[pos[ok]] == rank[ok]
        return np.where(ok, pos, -1).astype(np.int64)


def _step_rows(steps: SpanFrame, t0: float, flops: F64 | None, tokens: F64 | None,
               key_span: float) -> _Steps:
    ok = steps.rank >= 0
    rank = steps.rank[ok].astype(np.int64)
    start = steps.start_s[ok] - t0
    end = np.maximum(steps.end_s[ok] - t0, start)
    n = len(steps)
    fl = (np.full(n, np.nan) if flops is None else np.asarray(flops, dtype=np.float64))[ok]
    tk = (np.full(n, np.nan) if tokens is None else np.asarray(tokens, dtype=np.float64))[ok]
    order = np.lexsort((start, rank))
    rank, start, end, fl, tk = rank[order], start[order], end[order], fl[order], tk[order]
    step = steps.step[ok][order].astype(np.int64)
    if (step < 0).any():                       # no step numbers: number each rank's steps in order
        first = np.ones(len(rank), dtype=bool)
        first[1:] = rank[1:] != rank[:-1]
        idx = np.arange(len(rank))
        ordinal = idx - np.maximum.accumulate(np.where(first, idx, 0))
        step = np.where(step < 0, ordinal, step)
    return _Steps(rank, step, start, end, fl, tk, key_span)


_BLOCK_ROWS = 1 << 22
"""Phase spans per block of ranks in ``_phase_unions``: its temporaries (about 100 bytes a span)
are bounded by a block, not by the job (a 10,240-GPU job's 40 M phase spans needed 5 GB)."""


def _phase_unions(st: _Steps, phases: SpanFrame, t0: float, cfg: GoodputConfig
                  ) -> tuple[F64, F64, F64, int]:
    """Per step row: union of compute, of compute+comm, of compute+comm+data (children clipped).
    A step row's children all share its rank, so blocks of ranks are independent: each block's
    unions are zero outside its own rows and the sums are the whole job's."""
    n = len(st.rank)
    is_c = phases.name_in(cfg.compute_phases)
    is_a = phases.name_in(cfg.comm_phases)
    child = (is_c | is_a | phases.name_in(cfg.data_phases)) & (phases.rank >= 0)
    u_c, u_ca, u_all = np.zeros(n), np.zeros(n), np.zeros(n)
    skipped = 0
    blocks = max(1, -(-int(child.sum()) // _BLOCK_ROWS))
    top = int(phases.rank.max()) + 1 if len(phases.rank) else 0
    edges = np.linspace(0, top, blocks + 1).round().astype(np.int64).tolist()
    for lo, hi in itertools.pairwise(edges):
        sel = child if blocks == 1 else child & (phases.rank >= lo) & (phases.rank < hi)
        parts = _block_unions(st, phases, sel, is_c[sel], is_a[sel], t0)
        skipped += parts[3]
        u_c += parts[0]
        u_ca += parts[1]
        u_all += parts[2]
    return u_c, u_ca, u_all, skipped


def _block_unions(st: _Steps, phases: SpanFrame, sel: B, c: B, a: B, t0: float) -> tuple[F64, F64, F64, int]:
    """``_phase_unions`` over the child rows ``sel`` (``c``/``a``: which of them are compute / comm)."""
    n = len(st.rank)
    rank = phases.rank[sel]
    s = phases.start_s[sel] - t0
    e = phases.end_s[sel] - t0
    row = st.locate(rank, s)
    del rank
    inside = row >= 0
    inside[inside] &= s[inside] < st.end[row[inside]]
    skipped = int((~inside).sum())
    row, s, e, c, a = row[inside], s[inside], e[inside], c[inside], a[inside]
    order = np.lexsort((s, row))                      # sort once, reuse for the three unions
    row, s, e, c, a = row[order], s[order], e[order], c[order], a[order]
    del order
    e = np.minimum(e, st.end[row])
    u_c = group_union_s(row[c], s[c], e[c], n, presorted=True)
    ca = c | a
    u_ca = group_union_s(row[ca], s[ca], e[ca], n, presorted=True)
    u_all = group_union_s(row, s, e, n, presorted=True)
    return u_c, u_ca, u_all, skipped


def _lost_and_failures(st: _Steps, restart_row: I64, wall: float, median_s: float,
                       cfg: GoodputConfig) -> tuple[B, F64, F64, I64]:
    """Lost step rows, and failure gaps (start, end, rank) between steps and at a rank's end."""
    n = len(st.rank)
    lost = suffix_min_after(st.rank, st.step) <= st.step
    if n == 0:
        return lost, np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64)
    first = np.ones(n, dtype=bool)
    first[1:] = st.rank[1:] != st.rank[:-1]
    prev_step = np.empty(n, dtype=np.int64)
    prev_step[0] = 0
    prev_step[1:] = st.step[:-1]
    rollback = ~first & (st.step <= prev_step)
    has_restart = np.zeros(n, dtype=bool)
    nxt = restart_row + 1
    ok = (restart_row >= 0) & (nxt < n)
    ok[ok] &= st.rank[np.minimum(nxt[ok], n - 1)] == st.rank[restart_row[ok]]
    has_restart[nxt[ok]] = True
    prev_end = np.empty(n)
    prev_end[0] = 0.0
    prev_end[1:] = st.end[:-1]
    long_gap = (st.start - prev_end) > cfg.failure_gap_steps * median_s
    fail = ~first & (rollback | (long_gap & has_restart))
    last = np.ones(n, dtype=bool)
    last[:-1] = st.rank[1:] != st.rank[:-1]
    down = last & (wall - st.end > cfg.failure_gap_steps * median_s)
    f_start = np.concatenate([prev_end[fail], st.end[down]])
    f_end = np.concatenate([st.start[fail], np.full(int(down.sum()), wall)])
    f_rank = np.concatenate([st.rank[fail], st.rank[down]])
    return lost, f_start, f_end, f_rank


def _step_table(st: _Steps, keep: B, comp: F64, exposed: F64, data: F64, other: F64,
                t0: float) -> tuple[StepTable, F64]:
    """Aggregate productive step rows per step number; also each row's straggler wait."""
    numbers, inv = np.unique(st.step[keep], return_inverse=True)
    m = len(numbers)
    exp_k = exposed[keep]
    floor = np.full(m, np.inf)
    np.minimum.at(floor, inv, exp_k)
    wait = exp_k - floor[inv]
    start = np.full(m, np.inf)
    end = np.full(m, -np.inf)
    np.minimum.at(start, inv, st.start[keep])
    np.maximum.at(end, inv, st.end[keep])

    def total(x: F64) -> F64:
        return np.bincount(inv, weights=x, minlength=m).astype(np.float64)

    def nan_total(x: F64) -> F64:
        got = np.bincount(inv, weights=np.nan_to_num(x), minlength=m).astype(np.float64)
        seen = np.bincount(inv, weights=np.isfinite(x).astype(np.float64), minlength=m)
        return np.where(seen > 0, got, np.nan)

    table = StepTable(
        step=numbers.astype(np.int64), start_s=start + t0, end_s=end + t0,
        n_ranks=np.bincount(inv, minlength=m).astype(np.int64),
        compute_s=total(comp[keep]), exposed_comm_s=total(exp_k), straggler_wait_s=total(wait),
        data_s=total(data[keep]), other_s=total(other[keep]),
        flops=nan_total(st.flops[keep]), tokens=nan_total(st.tokens[keep]))
    return table, wait


def _rank_layers(n_ranks: int, layers: list[tuple[I64, F64, F64]], wall: float) -> list[F64]:
    """Cumulative union length per rank of the first k layers, k = 1..len(layers), clipped to the wall."""
    out: list[F64] = []
    g = np.zeros(0, dtype=np.int64)
    s = np.zeros(0)
    e = np.zeros(0)
    for lg, ls, le in layers:
        g = np.concatenate([g, lg])
        s = np.concatenate([s, np.clip(ls, 0.0, wall)])
        e = np.concatenate([e, np.clip(le, 0.0, wall)])
        out.append(group_union_s(g, s, e, n_ranks))
    return out


def _merge_intervals(start: F64, end: F64) -> list[tuple[float, float]]:
    _, s, e = merge_groups(np.zeros(len(start), dtype=np.int64), start, end)
    return list(zip(s.tolist(), e.tolist(), strict=True))


def _known(f: SpanFrame) -> B:
    return np.asarray((f.rank >= 0) & np.isfinite(f.start_s) & np.isfinite(f.end_s), dtype=np.bool_)


def _remap(frame: SpanFrame, ranks: I64, known: B) -> SpanFrame:
    """The frame with ranks replaced by their index in ``ranks`` (-1 stays -1; so does a rank
    whose span has a non-finite time: ``known`` is ``_known(frame)``). Where that changes nothing
    (ranks 0..n-1, every time finite, the usual case) the frame itself, not a copy of its ranks."""
    if len(ranks) and int(ranks[-1]) == len(ranks) - 1 and np.array_equal(known, frame.rank >= 0):
        return frame
    pos = np.searchsorted(ranks, frame.rank)
    pos = np.clip(pos, 0, max(len(ranks) - 1, 0))
    known = known & (ranks[pos] == frame.rank) if len(ranks) else np.zeros(len(frame), dtype=bool)
    dense = np.where(known, pos, -1).astype(np.int64)
    out = SpanFrame(frame.job_id, dense, frame.step, frame.name, frame.start_s, frame.end_s,
                    frame.gpu_id, frame.node_id, frame.trace_id, frame.span_id, frame.parent_id)
    return out if frame.name_codes is None else coded(out, *frame.name_codes)


def _extent(steps: SpanFrame, others: SpanFrame) -> tuple[float, float] | None:
    """(earliest start, latest end) of the spans with a rank; None when there are none."""
    lo, hi, any_ranked = np.inf, -np.inf, False
    for f in (steps, others):
        ranked = f.rank >= 0
        if ranked.any():
            any_ranked = True
            lo = min(lo, float(np.min(f.start_s, where=ranked, initial=np.inf)))
            hi = max(hi, float(np.max(f.end_s, where=ranked, initial=-np.inf)))
    return (lo, hi) if any_ranked else None


def split_job(steps: SpanFrame, others: SpanFrame, config: GoodputConfig = GoodputConfig(),
              step_flops: F64 | None = None, step_tokens: F64 | None = None,
              window_end_s: float | None = None) -> JobSplit:
    """Split one job's wall time (see the module docstring).

    ``steps``: the job's ``train_step`` spans; ``others``: its other spans (phases, checkpoint,
    init); ``step_flops`` / ``step_tokens``: ``train.model_flops`` / ``train.tokens`` aligned with
    ``steps`` (NaN where absent). ``window_end_s``: end of the observed window; a job whose spans
    stop more than ``failure_gap_steps`` median steps before it is down (failure) until then.
    """
    k_steps, k_others = _known(steps), _known(others)          # each mask once: ranks and remap share them
    ranks = distinct_ints(steps.rank[k_steps], others.rank[k_others])
    steps, others = _remap(steps, ranks, k_steps), _remap(others, ranks, k_others)
    n_ranks = len(ranks)
    extent = _extent(steps, others)
    if n_ranks == 0 or extent is None:
        return _empty_split(steps, others)
    t0, t1 = extent
    wall = t1 - t0
    st = _step_rows(steps, t0, step_flops, step_tokens, key_span=wall + 1.0)
    u_c, u_ca, u_all, skipped = _phase_unions(st, others, t0, config)
    length = st.end - st.start
    bare = u_all == 0                      # a step without phase children counts as compute
    u_c, u_ca, u_all = (np.where(bare, length, u) for u in (u_c, u_ca, u_all))
    median_s = median(length) if len(length) else float("nan")
    if window_end_s is not None and window_end_s - t1 > config.failure_gap_steps * median_s:
        t1, wall = window_end_s, window_end_s - t0
    is_restart = others.name_in(config.restart_spans) & (others.rank >= 0)
    restart_row = st.locate(others.rank[is_restart].astype(np.int64), others.start_s[is_restart] - t0)
    lost, f_s, f_e, f_r = _lost_and_failures(st, restart_row, wall, median_s, config)
    keep = ~lost
    exposed = u_ca - u_c
    table, wait = _step_table(st, keep, u_c, exposed, u_all - u_ca, length - u_all, t0)
    gpu_s, productive = _categories(st, keep, others, config, (f_r, f_s, f_e), n_ranks, wall, t0)
    scale = _in_step_scale(st, keep, productive, n_ranks)
    gpu_s["compute"] = float((u_c[keep] * scale).sum())
    gpu_s["exposed_communication"] = float(((exposed[keep] - wait) * scale).sum())
    gpu_s["straggler_wait"] = float((wait * scale).sum())
    gpu_s["data_loading"] = float(((u_all - u_ca)[keep] * scale).sum())
    gpu_s["step_other"] = float(((length - u_all)[keep] * scale).sum())
    skipped += int((steps.rank < 0).sum() + (others.rank < 0).sum())
    return JobSplit(t0, t1, n_ranks, {k: gpu_s[k] for k in CATEGORIES}, table,
                    [(a + t0, b + t0) for a, b in _merge_intervals(f_s, f_e)], median_s, skipped)


def _in_step_scale(st: _Steps, keep: B, productive: F64, n_ranks: int) -> F64:
    """Per productive row, |union of the rank's productive steps| / sum of their lengths (1 unless
    a rank's steps overlap), so in-step parts add up to the step union exactly."""
    length = (st.end - st.start)[keep]
    summed = np.bincount(st.rank[keep], weights=length, minlength=n_ranks)
    ratio = np.divide(productive, summed, out=np.ones(n_ranks), where=summed > 0)
    return np.asarray(ratio[st.rank[keep]], dtype=np.float64)


def _categories(st: _Steps, keep: B, others: SpanFrame, cfg: GoodputConfig,
                failures: tuple[I64, F64, F64], n_ranks: int, wall: float, t0: float
                ) -> tuple[dict[str, float], F64]:
    """GPU-seconds outside productive steps, by precedence: productive steps > lost steps >
    failure gaps > checkpoint > init > idle."""
    ok = others.rank >= 0
    ck = others.name_in(cfg.checkpoint_spans) & ok
    it = others.name_in(cfg.init_spans) & ok
    r = np.asarray(others.rank, dtype=np.int64)
    layers = [
        (st.rank[keep], st.start[keep], st.end[keep]),
        (st.rank[~keep], st.start[~keep], st.end[~keep]),
        failures,
        (r[ck], others.start_s[ck] - t0, others.end_s[ck] - t0),
        (r[it], others.start_s[it] - t0, others.end_s[it] - t0),
    ]
    u = _rank_layers(n_ranks, layers, wall)
    return {
        "failure_lost_progress": float((u[1] - u[0]).sum()),
        "failure_downtime": float((u[2] - u[1]).sum()),
        "checkpoint": float((u[3] - u[2]).sum()),
        "init": float((u[4] - u[3]).sum()),
        "idle": float((wall - u[4]).sum()),
    }, u[0]


def _empty_split(steps: SpanFrame, others: SpanFrame) -> JobSplit:
    z = np.zeros(0)
    zi = np.zeros(0, dtype=np.int64)
    table = StepTable(zi, z, z, zi, z, z, z, z, z, z, z)
    return JobSplit(0.0, 0.0, 0, dict.fromkeys(CATEGORIES, 0.0), table,
                    skipped_spans=len(steps) + len(others))
