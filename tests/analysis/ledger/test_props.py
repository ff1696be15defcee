"""Properties of the ledger with Hypothesis: the interval union against a brute-force union on a
grid, every time share in [0, 1], the split of random overlapping phases summing to wall time, and
MFU against the ratio of sums."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from suanli.analysis.ledger.economics import EconomicsConfig
from suanli.analysis.ledger.goodput import CATEGORIES, GoodputConfig, split_job
from suanli.analysis.ledger.intervals import group_union_s, merge_groups, prefix_max_before, suffix_min_after
from suanli.analysis.ledger.job import JobInputs, build_job_ledger
from suanli.analysis.profile.intervals import intersection_length, merge, union_length
from suanli.inventory import parse_inventory
from tests.analysis.ledger.test_ledger_frames import Row, make_frame, split_rows
from tests.conftest import examples

FAST = settings(max_examples=examples(150), deadline=None, derandomize=True)
GRID = 40                          # interval ends are integers in [0, GRID]: brute force = unit cells

interval = st.tuples(st.integers(0, GRID), st.integers(0, GRID))
signed = st.tuples(st.integers(-GRID, GRID), st.integers(-GRID, GRID))


def _cells(ivs: list[tuple[int, int]]) -> set[int]:
    """Unit cells [k, k+1) covered by the half-open intervals (empty/inverted ones cover none)."""
    return {k for a, b in ivs for k in range(a, b)}


@FAST
@given(st.lists(interval, max_size=12), st.lists(interval, max_size=12))
def test_union_and_intersection_against_brute_force(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> None:
    def arr(ivs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
        return np.array([s for s, _ in ivs], dtype=float), np.array([e for _, e in ivs], dtype=float)

    assert union_length(*arr(a)) == len(_cells(a))
    assert intersection_length(arr(a), arr(b)) == len(_cells(a) & _cells(b))
    # merged intervals are disjoint, sorted, non-touching, and cover exactly the same cells
    ms, me = merge(*arr(a))
    assert np.all(me > ms) and np.all(ms[1:] > me[:-1])
    assert _cells([(int(s), int(e)) for s, e in zip(ms, me, strict=True)]) == _cells(a)


@FAST
@given(st.lists(st.tuples(st.integers(0, 3), signed), max_size=20))
def test_group_union_against_brute_force(rows: list[tuple[int, tuple[int, int]]]) -> None:
    # ends in [-GRID, GRID]: times before 0 too (the per-group shift must hold for any origin)
    g = np.array([r[0] for r in rows], dtype=np.int64)
    s = np.array([r[1][0] for r in rows], dtype=float)
    e = np.array([r[1][1] for r in rows], dtype=float)
    want = [len(_cells([iv for gg, iv in rows if gg == k])) for k in range(4)]
    assert group_union_s(g, s, e, 4).tolist() == want
    # the same rows presorted by (group, start) give the same answer
    order = np.lexsort((s, g))
    assert group_union_s(g[order], s[order], e[order], 4, presorted=True).tolist() == want
    mg, ms, me = merge_groups(g, s, e)
    # merged: sorted by group, none empty, and within a group disjoint and not touching
    assert np.all(np.diff(mg) >= 0) and np.all(me > ms)
    for k in range(4):
        sel = mg == k
        assert np.all(ms[sel][1:] > me[sel][:-1])
        assert _cells([(int(a), int(b)) for a, b in zip(ms[sel], me[sel], strict=True)]) == \
            _cells([iv for gg, iv in rows if gg == k])


@FAST
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(-50, 50)), max_size=20))
def test_prefix_max_and_suffix_min_against_brute_force(rows: list[tuple[int, int]]) -> None:
    # Rows sorted by group; for each row the max of the earlier rows' values in its group (int64
    # min for the first) and the min of the later ones (int64 max for the last), by double loop.
    rows = sorted(rows, key=lambda r: r[0])
    g = np.array([r[0] for r in rows], dtype=np.int64)
    v = np.array([r[1] for r in rows], dtype=np.int64)
    lo, hi = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)
    before = [max((rows[j][1] for j in range(i) if rows[j][0] == rows[i][0]), default=lo) for i in range(len(rows))]
    after = [min((rows[j][1] for j in range(i + 1, len(rows)) if rows[j][0] == rows[i][0]), default=hi)
             for i in range(len(rows))]
    assert prefix_max_before(g, v).tolist() == before
    assert suffix_min_after(g, v).tolist() == after


PHASES = ("forward", "backward", "optimizer", "allreduce", "data_load", "checkpoint_save", "init")

phase = st.tuples(st.integers(0, 2), st.sampled_from(PHASES), st.integers(0, 60), st.integers(1, 15))
step = st.tuples(st.integers(0, 2), st.integers(0, 60), st.integers(1, 20))


@FAST
@given(st.lists(step, min_size=1, max_size=8), st.lists(phase, max_size=20))
def test_split_of_random_overlapping_phases_sums_to_wall_time(steps: list[tuple[int, int, int]],
                                                             phases: list[tuple[int, str, int, int]]) -> None:
    # Random steps per rank (numbered in start order per rank; they may overlap) and random phases
    # anywhere (inside steps, across their ends, outside): the ten categories split
    # ranks x wall GPU-seconds exactly, none is negative, every share is in [0, 1].
    rows: list[Row] = []
    seen: dict[int, int] = {}
    for rank, t, d in sorted(steps, key=lambda x: (x[0], x[1])):
        seen[rank] = seen.get(rank, 0) + 1
        rows.append((rank, seen[rank], "train_step", float(t), float(t + d)))
    rows += [(rank, -1, name, float(t), float(t + d)) for rank, name, t, d in phases]
    st_rows, others = split_rows(rows)
    got = split_job(make_frame(st_rows), make_frame(others), GoodputConfig())
    total = got.n_ranks * got.wall_s
    assert set(got.gpu_s) == set(CATEGORIES)
    assert abs(sum(got.gpu_s.values()) - total) <= 1e-9 * max(total, 1.0)
    assert all(v >= -1e-9 for v in got.gpu_s.values()), got.gpu_s
    shares = got.shares()
    assert all(-1e-12 <= v <= 1 + 1e-12 for v in shares.values())
    assert abs(sum(shares.values()) - 1.0) < 1e-9


INVENTORY = """
cluster: tiny
gpu_models:
  H100-SXM: {bf16_tflops: 989, gpu_hour_price: 2.0}
