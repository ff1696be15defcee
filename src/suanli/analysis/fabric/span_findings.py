"""The job side of the fabric analysis: gpu_straggler and storage_slow findings from the spans."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from suanli.analysis.categories import policy
from suanli.analysis.fabric.inputs import M
from suanli.analysis.fabric.storage import StorageConfig, StorageVerdict, data_load_per_step, judge_storage
from suanli.analysis.fabric.stragglers import (
    PhaseMatrix,
    StragglerConfig,
    StragglerScores,
    phase_matrix,
    straggler_scores,
)
from suanli.analysis.findings import Finding, Symptom
from suanli.analysis.median import median
from suanli.inventory.model import rank_id
from suanli.store.api import Store

if TYPE_CHECKING:
    from suanli.inventory.catalog import Inventory

__all__ = ["JobPhases", "gpu_levels", "gpu_suspects", "job_phases", "storage_findings", "straggler_findings"]

_PHASES = ("forward", "backward", "optimizer", "allreduce", "data_load")


def _rank_gpus(inv: Inventory, job_id: str, latest: dict[int, str | None]) -> dict[int, str]:
    """rank -> GPU: the GPU of the rank's latest span (``latest``: ``Store.rank_gpus``; a restarted
    job may have moved to a spare node), else the inventory's placement."""
    job = inv.jobs.get(job_id)
    out: dict[int, str] = {rk.rank: rk.gpu for rk in job.ranks} if job is not None else {}
    for r, g in latest.items():
        if isinstance(g, str) and g in inv.gpus:
            out[r] = g
    return out


def gpu_levels(store: Store, metric: str, span: tuple[float, float]) -> dict[str, tuple[float, float]]:
    """GPU -> (median of the first quarter, median of the last quarter) of a gauge."""
    out: dict[str, tuple[float, float]] = {}
    for s in store.series(metric, start=span[0], end=span[1]):
        v = s.values[np.isfinite(s.values)]
        if s.key.entity_kind == "gpu" and s.key.entity_id and len(v) >= 4:
            q = max(1, len(v) // 4)
            out[s.key.entity_id] = (median(v[:q]), median(v[-q:]))
    return out


def gpu_suspects(store: Store, span: tuple[float, float], config: StragglerConfig) -> set[str]:
    """GPUs that are hot or lost NVLink bandwidth: health's faults, not stragglers."""
    hot = {g for g, (_, late) in gpu_levels(store, M.GPU_TEMP, span).items() if late >= config.hot_gpu_c}
    nvl = {g for g, (early, late) in gpu_levels(store, M.NVLINK, span).items()
           if early > 0 and late < config.nvlink_drop_ratio * early}
    return hot | nvl


def _pick(flagged: list[tuple[int, str]], clocks: dict[str, tuple[float, float]],
          config: StragglerConfig) -> list[tuple[int, str]]:
    """One straggler among several slow ranks of a job: the clearly lowest SM clock, else none."""
    if len(flagged) <= 1:
        return flagged
    late = [(clocks[g][1], r, g) for r, g in flagged if g in clocks]
    if len(late) == len(flagged):
        late.sort()
        rest = median([c for c, _, _ in late[1:]])
        if late[0][0] < config.clock_ratio * rest:
            return [(late[0][1], late[0][2])]
    return []


@dataclass(frozen=True)
class JobPhases:
    """What the straggler and storage tests need of one job's phase spans, small enough to keep
    for every job: its ranks x steps compute and allreduce seconds, each rank's GPU, and its median
    data_load per step."""

    matrix: PhaseMatrix
    rank_gpus: dict[int, str]
    data_load: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]


def job_phases(store: Store, inv: Inventory, span: tuple[float, float]) -> dict[str, JobPhases]:
    """Every inventory job with phase spans in ``span``, summarised. One job's spans are read and
    dropped before the next job's: at 10,240 GPUs a job has 40 M phase spans (2.2 GB as columns),
    and holding every job's at once was most of this analysis' 10.5 GB peak (issue 18)."""
    out = {}
    for job_id in sorted(inv.jobs):
        frame = store.spans(job_id, names=_PHASES, start=span[0], end=span[1], ids=False, places=False)
        if len(frame):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                m = phase_matrix(frame)
            latest = store.rank_gpus(job_id, names=_PHASES, start=span[0], end=span[1])
            out[job_id] = JobPhases(m, _rank_gpus(inv, job_id, latest), data_load_per_step(frame))
        del frame
    return out


