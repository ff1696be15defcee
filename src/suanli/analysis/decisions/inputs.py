"""The decision input of one incident from what suanli already holds: the inventory (GPUs, prices,
pods, spare nodes), the store's spans (pace, checkpoints, restarts) and the incident's planned
actions and evidence. The pipeline's actions stage calls :func:`incident_facts`; the pure pieces
(:func:`suspect_of`, :func:`capacity_of`, :func:`allowed_of`, :func:`code_of`) also serve callers
that read the diagnosis JSON instead (bench/decisions.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from suanli.analysis.decisions.config import DEFAULT_CONFIG, DecisionConfig
from suanli.analysis.decisions.facts import checkpoints, pace, restart_time
from suanli.analysis.decisions.model import AllowedAction, Capacity, IncidentFacts, JobFacts, Suspect
from suanli.ingest.xid import xid_info
from suanli.inventory import Inventory
from suanli.store.api import Store
from suanli.store.history import NO_HISTORY, History

__all__ = ["Arrays", "allowed_of", "capacity_of", "code_of", "facts_for", "incident_facts", "job_arrays", "job_base", "job_facts", "suspect_of"]

Arrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""(step ends, step durations, checkpoint_save ends, init starts) of one job."""

_XID = re.compile(r"\bXid (\d{1,4})\b")


def code_of(evidence: Iterable[str]) -> tuple[str | None, bool]:
    """(``xid:N`` of the first Xid the evidence names, whether NVIDIA asks a reset/reboot for it)."""
    for line in evidence:
        m = _XID.search(line)
        if m:
            code = int(m.group(1))
            return f"xid:{code}", xid_info(code).recommended_action in ("RESET_GPU", "REBOOT_SYSTEM")
    return None, False


def allowed_of(actions: Sequence[Mapping[str, Any]]) -> tuple[AllowedAction, ...]:
    """The incident's planned ``actions[]`` (rule pack or category defaults) as the allowed set."""
    out, seen = [], set()
    for a in actions:
        key = (str(a.get("action")), str(a.get("target")))
        if key not in seen:
            seen.add(key)
            out.append(AllowedAction(key[0], key[1], {k: v for k, v in a.items() if k not in ("action", "target")}))
    return tuple(out)


def _nodes_of(inv: Inventory, root_kind: str, root_id: str) -> tuple[str, ...]:
    head = root_id.split("/", 1)[0]
    if root_kind in ("gpu", "nic", "nvswitch") and head in inv.nodes:
        return (head,)
    if root_kind == "node" and root_id in inv.nodes:
        return (root_id,)
    if root_kind == "switch_port":
        return tuple(sorted({c.node for c in inv.nics.values() if c.switch_port == root_id}))
    return ()


def suspect_of(inv: Inventory, root_kind: str, root_id: str) -> Suspect:
    """What an exclusion would leave out: the GPU (UUID, pods on it) and the node(s)."""
    nodes = _nodes_of(inv, root_kind, root_id)
    node_gpus = len(inv.nodes[nodes[0]].gpus) if nodes else None
    if root_kind != "gpu" or root_id not in inv.gpus:
        return Suspect(nodes=nodes, node_gpus=node_gpus)
    pods = sorted({r.pod for j in inv.jobs.values() for r in j.ranks if r.gpu == root_id and r.pod})
    return Suspect(root_id, inv.gpus[root_id].uuid, tuple(pods), nodes, node_gpus)


def capacity_of(inv: Inventory, exclude: Iterable[str] = ()) -> Capacity:
    """Spare capacity today: nodes whose GPUs no job's ranks use (inventory.yaml has no explicit
    spare list), minus the nodes given (the suspect ones)."""
    busy = {inv.gpus[r.gpu].node for j in inv.jobs.values() for r in j.ranks if r.gpu in inv.gpus}
    free = [n for n in inv.nodes.values() if n.id not in busy and n.id not in set(exclude)]
    return Capacity(spare_gpus=sum(len(n.gpus) for n in free), spare_nodes=len(free))


