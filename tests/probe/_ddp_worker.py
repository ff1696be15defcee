"""Spawned by test_ddp: the timed hook must leave DDP's arithmetic exactly as the default hook's."""

from __future__ import annotations

import os
from pathlib import Path


def compare(rank: int, port: int, out: str) -> None:
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel

    from suanli.probe import Probe
    from suanli.probe.torch import attach_ddp

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    torch.manual_seed(0)
    base = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 8))
    plain = DistributedDataParallel(_copy(base), bucket_cap_mb=0.005)
    timed = DistributedDataParallel(_copy(base), bucket_cap_mb=0.005)
    probe = Probe(job_id="cmp", file=os.devnull)
    attach_ddp(probe, timed)
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (plain, timed)]
    gen = torch.Generator().manual_seed(rank)
    for step in range(3):
        x, y = torch.randn(16, 32, generator=gen), torch.randn(16, 8, generator=gen)
        for model, opt in zip((plain, timed), opts, strict=True):
            with probe.step(step):
                nn.functional.mse_loss(model(x), y).backward()
                opt.step()
                opt.zero_grad()
    same = all(torch.equal(a, b) for a, b in zip(plain.parameters(), timed.parameters(), strict=True))
    probe.close()
    dist.destroy_process_group()
    Path(out, f"rank{rank}").write_text(f"{same} {probe.stats()['spans_emitted']}", encoding="utf-8")


def _copy(model: object) -> object:
    import copy

    return copy.deepcopy(model)
