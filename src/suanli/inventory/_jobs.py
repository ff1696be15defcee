"""The ``jobs`` section of inventory.yaml: model shape, parallelism, ranks (validated)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

from suanli.inventory._fields import KeyPath, Reader
from suanli.inventory.model import Job, ModelShape, Rank
from suanli.timefmt import parse_time

__all__ = ["PARALLEL_DIMS", "parse_jobs"]

#: Parallelism dimensions in Megatron-LM order, fastest varying first (tp-cp-ep-dp-pp).
PARALLEL_DIMS: tuple[str, ...] = ("tp", "cp", "ep", "dp", "pp")

_JOB_KEYS = {"id", "sla_id", "storage", "model", "precision", "parallelism", "ranks", "tokens_per_step",
             "target_tokens", "start", "recompute", "activation_recompute"}

# ModelShape field -> accepted spellings (ours first, then Megatron / Hugging Face names)
_SHAPE_KEYS: dict[str, tuple[str, ...]] = {
    "params": ("params", "num_params", "parameters"),
    "layers": ("layers", "num_layers", "num_hidden_layers", "n_layers"),
    "hidden": ("hidden", "hidden_size", "d_model"),
    "seq_len": ("seq_len", "seq_length", "max_position_embeddings", "context_length"),
    "vocab": ("vocab", "vocab_size", "padded_vocab_size"),
    "heads": ("heads", "num_attention_heads", "n_heads"),
    "ffn_hidden": ("ffn_hidden", "ffn_hidden_size", "intermediate_size"),
    "active_params": ("active_params", "activated_params"),
    "flops_per_token": ("flops_per_token",),
}
_INT_FIELDS = {"layers", "hidden", "seq_len", "vocab", "heads", "ffn_hidden"}


def parse_jobs(rd: Reader, doc: Mapping[str, Any], gpu_ids: set[str], uuids: dict[str, str],
               storage_ids: set[str]) -> dict[str, Job]:
    """All jobs by id; rank GPUs may be canonical ids or UUIDs (stored as canonical ids)."""
    out: dict[str, Job] = {}
    for i, raw in enumerate(rd.seq(doc, "jobs", ())):
        path: KeyPath = ("jobs", i)
        job = _job(rd, rd.mapping(raw, path), path, gpu_ids, uuids, storage_ids)
        if job.id in out:
            rd.fail((*path, "id"), f"duplicate job id {job.id!r}")
        out[job.id] = job
    return out


def _job(rd: Reader, obj: Mapping[str, Any], path: KeyPath, gpu_ids: set[str], uuids: dict[str, str],
         storage_ids: set[str]) -> Job:
    jid = rd.req_text(obj, "id", path)
    storage = rd.text_of(obj, "storage", path)
    if storage is not None and storage not in storage_ids:
        rd.fail((*path, "storage"), f"unknown storage {storage!r}")
    parallelism = _parallelism(rd, obj, path)
    world = 1
    for n in parallelism.values():
        world *= n
    ranks = _ranks(rd, obj, path, jid, gpu_ids, uuids, world if "parallelism" in obj else None)
    return Job(
        id=jid, sla_id=rd.text_of(obj, "sla_id", path), storage=storage, model=_shape(rd, obj, path),
        precision=(rd.text_of(obj, "precision", path) or "bf16").lower(), parallelism=parallelism,
        ranks=ranks, tokens_per_step=rd.number(obj, "tokens_per_step", path),
        target_tokens=rd.number(obj, "target_tokens", path), start=_start(rd, obj, path),
        recompute=_recompute(rd, obj, path), extra={k: v for k, v in obj.items() if k not in _JOB_KEYS},
    )


def _parallelism(rd: Reader, obj: Mapping[str, Any], path: KeyPath) -> dict[str, int]:
    raw = obj.get("parallelism")
    ppath: KeyPath = (*path, "parallelism")
    body = rd.mapping(raw, ppath) if raw is not None else {}
    out: dict[str, int] = {}
    for dim in PARALLEL_DIMS:
        value = rd.integer(body, dim, ppath, minimum=1)
        out[dim] = value if value is not None else 1
    return out


def _ranks(rd: Reader, obj: Mapping[str, Any], path: KeyPath, jid: str, gpu_ids: set[str],
           uuids: dict[str, str], world: int | None) -> tuple[Rank, ...]:
    out: list[Rank] = []
    seen: set[int] = set()
    for k, raw in enumerate(rd.seq(obj, "ranks", path)):
        rpath: KeyPath = (*path, "ranks", k)
        robj = rd.mapping(raw, rpath)
        rank = rd.integer(robj, "rank", rpath, required=True, minimum=0)
        assert rank is not None
        if rank in seen:
            rd.fail((*rpath, "rank"), f"duplicate rank {rank}")
        if world is not None and rank >= world:
            rd.fail((*rpath, "rank"), f"rank {rank} is outside the world size {world} (product of parallelism)")
        seen.add(rank)
        gpu_text = rd.req_text(robj, "gpu", rpath)
        gpu = gpu_text if gpu_text in gpu_ids else uuids.get(gpu_text.lower())
        if gpu is None:
            rd.fail((*rpath, "gpu"), f"unknown gpu {gpu_text!r} (expected node/gpuN or a GPU UUID)")
        out.append(Rank(job=jid, rank=rank, gpu=gpu, pod=rd.text_of(robj, "pod", rpath),
                        container=rd.text_of(robj, "container", rpath)))
    out.sort(key=lambda r: r.rank)
    return tuple(out)


def _shape(rd: Reader, obj: Mapping[str, Any], path: KeyPath) -> ModelShape:
    raw = obj.get("model")
    if raw is None:
        return ModelShape()
    mpath: KeyPath = (*path, "model")
    body = rd.mapping(raw, mpath)
    values: dict[str, float | int | None] = {}
    for name, spellings in _SHAPE_KEYS.items():
        key = next((s for s in spellings if body.get(s) is not None), None)
        if key is None:
            continue
        if name in _INT_FIELDS:
            values[name] = rd.integer(body, key, mpath, minimum=1)
        else:
            value = rd.number(body, key, mpath)
            if value is not None and value <= 0:
                rd.fail((*mpath, key), f"expected a positive number, got {value}")
            values[name] = value
    return ModelShape(**values)  # type: ignore[arg-type]


def _start(rd: Reader, obj: Mapping[str, Any], path: KeyPath) -> float | None:
    value = obj.get("start")
    if value is None:
        return None
    if isinstance(value, date) and not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day)
    if isinstance(value, bool) or not isinstance(value, str | int | float | datetime):
        rd.fail((*path, "start"), "expected an RFC 3339 time like 2026-03-15T00:00:00Z")
    try:
        return parse_time(value)
    except (ValueError, OverflowError):
        rd.fail((*path, "start"), f"expected an RFC 3339 time like 2026-03-15T00:00:00Z, got {value!r}")


def _recompute(rd: Reader, obj: Mapping[str, Any], path: KeyPath) -> str | None:
    key = "recompute" if obj.get("recompute") is not None else "activation_recompute"
    value = obj.get(key)
    if value is None or value is False:
        return None
    if value is True:
        return "full"
    text = rd.text_of(obj, key, path)
    if text is None or text.lower() in {"none", "off", "no", "false"}:
        return None
    low = text.lower()
    if low not in {"full", "selective"}:
        rd.fail((*path, key), f"expected full, selective or none, got {text!r}")
    return low
