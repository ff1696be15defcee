"""OTLP JSON lines: one ExportTraceServiceRequest per line, one line per rank per batch of steps."""

from __future__ import annotations

import hashlib
import json
from typing import Any, TextIO

import numpy as np

from suanli.sim.cluster import SimCluster
from suanli.sim.network import dp_groups
from suanli.sim.timeline import JobTimeline

__all__ = ["write_traces"]

STEPS_PER_LINE = 16


def _hid(nbytes: int, *parts: object) -> str:
    return hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=nbytes).hexdigest()


def _attr(key: str, v: object) -> dict[str, Any]:
    if isinstance(v, bool | str):
        return {"key": key, "value": {"stringValue": str(v)}}
    if isinstance(v, int):
        return {"key": key, "value": {"intValue": str(v)}}
    return {"key": key, "value": {"doubleValue": float(v)}}   # type: ignore[arg-type]


def _span(trace: str, sid: str, parent: str | None, name: str, a: float, b: float,
          attrs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    s: dict[str, Any] = {"traceId": trace, "spanId": sid}
    if parent:
        s["parentSpanId"] = parent
    s.update({"name": name, "kind": 1, "startTimeUnixNano": str(round(a * 1e9)),
              "endTimeUnixNano": str(round(b * 1e9))})
    if attrs:
        s["attributes"] = attrs
    return s


def _resource(c: SimCluster, tl: JobTimeline, r: int, group: str, grank: int, gpu_id_attr: str) -> dict[str, Any]:
    job = tl.job
    node_id, g = job.ranks[r].split("/gpu")
    gpu = job.ranks[r] if gpu_id_attr == "canonical" else c.node(node_id).gpu_uuids[int(g)]
    attrs = [_attr("service.name", "trainer"), _attr("job.id", job.id), _attr("framework.pytorch.rank", r),
             _attr("resource.gpu.id", gpu), _attr("host.name", node_id),
             _attr("business.sla_id", job.sla_id)]
    if job.pods:
        attrs.append(_attr("k8s.pod.name", job.pods[r]))
    attrs += [_attr("nccl.group_id", group), _attr("nccl.rank", grank)]
    return {"attributes": attrs}


def _ns(x: np.ndarray) -> list[str]:
    """Epoch seconds to exact integer nanoseconds (whole seconds apart, so float64 keeps the ns)."""
    whole = np.floor(x)
    ns = whole.astype(np.int64) * 1_000_000_000 + np.round((x - whole) * 1e9).astype(np.int64)
    return [str(v) for v in ns.tolist()]


def _phase(trace: str, sid: str, parent: str, name: str, a: str, b: str, attrs: str = "") -> str:
    return (f'{{"traceId":"{trace}","spanId":"{sid}","parentSpanId":"{parent}","name":"{name}","kind":1,'
            f'"startTimeUnixNano":"{a}","endTimeUnixNano":"{b}"{attrs}}}')


def _rank_steps(tl: JobTimeline, traces: list[str], r: int, ks: list[int], ar_attrs: str,
                base_id: int) -> list[str]:
    """JSON text of every span of rank ``r`` in steps ``ks`` (six per step), built from templates."""
    job = tl.job
    t0 = np.asarray([tl.t0[k] for k in ks])
    dl = np.asarray([float(tl.dl[k][r]) for k in ks])
    f0 = t0 + np.asarray([float(tl.dl[k].max()) + tl.bubble[k] for k in ks])
    f1 = f0 + np.asarray([float(tl.fwd[k][r]) for k in ks])
    b1 = f1 + np.asarray([float(tl.bwd[k][r]) for k in ks])
    ar0 = t0 + np.asarray([float(tl.ar_start[k][r]) for k in ks])
    sync = np.maximum(t0 + np.asarray([tl.sync[k] for k in ks]), ar0)
    end = t0 + np.asarray([tl.step_s[k] for k in ks])
    cols = [_ns(x) for x in (t0, t0 + dl, f0, f1, b1, ar0, sync, end)]
    tokens = job.tokens_per_step // job.world
    flops = (6.0 * job.params + 12.0 * job.layers * job.hidden * job.seq_len) * job.tokens_per_step / job.world
    out = []
    for i, k in enumerate(ks):
        a, dle, fa, fb, bb, ra, sy, en = (c[i] for c in cols)
        step, trace = tl.steps[k], traces[k]
        ids = [f"{(base_id + step * 8 + p) % (1 << 64) or 1:016x}" for p in range(6)]
        root = ids[5]
        step_attrs = (f',"attributes":[{{"key":"train.step","value":{{"intValue":"{step}"}}}},'
                      f'{{"key":"train.tokens","value":{{"intValue":"{tokens}"}}}},'
                      f'{{"key":"train.model_flops","value":{{"doubleValue":{flops!r}}}}}]')
        out += [_phase(trace, ids[0], root, "data_load", a, dle), _phase(trace, ids[1], root, "forward", fa, fb),
                _phase(trace, ids[2], root, "backward", fb, bb),
                _phase(trace, ids[3], root, "allreduce", ra, sy, ar_attrs),
                _phase(trace, ids[4], root, "optimizer", sy, en),
                f'{{"traceId":"{trace}","spanId":"{root}","name":"train_step","kind":1,'
                f'"startTimeUnixNano":"{a}","endTimeUnixNano":"{en}"{step_attrs}}}']
    return out


def _extra_spans(tl: JobTimeline, seed: int, r: int) -> list[dict[str, Any]]:
    out = []
    for a, b, step in tl.checkpoints:
        out.append(_span(_hid(16, seed, tl.job.id, "ckpt", step), _hid(8, seed, tl.job.id, "ckpt", step, r),
                         None, "checkpoint_save", a, b, [_attr("train.step", step)]))
    for i, (a, b, c) in enumerate(tl.inits):
        trace = _hid(16, seed, tl.job.id, "init", i)
        out.append(_span(trace, _hid(8, trace, r, "i"), None, "init", a, b))
        out.append(_span(trace, _hid(8, trace, r, "l"), None, "checkpoint_load", b, c))
    return out + _hung_spans(tl, seed, r)


def _hung_spans(tl: JobTimeline, seed: int, r: int) -> list[dict[str, Any]]:
    """The phases a hung step finished on rank ``r``; its ``train_step`` never ends, so it is never exported."""
    out = []
    for t0, step, t_hang, dl, fwd, bwd, bubble in tl.hung:
        trace = _hid(16, seed, tl.job.id, "hung", step)
        root = _hid(8, trace, "train_step")
        f0 = t0 + float(dl.max()) + bubble
        phases = (("data_load", t0, t0 + float(dl[r])), ("forward", f0, f0 + float(fwd[r])),
                  ("backward", f0 + float(fwd[r]), f0 + float(fwd[r]) + float(bwd[r])))
        out += [_span(trace, _hid(8, trace, r, name), root, name, a, b) for name, a, b in phases if b <= t_hang]
    return out


def write_traces(f: TextIO, c: SimCluster, tls: list[JobTimeline], seed: int,
                 gpu_id_attr: str = "uuid") -> tuple[int, int]:
    """Writes every rank's spans, one line per rank per ``STEPS_PER_LINE`` steps; returns (lines, spans)."""
    lines = spans = 0
    scope = json.dumps({"name": "suanli.probe.torch", "version": "0.1.0"}, separators=(",", ":"))
    for tl in tls:
        job = tl.job
        group_of: dict[int, tuple[str, int]] = {}
        for gi, ranks in enumerate(dp_groups(job.dp, job.tp, job.pp)):
            pp_i, tp_i = divmod(gi, job.tp)
            for pos, r in enumerate(ranks):
                group_of[r] = (f"{job.id}/dp/pp{pp_i}-tp{tp_i}", pos)
        traces = [_hid(16, seed, job.id, step) for step in tl.steps]
        for r in range(job.world):
            group, grank = group_of[r]
            res = json.dumps(_resource(c, tl, r, group, grank, gpu_id_attr), separators=(",", ":"))
            ar_attrs = ',"attributes":' + json.dumps(
                [_attr("nccl.op", "allreduce"), _attr("nccl.bytes", int(tl.net.grad_bytes)),
                 _attr("nccl_group_id", group), _attr("nccl_rank", grank)], separators=(",", ":"))
            base_id = int(_hid(8, seed, job.id, r), 16)
            bodies = [_rank_steps(tl, traces, r, list(range(i, min(i + STEPS_PER_LINE, len(tl.steps)))),
                                  ar_attrs, base_id) for i in range(0, len(tl.steps), STEPS_PER_LINE)]
            extra = [json.dumps(x, separators=(",", ":")) for x in _extra_spans(tl, seed, r)]
            if extra:
                bodies.append(extra)
            for body in bodies:
                f.write(f'{{"resourceSpans":[{{"resource":{res},"scopeSpans":[{{"scope":{scope},'
                        f'"spans":[{",".join(body)}]}}]}}]}}\n')
                lines += 1
                spans += len(body)
    return lines, spans
