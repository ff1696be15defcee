"""A small model trained with 2-process DDP on the CPU (gloo), the suanli probe on.

    python examples/ddp_probe.py --out traces.otlp.jsonl --steps 300

Each rank appends its spans as OTLP/JSON lines to ``--out`` (the Collector's file-exporter
format, spec/telemetry.md); without ``--out`` they go by OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT.
The lines marked "probe" are all a training script adds.
"""

from __future__ import annotations

import argparse
import os
import socket
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from suanli.probe import Probe
from suanli.probe.torch import attach_ddp, model_flops_per_token

WIDTH = 256
BATCH = 64


def build_model() -> nn.Module:
    return nn.Sequential(nn.Linear(WIDTH, 4 * WIDTH), nn.ReLU(), nn.Linear(4 * WIDTH, 4 * WIDTH), nn.ReLU(),
                         nn.Linear(4 * WIDTH, WIDTH))


def train(rank: int, args: argparse.Namespace, port: int) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=args.world)
    model = DistributedDataParallel(build_model(), bucket_cap_mb=1)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(rank)
    probe = Probe(job_id=args.job, file=args.out,                                   # probe
                  flops_per_token=model_flops_per_token(model.module), peak_flops=args.peak_flops)
    attach_ddp(probe, model)                                                        # probe
    for step in range(args.steps):
        with probe.step(step, tokens=BATCH):                                        # probe
            with probe.phase("data_load"):
                x = torch.randn(BATCH, WIDTH, generator=gen)
                y = torch.randn(BATCH, WIDTH, generator=gen)
            with probe.phase("forward"):
                loss = nn.functional.mse_loss(model(x), y)
            with probe.phase("backward"):
                loss.backward()
            with probe.phase("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
        if args.checkpoint_every and (step + 1) % args.checkpoint_every == 0 and rank == 0:
            with probe.checkpoint_save(step):
                torch.save(model.module.state_dict(), Path(args.ckpt_dir) / "model.pt")
    probe.close()
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        print(f"rank 0: {args.steps} steps, probe {probe.stats()}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--out", default=None, help="OTLP/JSON lines file (default: OTLP/HTTP)")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--job", default="ddp-probe-example")
    ap.add_argument("--peak-flops", type=float, default=None, help="peak FLOP/s of one device, for MFU")
    ap.add_argument("--checkpoint-every", type=int, default=0)
    ap.add_argument("--ckpt-dir", default=os.getcwd())
    args = ap.parse_args(argv)
    kw: Any = {"args": (args, _free_port()), "nprocs": args.world, "join": True}
    mp.spawn(train, **kw)


if __name__ == "__main__":
    main()