def straggler_findings(store: Store, inv: Inventory, span: tuple[float, float], suspects: set[str],
                       config: StragglerConfig, scores_out: dict[str, float],
                       jobs: dict[str, JobPhases]) -> list[Finding]:
    """gpu_straggler per job (GPUs with hardware evidence left to health)."""
    out: list[Finding] = []
    suspects = suspects | gpu_suspects(store, span, config)
    clocks = gpu_levels(store, M.SM_CLOCK, span)
    for job_id, phases in jobs.items():
        m, gpus = phases.matrix, phases.rank_gpus
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            sc = straggler_scores(m, config)
        for i, r in enumerate(sc.ranks.tolist()):
            g = gpus.get(int(r))
            if g is not None:
                scores_out[g] = max(scores_out.get(g, 0.0), float(sc.score[i]))
        flagged = [(i, gpus[int(sc.ranks[i])]) for i in np.flatnonzero(sc.score >= config.min_score).tolist()
                   if int(sc.ranks[i]) in gpus]
        if any(g in suspects for _, g in flagged):
            continue
        for i, g in _pick(flagged, clocks, config):
            out.append(_straggler(job_id, i, g, m, sc, clocks.get(g)))
    return out


def _straggler(job_id: str, i: int, g: str, m: PhaseMatrix, sc: StragglerScores,
               clock: tuple[float, float] | None) -> Finding:
    r = int(sc.ranks[i])
    onset = float(m.step_start_s[sc.onset_step[i]])
    victims = tuple(Symptom("rank", rank_id(job_id, int(v)), "waits in allreduce", onset)
                    for v in sc.ranks.tolist() if v != r)
    ev = [f"{rank_id(job_id, r)} on {g}: compute {sc.slow_ratio[i]:.2f}x the step median in "
          f"{sc.score[i]:.0%} of steps since step {int(m.steps[sc.onset_step[i]])}",
          f"its allreduce {sc.comm_ratio[i]:.2f}x the median (others wait on it); no hardware error"]
    if clock is not None:
        ev.append(f"{g} SM clock {clock[1]:.0f} MHz (was {clock[0]:.0f} MHz)")
    conf_of = policy("gpu_straggler").confidence
    return Finding("gpu_straggler", "gpu", g, onset, None, float(min(conf_of.cap, conf_of.weak + sc.score[i] / 2)),
                   tuple(ev), "stragglers", detected_at=onset, symptoms=victims,
                   extra={"jobs": [job_id], "rank": r, "straggler_score": float(sc.score[i])})


def _verdicts(store: Store, inv: Inventory, span: tuple[float, float], config: StorageConfig,
              phases: dict[str, JobPhases]) -> list[StorageVerdict]:
    out = []
    for sid in sorted(inv.storage):
        jobs = [j for j in sorted(inv.jobs) if inv.jobs[j].storage == sid and j in phases]
        steps = {}
        for j in jobs:
            t, v = phases[j].data_load
            if len(t):
                steps[j] = (t, v)
        lat = [s for s in store.series(M.STORAGE_LAT, start=span[0], end=span[1]) if s.key.entity_id == sid]
        latency = (lat[0].ts, lat[0].values) if lat else None
        out.append(judge_storage(sid, steps, latency, config))
    return out


def storage_findings(store: Store, inv: Inventory, span: tuple[float, float],
                     config: StorageConfig, phases: dict[str, JobPhases]) -> list[Finding]:
    """storage_slow for each storage whose every reading job slowed in data_load."""
    out = []
    for v in _verdicts(store, inv, span, config, phases):
        if not v.slow or v.onset_s is None:
            continue
        ev = [f"{j}: data_load {c.after:.3g} s per step (baseline {c.before:.3g} s)" for j, c in v.job_changes.items()]
        ev += [f"{j}: waits for data {x:.0%} of its step or more since the window opened (healthy: a few %)"
               for j, x in v.load_share.items() if j not in v.job_changes]
        if v.latency_change is not None:
            c = v.latency_change
            ev.insert(0, f"{v.storage_id} read latency {c.after * 1e3:.3g} ms (baseline {c.before * 1e3:.3g} ms)")
        sym = tuple(Symptom("job", j, "data_load slow", v.job_changes[j].onset_s if j in v.job_changes else v.onset_s)
                    for j in sorted({*v.job_changes, *v.load_share}))
        conf_of = policy("storage_slow").confidence
        conf = conf_of.strong if v.latency_change is not None else conf_of.weak
        out.append(Finding("storage_slow", "storage", v.storage_id, v.onset_s, None, conf, tuple(ev),
                           "fabric", detected_at=v.onset_s, symptoms=sym, extra={"jobs": sorted({*v.jobs_slowed, *v.load_share})}))
    return out
