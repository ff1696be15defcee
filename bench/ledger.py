"""Benchmark: the efficiency ledger of a 10,240-GPU job over one simulated hour.

Every rank's spans are synthesised directly as SpanFrames (train_step plus data_load, forward,
backward, allreduce, optimizer children, and one failure with a rollback of 10 steps at
half time), then the pure ledger functions run on them: ``split_job`` (time split,
stragglers, failures) and ``build_job_ledger`` (MFU, costs, forecast). Reports the ledger's wall
time and peak memory (tracemalloc peak of the ledger alone, and the process's max RSS).
"""

from __future__ import annotations

import resource
import time
import tracemalloc
from pathlib import Path

import numpy as np
import numpy.typing as npt

from suanli.analysis.ledger.economics import EconomicsConfig
from suanli.analysis.ledger.goodput import GoodputConfig, split_job
from suanli.analysis.ledger.job import JobInputs, build_job_ledger
from suanli.inventory.model import Job, ModelShape
from suanli.store.api import SpanFrame

RANKS = 10_240
HOUR_S = 3600.0
STEP_S = 20.0
T0 = 1_773_000_000.0
F64 = npt.NDArray[np.float64]


def _const(n: int, value: object) -> npt.NDArray[np.object_]:
    """A length-n object column that costs no memory (a broadcast view): the ledger never reads it."""
    return np.broadcast_to(np.array([value], dtype=object), (n,))


def _frame(rank: npt.NDArray[np.int64], step: npt.NDArray[np.int64], names: npt.NDArray[np.object_],
           start: F64, end: F64) -> SpanFrame:
    n = len(start)
    return SpanFrame(job_id=_const(n, "bench-job"), rank=rank, step=step, name=names, start_s=start,
                     end_s=end, gpu_id=_const(n, None), node_id=_const(n, None),
                     trace_id=_const(n, None), span_id=_const(n, None), parent_id=_const(n, None))


def _schedule() -> tuple[F64, npt.NDArray[np.int64]]:
    """Global step start times and numbers: steps of 20 s, a crash after step 90 of which the
    job restarts 300 s later at step 80 (last checkpoint)."""
    starts: list[float] = []
    numbers: list[int] = []
    t, k, crashed = 60.0, 0, False
    while t + STEP_S < HOUR_S:
        starts.append(t)
        numbers.append(k)
        t += STEP_S
        k += 1
        if k == 91 and not crashed:
            t, k, crashed = t + 300.0, 80, True
    return np.array(starts), np.array(numbers, dtype=np.int64)


def synthesise(seed: int = 0) -> tuple[SpanFrame, SpanFrame, int]:
    rng = np.random.default_rng(seed)
    starts, numbers = _schedule()
    n_steps = len(starts)
    rank = np.repeat(np.arange(RANKS, dtype=np.int64), n_steps)
    s0 = T0 + np.tile(starts, RANKS)
    step = np.tile(numbers, RANKS)
    jitter = rng.normal(0.0, 0.05, len(s0))              # per rank-step compute jitter (s)
    fwd_end = s0 + 0.3 + 6.0 + jitter
    bwd_end = fwd_end + 11.0
    ar_end = bwd_end + 1.0 + np.maximum(0.2 - jitter, 0.0)   # fast ranks wait longer
    opt_end = np.minimum(ar_end + 0.5, s0 + STEP_S - 0.05)
    steps = _frame(rank, step, _const(len(s0), "train_step"), s0, opt_end)
    names = np.empty(5 * len(s0), dtype=object)
    for i, name in enumerate(("data_load", "forward", "backward", "allreduce", "optimizer")):
        names[i::5] = name
    kid_start = np.stack([s0, s0 + 0.3, fwd_end, bwd_end - 3.0, ar_end], axis=1).ravel()
    kid_end = np.stack([s0 + 0.3, fwd_end, bwd_end, ar_end, opt_end], axis=1).ravel()
    others = _frame(np.repeat(rank, 5), np.full(5 * len(s0), -1, dtype=np.int64), names,
                    kid_start, kid_end)
    return steps, others, n_steps


def main() -> None:
    t = time.perf_counter()
    steps, others, n_steps = synthesise()
    synth_s = time.perf_counter() - t
    job = Job(id="bench-job", sla_id=None, storage=None,
              model=ModelShape(params=70e9, layers=80, hidden=8192, seq_len=4096), precision="bf16",
              parallelism={"dp": 1280, "tp": 8}, ranks=(), tokens_per_step=160 * 2**20,
              target_tokens=15e12)
    inputs = JobInputs(n_gpus=RANKS, peak_flops_per_gpu=989e12, price_per_gpu_h=2.5)
    tracemalloc.start()
    t = time.perf_counter()
    split = split_job(steps, others, GoodputConfig())
    ledger = build_job_ledger(job, split, inputs, "palm", EconomicsConfig())
    ledger_s = time.perf_counter() - t
    _, peak_b = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    split_shares = ledger.time_split()
    rows = [
        ("ranks x steps", f"{RANKS} x {n_steps}"),
        ("spans", f"{len(steps) + len(others):,}"),
        ("synthesis (s)", f"{synth_s:.1f}"),
        ("ledger wall time (s)", f"{ledger_s:.1f}"),
        ("ledger peak traced memory (MiB)", f"{peak_b / 2**20:,.0f}"),
        ("process max RSS (MiB)", f"{rss_mib:,.0f}"),
        ("MFU / goodput", f"{ledger.mfu:.3f} / {ledger.goodput:.3f}"),
        ("time split", ", ".join(f"{k} {v:.3f}" for k, v in split_shares.items())),
        ("interruptions", str(len(split.interruptions))),
    ]
    width = max(len(r[0]) for r in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    out = Path(__file__).parent / "results" / "ledger.md"
    out.parent.mkdir(exist_ok=True)
    body = "\n".join(f"| {k} | {v} |" for k, v in rows)
    out.write_text(
        "## ledger\n\nThe efficiency ledger (`split_job` + `build_job_ledger`) of one 10,240-GPU job\n"
        "over one simulated hour: every rank's train_step and five phase spans synthesised as\n"
        "SpanFrames, with a checkpoint rollback of 10 steps. Machine: 2 shared cores.\n\n"
        f"| measure | value |\n| --- | --- |\n{body}\n")


if __name__ == "__main__":
    main()