def job_base(inv: Inventory, job_id: str, suspect: Suspect, degraded: bool = True) -> JobFacts:
    """What the inventory says of a job: its GPUs, price, ranks on the suspect node(s), ``elastic``."""
    job = inv.jobs[job_id]
    gpus = len(job.ranks) or job.world_size
    price = next((p for r in job.ranks if (p := inv.gpu_price(r.gpu))), None)
    on = sum(1 for r in job.ranks if r.gpu in inv.gpus and inv.gpus[r.gpu].node in suspect.nodes)
    elastic = job.extra.get("elastic")
    in_pods = sum(1 for r in job.ranks if r.pod and r.pod in suspect.pods) if suspect.pods else None
    return JobFacts(job_id, gpus, price, elastic=elastic if isinstance(elastic, bool) else None,
                    gpus_on_suspect=on if job.ranks else None, degraded=degraded, gpus_in_suspect_pods=in_pods)


def job_facts(base: JobFacts, step_end: np.ndarray, step_s: np.ndarray, ckpt_end: np.ndarray,
              init_start: np.ndarray, onset_s: float, now_s: float, cfg: DecisionConfig) -> JobFacts:
    """``base`` (from the inventory) completed with what the spans say."""
    p = pace(step_end, step_s, onset_s, now_s, min_baseline=cfg.min_baseline_steps, recent=cfg.recent_steps,
             stall_steps=cfg.stall_steps)
    c = checkpoints(ckpt_end, step_end, now_s, p.healthy_step_s)
    return JobFacts(base.job_id, base.gpus, base.gpu_hour_price, p.healthy_step_s, p.current_step_s, p.stalled,
                    c.progress_since_checkpoint_s, c.checkpoint_interval_s,
                    restart_time(init_start, np.asarray(step_end) - np.asarray(step_s)), base.elastic,
                    base.gpus_on_suspect, base.degraded, base.gpus_in_suspect_pods)


def job_arrays(store: Store, job_id: str, now_s: float) -> Arrays:
    """(step ends, step durations, checkpoint_save ends, init starts) of a job up to ``now_s``; a
    step runs from its first rank's start to its last rank's end."""
    steps = store.spans(job_id=job_id, names=["train_step"], end=now_s, ids=False)
    known = steps.step >= 0
    order = np.argsort(steps.step[known], kind="stable")
    nums, ends, starts = steps.step[known][order], steps.end_s[known][order], steps.start_s[known][order]
    if len(nums):
        _, first = np.unique(nums, return_index=True)
        ends, starts = np.maximum.reduceat(ends, first), np.minimum.reduceat(starts, first)
    ckpt = store.spans(job_id=job_id, names=["checkpoint_save"], end=now_s, ids=False)
    init = store.spans(job_id=job_id, names=["init"], end=now_s, ids=False)
    return ends, ends - starts, ckpt.end_s, init.start_s


def facts_for(inv: Inventory, arrays: Callable[[str], Arrays], *, incident_id: str, category: str, root_kind: str,
              root_id: str, onset_s: float, now_s: float, job_ids: Iterable[str],
              actions: Sequence[Mapping[str, Any]], evidence: Iterable[str] = (),
              history: History = NO_HISTORY, config: DecisionConfig = DEFAULT_CONFIG) -> IncidentFacts:
    """Everything :func:`~suanli.analysis.decisions.decide` needs about one incident, with each
    job's span arrays from ``arrays(job_id)`` (the store's, or a trace file's)."""
    suspect = suspect_of(inv, root_kind, root_id)
    behind = [j for j in job_ids if j in inv.jobs]
    sharing = sorted({r.job for j in inv.jobs.values() for r in j.ranks
                      if r.gpu in inv.gpus and inv.gpus[r.gpu].node in suspect.nodes} - set(behind))
    jobs = [job_facts(job_base(inv, jid, suspect, degraded), *arrays(jid), onset_s, now_s, config)
            for jid, degraded in [(j, True) for j in behind] + [(j, False) for j in sharing]]
    code, asks = code_of(evidence)
    return IncidentFacts(incident_id, category, root_kind, root_id, onset_s, now_s, allowed_of(actions),
                         tuple(jobs), suspect, capacity_of(inv, suspect.nodes), code, asks, inv.currency, history)


def incident_facts(store: Store, inv: Inventory, *, now_s: float, **kw: Any) -> IncidentFacts:
    """:func:`facts_for` with the spans read from the store (the pipeline's actions stage)."""
    return facts_for(inv, lambda job: job_arrays(store, job, now_s), now_s=now_s, **kw)