racks:
  - id: rack-01
    nodes:
      - id: node-001
        gpus:
          - {index: 0, uuid: GPU-a, model: H100-SXM}
          - {index: 1, uuid: GPU-b, model: H100-SXM}
jobs:
  - id: job-a
    model: {params: 1.0e9}
    precision: bf16
    parallelism: {dp: 2}
    ranks:
      - {rank: 0, gpu: node-001/gpu0}
      - {rank: 1, gpu: node-001/gpu1}
    tokens_per_step: 1000
"""


@FAST
@given(st.lists(st.tuples(st.integers(1, 30), st.floats(1e12, 1e16)), min_size=1, max_size=10))
def test_mfu_is_the_ratio_of_sums(steps: list[tuple[int, float]]) -> None:
    # Back-to-back steps of random length on 2 ranks, each rank declaring the same random model
    # FLOPs per step: MFU = sum(FLOPs) / (peak x sum(ranks x step time)), whatever the mix.
    rows: list[Row] = []
    flops: list[float] = []
    t = 0.0
    for k, (d, f) in enumerate(steps):
        for rank in (0, 1):
            rows.append((rank, k, "train_step", t, t + d))
            flops.append(f)
        t += d
    st_rows, others = split_rows(rows)
    split = split_job(make_frame(st_rows), make_frame(others), GoodputConfig(), np.array(flops))
    inv = parse_inventory(INVENTORY)
    led = build_job_ledger(inv.jobs["job-a"], split, JobInputs(2, 989e12, 2.0), "palm", EconomicsConfig())
    peak = 989e12
    want = sum(flops) / (peak * sum(2 * d for d, _ in steps))
    assert led.mfu is not None and abs(led.mfu - want) <= 1e-9 * want
    # per-step MFU is each step's own ratio
    per = [2 * f / (peak * 2 * d) for d, f in steps]
    assert np.allclose(led.step_mfu, per, rtol=1e-12)
    # and the timeline's single bin (points=1) is the same ratio of sums, to its 4 digits
    assert abs(led.mfu_timeline(points=1)[0][1] - want) <= 5e-4 * want


@FAST
@given(st.lists(step, min_size=1, max_size=8), st.lists(phase, max_size=24), st.integers(1, 5),
       st.sampled_from([(0, 1, 2), (3, 7, 100), (5, 0, 2)]), st.booleans())
def test_split_by_blocks_of_ranks_is_the_whole_split(steps: list[tuple[int, int, int]],
                                                     phases: list[tuple[int, str, int, int]], block: int,
                                                     rank_ids: tuple[int, int, int], nan_time: bool) -> None:
    # _phase_unions in blocks of ranks (any block size), ranks sparse or out of order, a span with a
    # NaN start (its rank does not count): the same split, to the bit, as in one block.
    import suanli.analysis.ledger.goodput as goodput
    rows: list[Row] = []
    seen: dict[int, int] = {}
    for rank, t, d in sorted(steps, key=lambda x: (x[0], x[1])):
        seen[rank] = seen.get(rank, 0) + 1
        rows.append((rank_ids[rank], seen[rank], "train_step", float(t), float(t + d)))
    rows += [(rank_ids[rank], -1, name, float(t), float(t + d)) for rank, name, t, d in phases]
    if nan_time and phases:
        rows.append((rank_ids[2] + 1, -1, "forward", float("nan"), 3.0))
    st_rows, others = split_rows(rows)
    whole = split_job(make_frame(st_rows), make_frame(others), GoodputConfig())
    before = goodput._BLOCK_ROWS
    goodput._BLOCK_ROWS = block
    try:
        blocked = split_job(make_frame(st_rows), make_frame(others), GoodputConfig())
    finally:
        goodput._BLOCK_ROWS = before
    assert blocked.gpu_s == whole.gpu_s and blocked.n_ranks == whole.n_ranks
    assert (blocked.start_s, blocked.end_s, blocked.skipped_spans) == (whole.start_s, whole.end_s, whole.skipped_spans)
    for f in ("step", "n_ranks", "compute_s", "exposed_comm_s", "straggler_wait_s", "data_s", "other_s"):
        assert getattr(blocked.steps, f).tolist() == getattr(whole.steps, f).tolist(), f
    assert blocked.interruptions == whole.interruptions
