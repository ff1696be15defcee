"""Who this process is: job, rank, host, GPU, collective group (the probe's resource attributes).

Read without importing torch: torch.distributed is asked only when the program imported it
already; otherwise the launcher's variables (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, set by
torchrun) are read. The GPU UUID comes from NVML (``nvidia-ml-py``) when a GPU is there.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Mapping
from typing import Any

from suanli.probe.config import ProbeConfig

__all__ = ["dist_rank_world", "gpu_uuid", "nccl_group", "process_start_ns", "resource_attributes"]


def _env_int(env: Mapping[str, str], key: str) -> int | None:
    try:
        return int(env[key])
    except (KeyError, ValueError):
        return None


def dist_rank_world(env: Mapping[str, str] | None = None) -> tuple[int | None, int | None]:
    """(rank, world size) from an initialised torch.distributed, else from RANK / WORLD_SIZE."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_rank()), int(dist.get_world_size())
    except Exception:  # a half-initialised process group: fall back to the launcher's variables
        pass
    e = os.environ if env is None else env
    return _env_int(e, "RANK"), _env_int(e, "WORLD_SIZE")


def _visible_index(local_index: int, env: Mapping[str, str]) -> int | str:
    """The NVML index (or UUID) of the ``local_index``-th visible device (CUDA_VISIBLE_DEVICES)."""
    visible = [v.strip() for v in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    if local_index < len(visible):
        entry = visible[local_index]
        return entry if entry.startswith(("GPU-", "MIG-")) else int(entry) if entry.isdigit() else local_index
    return local_index


def gpu_uuid(local_index: int, env: Mapping[str, str] | None = None) -> str | None:
    """UUID of this process's GPU through NVML; None without a GPU, a driver or nvidia-ml-py."""
    e = os.environ if env is None else env
    which = _visible_index(local_index, e)
    if isinstance(which, str):
        return which
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            uuid = pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetHandleByIndex(which))
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no library, no driver, no such device: no UUID, never an error
        return None
    return uuid.decode() if isinstance(uuid, bytes) else str(uuid)


def nccl_group(job_id: str, rank: int, world: int, parallelism: Mapping[str, int] | None
               ) -> tuple[str, int] | None:
    """(data-parallel group id, rank inside it), named as suanli.inventory.groups names groups."""
    from suanli.inventory.groups import megatron_groups

    par = dict(parallelism) if parallelism else {"dp": world}
    try:
        groups = megatron_groups(job_id, par).get("dp", [])
    except (ValueError, TypeError):
        return None
    for g in groups:
        if rank in g.ranks:
            return g.id, g.ranks.index(rank)
    return None


def process_start_ns() -> int:
    """When this process started (Linux: /proc), else now; the ``init`` span starts here."""
    try:
        with open("/proc/self/stat", encoding="ascii") as fh:
            ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat", encoding="ascii") as fh:
            btime = next(int(line.split()[1]) for line in fh if line.startswith("btime"))
        start = btime + ticks / os.sysconf("SC_CLK_TCK")
        return int(start * 1e9) if start <= time.time() else time.time_ns()
    except (OSError, ValueError, IndexError, StopIteration):
        return time.time_ns()


def resource_attributes(cfg: ProbeConfig, env_attrs: Mapping[str, Any], rank: int, world: int
                        ) -> dict[str, Any]:
    """Detected attributes, overridden by OTEL_RESOURCE_ATTRIBUTES, overridden by the config."""
    job = cfg.job_id or str(env_attrs.get("job.id") or "")
    e = os.environ
    local = cfg.local_rank if cfg.local_rank is not None else (_env_int(e, "LOCAL_RANK") or 0)
    found: dict[str, Any] = {"host.name": socket.gethostname(), "framework.pytorch.rank": rank}
    uuid = gpu_uuid(local)
    if uuid:
        found["resource.gpu.id"] = uuid
    group = nccl_group(job, rank, world, cfg.parallelism) if job else None
    if group is not None:
        found["nccl.group_id"], found["nccl.rank"] = group
    found.update(env_attrs)
    given = {"job.id": job or None, "framework.pytorch.rank": cfg.rank, "host.name": cfg.host,
             "resource.gpu.id": cfg.gpu_uuid, "business.sla_id": cfg.sla_id,
             "nccl.group_id": cfg.nccl_group_id, "nccl.rank": cfg.nccl_rank}
    found.update({k: v for k, v in given.items() if v is not None})
    found.update(cfg.resource_attributes)
    return found
