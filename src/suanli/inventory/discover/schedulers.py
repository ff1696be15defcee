"""Jobs from what the schedulers say: Kubernetes pods (``kubectl get pods -o json``) and Slurm
(``scontrol show job -d``). A job's ranks are its GPUs in order (pods by name, or Slurm's nodes in
its node list, then GPU index): a positional numbering the training's own spans
(``framework.pytorch.rank``) override.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from suanli.errors import InputError

__all__ = ["JobSeen", "expand_hostlist", "jobs_from_pods", "jobs_from_slurm"]

_JOB_LABELS = ("training.kubeflow.org/job-name", "job-name", "batch.kubernetes.io/job-name",
               "app.kubernetes.io/instance", "app")


@dataclass
class JobSeen:
    id: str
    source: str
    gpus: list[tuple[str, int, str | None]] = field(default_factory=list)
    """(node, GPU index, pod) in rank order."""
    nodes: list[str] = field(default_factory=list)


def _job_of(meta: Mapping[str, Any]) -> str:
    labels = meta.get("labels") or {}
    for name in _JOB_LABELS:
        if labels.get(name):
            return str(labels[name])
    owners = meta.get("ownerReferences") or []
    return str(owners[0]["name"]) if owners and owners[0].get("name") else str(meta.get("name"))


def _gpu_request(spec: Mapping[str, Any]) -> int:
    total = 0
    for c in spec.get("containers") or []:
        limits = (c.get("resources") or {}).get("limits") or {}
        text = str(limits.get("nvidia.com/gpu", "0"))
        total += int(text) if text.isdigit() else 0
    return total


def jobs_from_pods(text: str, pod_gpus: Mapping[tuple[str, str], list[tuple[str, int]]],
                   source: str = "pods.json") -> list[JobSeen]:
    """Jobs of the pods that hold GPUs. ``pod_gpus``: (namespace, pod) -> (node, index) from
    dcgm-exporter's pod labels; a pod that asks for GPUs the exporter does not attribute gets its
    node only (reported by the caller)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f"not JSON ({err.msg})", file=source, line=err.lineno) from None
    items = doc.get("items") if isinstance(doc, dict) else None
    if not isinstance(items, list):
        raise InputError("expected the output of 'kubectl get pods -o json' (an object with items)", file=source)
    jobs: dict[str, JobSeen] = {}
    for pod in sorted(items, key=lambda p: str((p.get("metadata") or {}).get("name"))):
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
        gpus = sorted(pod_gpus.get(key, []))
        if not gpus and _gpu_request(spec) == 0:
            continue
        job = jobs.setdefault(_job_of(meta), JobSeen(_job_of(meta), source))
        job.gpus.extend((node, idx, key[1]) for node, idx in gpus)
        node_name = spec.get("nodeName")
        if node_name and node_name not in job.nodes:
            job.nodes.append(str(node_name))
    return list(jobs.values())


_RANGE = re.compile(r"^(\d+)-(\d+)$")


def expand_hostlist(text: str) -> list[str]:
    """Slurm host list ``node-[001-003,007],gpu1`` -> host names."""
    out: list[str] = []
    for part in re.findall(r"[^,\[]*(?:\[[^\]]*\][^,\[]*)*", text):
        if part:
            out.extend(_expand_one(part))
    return out


def _expand_one(part: str) -> Iterator[str]:
    m = re.search(r"\[([^\]]*)\]", part)
    if m is None:
        yield part
        return
    head, tail = part[:m.start()], part[m.end():]
    for item in m.group(1).split(","):
        r = _RANGE.match(item)
        values = ([str(i).zfill(len(r.group(1))) for i in range(int(r.group(1)), int(r.group(2)) + 1)]
                  if r else [item])
        for v in values:
            yield from _expand_one(head + v + tail)


def _indices(gres: str) -> list[int]:
    """``gpu:8(IDX:0-3,6)`` or ``gpu:h100:4(IDX:0-3)`` -> [0, 1, 2, 3, 6]."""
    m = re.search(r"IDX:([0-9,\-]+)", gres)
    out: list[int] = []
    for item in (m.group(1).split(",") if m else []):
        a, _, b = item.partition("-")
        out.extend(range(int(a), int(b or a) + 1))
    return out


def jobs_from_slurm(text: str, source: str = "scontrol.txt") -> list[JobSeen]:
    """Jobs of ``scontrol show job -d`` output (running ones; others are skipped)."""
    jobs: list[JobSeen] = []
    for block in re.split(r"\n\s*\n", text.strip()):
        fields = dict(re.findall(r"(\w+)=(\S*)", block.split("\n", 1)[0] + " " + block))
        if "JobId" not in fields:
            continue
        if fields.get("JobState", "RUNNING") != "RUNNING":
            continue
        job = JobSeen(fields.get("JobName") or f"slurm-{fields['JobId']}", source)
        job.nodes = expand_hostlist(fields.get("NodeList", ""))
        for line in block.splitlines():
            m = re.match(r"\s+Nodes=(\S+)\s.*GRES=(\S+)", line)
            if m:
                for node in expand_hostlist(m.group(1)):
                    job.gpus.extend((node, i, None) for i in _indices(m.group(2)))
        jobs.append(job)
    return jobs
