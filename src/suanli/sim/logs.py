"""kernel.log and trainer.log in ``journalctl -o short-iso-precise`` style."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TextIO

import numpy as np

from suanli.sim.cluster import SimCluster, gpu_pci, nvswitch_pci
from suanli.sim.faults import Fault
from suanli.sim.timeline import JobTimeline

__all__ = ["kernel_lines", "trainer_lines", "write_log"]

NOISE = [
    "kauditd_printk_skb: {n} callbacks suppressed",
    'audit: type=1400 audit({t:.3f}:{n}): apparmor="STATUS" operation="profile_replace" info="same as current '
    'profile, skipping" profile="cri-containerd.apparmor.d" pid={pid} comm="apparmor_parser"',
    "IPv6: ADDRCONF(NETDEV_CHANGE): cali{h}: link becomes ready",
    "perf: interrupt took too long ({n} > 2502), lowering kernel.perf_event_max_sample_rate to 65758",
    "nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, skipping further processing",
    "TCP: request_sock_TCP: Possible SYN flooding on port 9400. Sending cookies.  Check SNMP counters.",
    "mlx5_core 0000:19:00.0: mlx5_fw_tracer_handle_traces:744:(pid 0): FWTracer: Events were lost",
]
# More lines real nodes print that are about nothing (``Nuisances.log_noise``): an NVRM line that is no Xid,
# cgroup and filesystem chatter.
MORE_NOISE = [
    "NVRM: nvCheckOkFailedNoLog: Check failed: Call not supported [NV_ERR_NOT_SUPPORTED] (0x00000056) returned "
    "from pRmApi->Control(pRmApi, RES_GET_CLIENT_HANDLE(pKernelChannel), RES_GET_HANDLE(pKernelChannel), "
    "NVA06F_CTRL_CMD_RESTART_RUNLIST, &params, sizeof(params)) @ kernel_channel.c:{n}",
    "cgroup: fork rejected by pids controller in /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-"
    "pod{h}.slice",
    "xfs filesystem being remounted at /var/lib/kubelet/pods/{h}/volume-subpaths/config/trainer/0 supports "
    "timestamps until 2038 (0x7fffffff)",
]
TRAINER_WARNING = ("/usr/local/lib/python3.10/dist-packages/torch/distributed/checkpoint/filesystem.py:98: UserWarning: "
                   "TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only "
                   "storage class.\n  if tensor.storage().size() != tensor.numel():")
XID_TEXT = {
    48: "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 0, "
        "subpartition 0.",
    63: "Row Remapper: New row (0x00000000000{r:x}) marked for remapping, reset gpu to activate.",
    94: "Contained: SM (0x1). RST: No, D-RST: No",
    79: "GPU has fallen off the bus.",
    74: "NVLink: fatal error detected on link {r}(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)",
}


def stamp(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


def _xid(t: float, node: str, g: int, code: int, r: int) -> tuple[float, str]:
    bus = gpu_pci(g)[4:-2].lower()
    pid = "'<unknown>', name=<unknown>" if code == 63 else f"{3000 + g * 17}, name=python3"
    return t, f"{node} kernel: NVRM: Xid (PCI:{bus}): {code}, pid={pid}, {XID_TEXT[code].format(r=r)}"


def _aer(t: float, node: str, g: int, n: int) -> list[tuple[float, str]]:
    dev = gpu_pci(g)[4:].lower()
    bus = int(dev.split(":")[1], 16)
    port = f"0000:{bus - 1:02x}:01.0"
    p = f"{node} kernel: pcieport {port}:"
    return [(t, f"{p} AER: Multiple Correctable error message received from {dev}"),
            (t + 1e-5, f"{p} PCIe Bus Error: severity=Correctable, type=Physical Layer, (Receiver ID)"),
            (t + 2e-5, f"{p}   device [10b5:c010] error status/mask=00000001/0000e000"),
            (t + 3e-5, f"{p}    [ 0] RxErr"),
            (t + 0.5, f"{p} AER: {n} Correctable errors suppressed (rate limited)")]


def _sxid(t: float, node: str, k: int, link: int) -> list[tuple[float, str]]:
    """A fatal SXid 20034 (LTSSM Fault Up) on one link of NVSwitch chip ``k``, printed as the driver
    prints it: the text, the severity and the data line (format of the public samples)."""
    p = f"{node} kernel: nvidia-nvswitch{k}: SXid (PCI:{nvswitch_pci(k)[4:].lower()}): 20034, "
    return [(t, f"{p}Fatal, Link {link} LTSSM Fault Up"),
            (t + 1.1e-5, f"{p}Severity 1 Engine instance {link} Sub-engine instance 00"),
            (t + 1.5e-5, f"{p}Data {{0x50610002, 0x101000{link:02x}, 0x00000000, 0x101000{link:02x}, 0x00000000, "
                         "0x00000000, 0x00000000, 0x00000000}")]


def _switch_kernel(f: Fault, rng: np.random.Generator) -> list[tuple[float, str]]:
    """A failing NVSwitch chip: its link to each GPU of the node trains down (a fatal SXid per link),
    and each GPU reports the NVLink error on its side (Xid 74)."""
    node, k = f.root.split("/nvswitch")
    out: list[tuple[float, str]] = []
    for g in range(8):
        t = f.start_s + g * 0.004
        out += _sxid(t, node, int(k), 8 * g + int(rng.integers(0, 4)))
        out.append(_xid(t + 0.02, node, g, 74, int(rng.integers(0, 18))))
    return out


def _fault_kernel(c: SimCluster, f: Fault, t0: float, t1: float, rng: np.random.Generator) -> list[tuple[float, str]]:
    """Kernel records of one fault; repeating ones stop when it recovers and never precede the window
    (a running fault with ``quiet_logs`` printed them all before it: none)."""
    out: list[tuple[float, str]] = []
    if f.quiet_logs and f.start_s < t0:
        return out
    first = f.start_s if f.start_s >= t0 else t0 + float(rng.uniform(0.0, 30.0))
    t1 = t1 if f.end_s is None else min(t1, f.end_s)
    if f.kind == "gpu":
        node, g = f.root.split("/gpu")
        gi = int(g)
        if f.category == "gpu_memory_failure":
            out += [_xid(f.start_s, node, gi, 48, 0), _xid(f.start_s + 0.002, node, gi, 94, 0),
                    _xid(f.start_s + 1.3, node, gi, 63, int(rng.integers(1, 4000)))]
        elif f.category == "gpu_lost":
            out.append(_xid(f.start_s, node, gi, 79, 0))
        elif f.category == "nvlink_degradation":
            t = first
            while t < t1:
                out.append(_xid(t, node, gi, 74, int(rng.integers(0, 18))))
                t += float(rng.uniform(40, 120))
        elif f.category == "pcie_riser":
            t = first + 5.0
            while t < t1:
                out += _aer(t, node, gi, int(rng.integers(20, 80)))
                t += float(rng.uniform(8, 25))
    elif f.category == "nvswitch_fault":
        out += _switch_kernel(f, rng)
    elif f.category == "nic_down":
        node, name = f.root.split("/")
        nic = next(n for n in c.node(node).nics if n.name == name)
        out.append((f.start_s, f"{node} kernel: mlx5_core {nic.pci_bus_id}: Port module event[error]: "
                               "module 0, Cable error, Bad cable"))
        out.append((f.start_s + 0.01, f"{node} kernel: mlx5_core {nic.pci_bus_id} ib{name[-1]}: Link down"))
    return out


def kernel_lines(c: SimCluster, faults: list[Fault], t0: float, t1: float, rng: np.random.Generator,
                 more_noise: bool = False) -> list[tuple[float, str]]:
    out: list[tuple[float, str]] = []
    n_noise = int((t1 - t0) / 60.0 * min(len(c.nodes), 64) * (0.7 if more_noise else 0.35))
    pool = NOISE + MORE_NOISE if more_noise else NOISE
    for t in np.sort(rng.uniform(t0, t1, n_noise)):
        node = c.nodes[int(rng.integers(0, len(c.nodes)))].id
        msg = pool[int(rng.integers(0, len(pool)))].format(
            n=int(rng.integers(10, 4000)), t=float(t), pid=int(rng.integers(1000, 9000)), h=rng.bytes(5).hex()[:11])
        out.append((float(t), f"{node} kernel: {msg}"))
    for f in faults:
        out += _fault_kernel(c, f, t0, t1, rng)
    return out


def _oom(prefix: str, r: int, g: int) -> str:
    return (f"{prefix}[rank{r}]: Traceback (most recent call last):\n"
            '  File "/workspace/megatron/training/training.py", line 1246, in train_step\n'
            "    losses_reduced = forward_backward_func(\n"
            '  File "/usr/local/lib/python3.10/dist-packages/torch/nn/modules/module.py", line 1553, in _call_impl\n'
            "    return forward_call(*args, **kwargs)\n"
            f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU {g} has a total capacity "
            "of 79.10 GiB of which 1.21 GiB is free. Including non-PyTorch memory, this process has 77.88 GiB "
            "memory in use.")


def _event_line(tl: JobTimeline, kind: str, info: dict[str, object], prefix: str) -> str | None:
    job = tl.job
    r = int(info.get("rank", 0))   # type: ignore[call-overload]
    if kind == "checkpoint":
        return f"{prefix}saving checkpoint at iteration {info['step']:>8} to /checkpoints/{job.id} in torch_dist format"
    if kind == "watchdog":
        ms = int(float(info["timeout_s"]) * 1000)   # type: ignore[arg-type]
        return (f"{prefix}[rank{r}]:[E ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation "
                f"timeout: WorkNCCL(SeqNum={len(tl.steps) * 3 + 7}, OpType=ALLREDUCE, NumelIn={int(tl.net.grad_bytes // 2)}, "
                f"NumelOut={int(tl.net.grad_bytes // 2)}, Timeout(ms)={ms}) ran for {ms + 37} milliseconds before timing out.")
    if kind == "oom_onset":
        return _oom(prefix, r, int(job.ranks[r].split("gpu")[1]))
    if kind == "gpu_memory_failure_onset":
        return f"{prefix}[rank{r}]: RuntimeError: CUDA error: uncorrectable ECC error encountered"
    if kind == "gpu_lost_onset":
        return f"{prefix}[rank{r}]: RuntimeError: CUDA error: unspecified launch failure"
    if kind == "nic_down_onset":
        return f"{prefix}{job.ranks[r].split('/')[0]}:{r}:{r + 11} [{r % 8}] NCCL WARN NET/IB : port down, IBV_EVENT_PORT_ERR"
    if kind == "restart":
        return (f"{prefix}[torch.distributed.elastic.agent.server.api] Worker group FAILED ({info['category']}). "
                "2/3 attempts left; will restart worker group")
    if kind == "finished":
        return f"{prefix}[after training is done] exiting program at iteration {info['step']:>8}"
    return None


def _chatter(tl: JobTimeline, prefix: str) -> list[tuple[float, str]]:
    """Lines a healthy trainer prints that are no event (``Nuisances.log_noise``)."""
    host = tl.job.ranks[0].split("/")[0]
    out = [(a + 1.5, f"{prefix}{host}:{9000 + i}:{9000 + i} [0] NCCL INFO NCCL version 2.21.5+cuda12.4")
           for i, (a, _, _) in enumerate(tl.inits)]
    out += [(a + 0.2, f"{prefix}{TRAINER_WARNING}") for a, _, _ in tl.checkpoints]
    return out


def trainer_lines(c: SimCluster, tls: list[JobTimeline], rng: np.random.Generator,
                  more_noise: bool = False) -> list[tuple[float, str]]:
    out: list[tuple[float, str]] = []
    for tl in tls:
        job = tl.job
        host = job.ranks[-1].split("/")[0]
        prefix = f"{host} python3[{int(rng.integers(100000, 300000))}]: "
        if more_noise:
            out += _chatter(tl, prefix)
        ends = tl.step_ends()
        for k, step in enumerate(tl.steps):
            if step % 5 == 0:
                t = float(ends[k])
                out.append((t, f"{prefix} [{datetime.fromtimestamp(t, tz=UTC):%Y-%m-%d %H:%M:%S}] iteration "
                               f"{step:>8}/ 5000000 | consumed samples: {step * job.tokens_per_step // job.seq_len:>12} | "
                               f"elapsed time per iteration (ms): {tl.step_s[k] * 1000:.1f} | learning rate: "
                               f"2.765E-04 | global batch size: {job.tokens_per_step // job.seq_len:>5} | lm loss: "
                               f"{2.0 + 0.05 * float(rng.standard_normal()):.6E} | loss scale: 1.0 | grad norm: "
                               f"{1.0 + 0.1 * float(rng.standard_normal()):.3f} | number of skipped iterations:   0 |"))
            if tl.inflation[k] > 2.0 and k % 3 == 0:
                r = int(rng.integers(0, job.world))
                out.append((float(tl.t0[k]) + tl.sync[k] * 0.9,
                            f"{prefix}{job.ranks[r].split('/')[0]}:{r}:{r + 11} [{r % 8}] NCCL WARN NET/IB : Got "
                            "completion from peer with error 12, opcode 0, len 0, vendor err 129 (Send) "
                            "(Transport retry counter exceeded)"))
        for t, kind, info in tl.events:
            line = _event_line(tl, kind, info, prefix)
            if line:
                out.append((t, line))
            if kind == "checkpoint":
                out.append((float(info["end"]),   # type: ignore[arg-type]
                            f"{prefix}  successfully saved checkpoint from iteration {info['step']:>8} to "
                            f"/checkpoints/{job.id} [ t 1/{job.tp}, p 1/{job.pp} ]"))
    return out


def write_log(f: TextIO, lines: list[tuple[float, str]]) -> int:
    lines.sort(key=lambda x: x[0])
    for t, line in lines:
        f.write(f"{stamp(t)} {line}\n")
    return len(lines)
