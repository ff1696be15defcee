"""What a log record is: Xid, SXid, PCIe AER, NCCL, CUDA OOM, checkpoint, iteration, or other.

:func:`classify` looks at the whole text of one record (a multi-line record is one text) and
returns a :class:`Finding`-free value: the kind, the code, a severity, the PCI device or GPU index
it names, and parsed attributes. It knows nothing of hosts or the inventory: mapping to entities
is :mod:`suanli.ingest.logs`' job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from suanli.ingest.bounded import bounded_float, bounded_int
from suanli.inventory.normalize import PCI_IN_TEXT

__all__ = ["Classified", "classify", "collapse_text", "parse_bytes"]

_PCI = PCI_IN_TEXT
_XID = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<pci>" + _PCI + r")\): (?P<code>\d+),\s*(?P<text>.*)")
_XID_PID = re.compile(r"^pid=(?P<pid>'?[^,\s]*'?),\s*(?:name=(?P<name>[^,]*),\s*)?")
_SXID = re.compile(r"(?P<dev>nvidia-nvswitch\d+)?:?\s*SXid \((?:PCI:)?(?P<pci>" + _PCI + r")\): (?P<code>\d+),\s*"
                   r"(?P<text>.*)")
_SXID_FIELDS = (("link", re.compile(r"\bLink (\d+)")), ("sxid_severity", re.compile(r"\bSeverity (\d+)")),
                ("engine_instance", re.compile(r"\bEngine instance (\d+)")),
                ("data", re.compile(r"\bData \{([^}]*)\}")))
_XID_CAUSE = re.compile(r"caused by previous Xid (?P<code>\d+)")
_FATAL = re.compile(r"(?<![\w-])Fatal\b")
_OFF_BUS = re.compile(r"NVRM: (?:The NVIDIA )?GPU (?:at )?(?:PCI:)?(?P<pci>" + _PCI + r")[\s\S]{0,400}?fallen off the bus")
_AER_HEAD = re.compile(r"AER: (?P<multi>Multiple )?(?P<sev>Corrected|Correctable|Uncorrected \((?:Non-Fatal|Fatal)\)"
                       r"|Uncorrectable(?: \((?:Non-Fatal|Fatal)\))?) error(?: message)? received(?: from)?:?\s*"
                       r"(?P<src>" + _PCI + r")?")
_AER_BUS = re.compile(r"PCIe Bus Error: severity=(?P<sev>[^,]+), type=(?P<type>[^,]+)(?:, \((?P<agent>[^)]+)\))?")
_AER_DEV = re.compile(r"device \[(?P<vendor>[0-9a-f]{4}):(?P<device>[0-9a-f]{4})\] error status/mask="
                      r"(?P<status>[0-9a-f]+)/(?P<mask>[0-9a-f]+)")
_AER_BIT = re.compile(r"^\s*\[\s*(?P<bit>\d+)\]\s+(?P<name>\S+(?: \S+)*?)[ \t]*(?:\((?P<first>First)\))?[ \t]*(?=\n|$)")
_AER_SUPPRESSED = re.compile(r"AER: (?P<n>\d+) (?P<sev>Correctable|Uncorrectable|Uncorrected) errors? suppressed")
_DEV_PREFIX = re.compile(r"^(?P<drv>[\w-]+) (?P<pci>" + _PCI + r"): ")
_WATCHDOG = re.compile(r"Watchdog caught collective operation timeout: WorkNCCL\((?P<work>[^\n]{0,600})")
_RAN_FOR = re.compile(r"\bran for (?P<ran>\d+) milliseconds")
_WORK_FIELD = re.compile(r"(?P<k>SeqNum|OpType|NumelIn|NumelOut|Timeout\(ms\))=(?P<v>[^,)\s]+)")
_RANK = re.compile(r"\[(?:PG [^\]]*?)?Rank (?P<rank>\d+)\]|\[rank(?P<rank2>\d+)\]")
_TIMEOUT_AT = re.compile(r"Timeout at NCCL work: (?P<seq>\d+)(?:, last enqueued NCCL work: (?P<enq>\d+), "
                         r"last completed NCCL work: (?P<done>\d+))?")
_WATCHDOG_WORK = re.compile(r"detected by watchdog at work: (?P<seq>\d+), last enqueued NCCL work: (?P<enq>\d+), "
                            r"last completed NCCL work: (?P<done>\d+)")
_NCCL_WARN = re.compile(r"NCCL (?P<lvl>WARN|ERROR|ABORT)\b|ProcessGroupNCCL|detected by watchdog|ncclSystemError|ncclInternalError|"
                        r"ncclUnhandledCudaError|ncclRemoteError|NCCL error|NCCL communicator")
_IB_COMPLETION = re.compile(r"NET/IB\s*:[^\n]{0,300}?(?:completion|Completion)[^\n]{0,300}?"
                            r"(?:status=|with error )(?P<status>\d+)(?:[^\n]{0,200}?vendor err (?P<vendor>\d+))?")
_IB_EVENT = re.compile(r"\b(?P<event>IBV_EVENT_\w+)")
_NCCL_PREFIX = re.compile(r"(?P<host>[A-Za-z0-9][\w.-]*):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] "
                          r"(?:[\w./-]+:\d+ )?NCCL ")
_NIC_LINK = re.compile(r"(?P<drv>mlx5_core|mlx4_core|bnxt_en|ice|i40e)\s+(?P<pci>" + _PCI + r")(?:\s+(?P<netdev>[\w.-]+))?:"
                       r"\s*(?P<what>Link down|Link up|Port module event\[(?P<level>\w+)\][^\n]*|"
                       r"Lost carrier|NIC Link is (?:Down|Up))")
_RESTART = re.compile(r"Worker group FAILED|will restart worker group|Restarting worker group|"
                      r"Rendezvous'?s? .*? (?:closed|failed)")
_OOM = re.compile(r"CUDA out of memory\.?\s*Tried to allocate (?P<n>[\d.]+) ?(?P<unit>[KMGTP]i?B|bytes|B)")
_OOM_BARE = re.compile(r"CUDA out of memory|OutOfMemoryError")
_OOM_GPU = re.compile(r"\(?GPU (?P<gpu>\d+)(?:;| has)")
_OOM_TOTAL = re.compile(r"(?:total capacity of|total capacty of|; )\s*(?P<n>[\d.]+) ?(?P<unit>[KMGTP]i?B|bytes)"
                        r"(?: total capacity)?")
_OOM_FREE = re.compile(r"(?:of which |; )(?P<n>[\d.]+) ?(?P<unit>[KMGTP]i?B|bytes) (?:is )?free")
_CUDA_ERR = re.compile(r"CUDA error: (?P<what>[^\n]+)")
_CUDA_DEV = re.compile(r"current device: (?P<dev>\d+)")
_CKPT = re.compile(r"(?P<what>saving checkpoint at iteration|successfully saved checkpoint (?:from|at) iteration|"
                   r"loading checkpoint from \S{0,300} at iteration|successfully loaded checkpoint from \S{0,300} at iteration)"
                   r"\s+(?P<it>\d+)(?: to (?P<path>\S+))?")
_ITER = re.compile(r"iteration\s+(?P<it>\d+)\s*/\s*(?P<total>\d+)\s*\|(?P<fields>.*)")
_VOLATILE = re.compile(r"pid=[^,\s]*|name=[^,]*|\[\d+\]|\d{4}-\d\d-\d\d[T ][\d:.,]+(?:Z|[+-]\d\d:?\d\d)?")
_UNITS = {"B": 1, "bytes": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "PB": 1e15,
          "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50}


@dataclass
class Classified:
    """The recognised content of one record."""

    kind: str
    code: int | None = None
    severity: str | None = None
    pci: str | None = None            # the PCI device the record names (Xid, AER source, ...)
    gpu_index: int | None = None      # a GPU named by index (CUDA OOM)
    rank: int | None = None
    attrs: dict[str, Any] = field(default_factory=dict)


def parse_bytes(number: str, unit: str) -> int:
    """``1.70``, ``GiB`` -> 1825361100 (binary prefixes are powers of 2, SI ones of 10)."""
    return bounded_int(float(round(bounded_float(number, "size", 0, 1e21) * _UNITS.get(unit, 1))), "bytes", 0)


def collapse_text(message: str) -> str:
    """The message with its volatile parts (pid, process name, embedded timestamps) removed."""
    return _VOLATILE.sub("", message)


def classify(text: str) -> Classified:
    """Recognise one record's text (its lines joined by newlines)."""
    return _classify(text)


def _classify(text: str) -> Classified:
    for fn in (_xid, _sxid, _off_bus, _aer, _nic_link, _nccl, _oom, _cuda_error, _restart, _checkpoint,
               _iteration):
        got = fn(text)
        if got is not None:
            return got
    return Classified("other")


def _xid(text: str) -> Classified | None:
    m = _XID.search(text)
    if m is None:
        return None
    rest = m.group("text")
    attrs: dict[str, Any] = {}
    pm = _XID_PID.match(rest)
    if pm:
        attrs["pid"] = pm.group("pid").strip("'")
        if pm.group("name") is not None:
            attrs["process"] = pm.group("name").strip()
        rest = rest[pm.end():]
    attrs["text"] = rest.strip()
    cause = _XID_CAUSE.search(rest)
    if cause:
        attrs["caused_by_xid"] = bounded_int(cause.group("code"), "Xid code", 0)   # Xid 45 "caused by previous Xid N"
    sev = "fatal" if _FATAL.search(rest) else None             # "Fatal" in the text: at least fatal
    return Classified("xid", bounded_int(m.group("code"), "Xid code", 0), severity=sev, pci=m.group("pci"), attrs=attrs)


def _sxid(text: str) -> Classified | None:
    """An SXid record; NVSwitch prints one over several lines (the ``Fatal``/``Non-fatal`` line with
    the link, ``Severity N Engine instance N``, ``Data {...}``): every line of the same switch and
    code in the record adds its part."""
    m = _SXID.search(text)
    if m is None:
        return None
    code, dev = bounded_int(m.group("code"), "SXid code", 0), m.group("dev")
    parts = [p.group("text").strip() for p in _SXID.finditer(text)
             if p.group("code") == m.group("code") and p.group("dev") == dev]
    attrs: dict[str, Any] = {"text": next((p for p in parts if not p.startswith(("Data", "Severity"))), parts[0]),
                             "nvswitch": dev}
    body = "\n".join(parts)
    for key, rx in _SXID_FIELDS:
        f = rx.search(body)
        if f:
            attrs[key] = f.group(1) if key == "data" else bounded_int(f.group(1), f"SXid {key}", 0)
    if "link" not in attrs and "engine_instance" in attrs:
        attrs["link"] = attrs["engine_instance"]          # the link's engine: its instance is the link
    sev = "fatal" if re.search(r"(?<!Non-)\bFatal\b", body) else (
        "warning" if re.search(r"Non-?fatal", body, re.I) else None)
    return Classified("sxid", code, severity=sev, pci=m.group("pci"), attrs=attrs)


def _off_bus(text: str) -> Classified | None:
    m = _OFF_BUS.search(text)
    if m is None:
        return None
    return Classified("xid", 79, pci=m.group("pci"), attrs={"inferred": True, "text": "GPU has fallen off the bus"})


def _aer(text: str) -> Classified | None:
    dev = _DEV_PREFIX.match(text)
    if ("AER:" not in text and "PCIe Bus Error" not in text and not _AER_DEV.search(text)
            and not (dev and _AER_BIT.match(text[dev.end():]))):
        return None
    out = Classified("aer")
    if dev:
        out.attrs["reporter"] = dev.group("pci")
        out.attrs["reporter_driver"] = dev.group("drv")
        out.pci = dev.group("pci")
    head = _AER_HEAD.search(text)
    if head:
        sev = head.group("sev")
        out.severity = "corrected" if sev.startswith("Correct") else ("fatal" if "(Fatal)" in sev else "uncorrected")
        out.attrs["multiple"] = bool(head.group("multi"))
        if head.group("src"):
            out.pci = head.group("src")
    sup = _AER_SUPPRESSED.search(text)
    if sup:
        out.attrs["suppressed"] = bounded_int(sup.group("n"), "AER suppressed count", 0)
        out.severity = "corrected" if sup.group("sev").startswith("Correct") else "uncorrected"
    if re.search(r"can't recover|recovery failed", text):
        out.severity = "fatal"
    out.attrs["detail_only"] = head is None and sup is None and not re.search(r"AER: \S", text)
    add_aer_detail(out, text)
    return out


def add_aer_detail(out: Classified, text: str) -> bool:
    """Merge the detail lines of an AER report (bus error type, status, error bits); True if any."""
    found = False
    for line in text.split("\n"):
        body = _DEV_PREFIX.sub("", line.strip(), count=1)
        bus = _AER_BUS.search(body)
        if bus:
            sev = bus.group("sev").strip()
            out.attrs["error_type"] = bus.group("type").strip()
            if bus.group("agent"):
                out.attrs["agent"] = bus.group("agent")
            if out.severity is None:
                out.severity = "corrected" if sev.startswith("Correct") else (
                    "fatal" if "Fatal)" in sev and "Non-Fatal" not in sev else "uncorrected")
            found = True
            continue
        dev = _AER_DEV.search(body)
        if dev:
            out.attrs.update(vendor_device=f"{dev.group('vendor')}:{dev.group('device')}",
                             status=dev.group("status"), mask=dev.group("mask"))
            found = True
            continue
        bit = _AER_BIT.match(body)
        if bit:
            out.attrs.setdefault("errors", []).append(bit.group("name"))
            if bit.group("first"):
                out.attrs["first_error"] = bit.group("name")
            found = True
    return found


def _rank(text: str) -> int | None:
    """The global rank a line names (``[rank3]:`` of torchrun, ``[Rank 3]`` of ProcessGroupNCCL)."""
    m = _RANK.search(text)
    return bounded_int(m.group("rank") or m.group("rank2"), "rank", 0) if m else None


def _nccl(text: str) -> Classified | None:
    m = _WATCHDOG.search(text)
    rank = _rank(text)
    if m:
        attrs: dict[str, Any] = {}
        for f in _WORK_FIELD.finditer(m.group("work")):
            k, v = f.group("k"), f.group("v")
            key = {"SeqNum": "seq_num", "OpType": "op_type", "NumelIn": "numel_in", "NumelOut": "numel_out",
                   "Timeout(ms)": "timeout_ms"}[k]
            attrs[key] = v if key == "op_type" else bounded_int(v, k, 0) if v.isdecimal() else v
        ran = _RAN_FOR.search(m.group("work"))
        if ran:
            attrs["ran_for_ms"] = bounded_int(ran.group("ran"), "ran for ms", 0)
        return Classified("nccl_timeout", severity="fatal", rank=rank, attrs=attrs)
    old = _TIMEOUT_AT.search(text)                 # the older wording of the same timeout
    if old:
        attrs = {"seq_num": bounded_int(old.group("seq"), "NCCL work", 0)}
        if old.group("enq"):
            attrs.update(last_enqueued=bounded_int(old.group("enq"), "last enqueued", 0),
                         last_completed=bounded_int(old.group("done"), "last completed", 0))
        return Classified("nccl_timeout", severity="fatal", rank=rank, attrs=attrs)
    if not _NCCL_WARN.search(text):
        return None
    attrs = {}
    w = _WATCHDOG_WORK.search(text)
    if w:
        attrs.update(seq_num=bounded_int(w.group("seq"), "NCCL seq", 0), last_enqueued=bounded_int(w.group("enq"), "NCCL seq", 0),
                     last_completed=bounded_int(w.group("done"), "NCCL seq", 0))
    pre = _NCCL_PREFIX.search(text)
    if pre:
        attrs.update(nccl_host=pre.group("host"), cuda_dev=bounded_int(pre.group("dev"), "CUDA device", 0))
    ev = _IB_EVENT.search(text)
    if ev:
        attrs["ib_event"] = ev.group("event")
    ib = _IB_COMPLETION.search(text)
    if ib:
        attrs["ib_status"] = bounded_int(ib.group("status"), "IB status", 0)
        if ib.group("vendor"):
            attrs["ib_vendor_err"] = bounded_int(ib.group("vendor"), "IB vendor error", 0)
    return Classified("nccl_warn", severity="warning", rank=rank, attrs=attrs)


def _oom(text: str) -> Classified | None:
    m = _OOM.search(text)
    if m is None:
        bare = _OOM_BARE.search(text) is not None and "CUDA" in text
        return Classified("cuda_oom", severity="fatal", rank=_rank(text)) if bare else None
    tail = text[m.end():]
    attrs: dict[str, Any] = {"bytes_requested": parse_bytes(m.group("n"), m.group("unit"))}
    gpu = _OOM_GPU.search(tail)
    total = _OOM_TOTAL.search(tail)
    free = _OOM_FREE.search(tail)
    if total:
        attrs["total_bytes"] = parse_bytes(total.group("n"), total.group("unit"))
    if free:
        attrs["free_bytes"] = parse_bytes(free.group("n"), free.group("unit"))
    if gpu:
        attrs["gpu_index"] = bounded_int(gpu.group("gpu"), "GPU index", 0)
    return Classified("cuda_oom", severity="fatal", gpu_index=attrs.get("gpu_index"), rank=_rank(text), attrs=attrs)


def _cuda_error(text: str) -> Classified | None:
    m = _CUDA_ERR.search(text)
    if m is None:
        return None
    what = m.group("what").strip()
    sev = "fatal" if re.search(r"ECC|illegal|launch failure|Xid", what, re.I) else "warning"
    dev = _CUDA_DEV.search(text)                   # a CUDA device index, as in OOM's "GPU N"
    return Classified("cuda_error", severity=sev, gpu_index=int(dev.group("dev")) if dev else None,
                      rank=_rank(text), attrs={"error": what})


def _nic_link(text: str) -> Classified | None:
    m = _NIC_LINK.search(text)
    if m is None:
        return None
    what = m.group("what")
    if what.startswith("Port module event"):
        state = "module_error" if (m.group("level") or "").lower() == "error" else "module_event"
    else:
        state = "up" if what.lower().endswith("up") else "down"
    attrs: dict[str, Any] = {"state": state, "driver": m.group("drv"), "text": what}
    if m.group("netdev"):
        attrs["netdev"] = m.group("netdev")
    sev = "info" if state in ("up", "module_event") else "fatal"
    return Classified("nic_link", severity=sev, pci=m.group("pci"), attrs=attrs)


def _restart(text: str) -> Classified | None:
    m = _RESTART.search(text)
    if m is None:
        return None
    return Classified("restart", severity="warning", rank=_rank(text))


def _checkpoint(text: str) -> Classified | None:
    m = _CKPT.search(text)
    if m is None:
        return None
    what = m.group("what")
    phase = "load" if "load" in what else ("end" if what.startswith("successfully") else "start")
    attrs: dict[str, Any] = {"phase": phase, "iteration": bounded_int(m.group("it"), "checkpoint iteration", 0)}
    if m.group("path"):
        attrs["path"] = m.group("path")
    return Classified("checkpoint", severity="info", attrs=attrs)


def _iteration(text: str) -> Classified | None:
    m = _ITER.search(text)
    if m is None:
        return None
    attrs: dict[str, Any] = {"iteration": bounded_int(m.group("it"), "iteration", 0),
                             "train_iters": bounded_int(m.group("total"), "train iterations", 0)}
    for part in m.group("fields").split("|"):
        key, sep, value = part.partition(":")
        if not sep:
            continue
        name = re.sub(r"[^a-z0-9]+", "_", key.strip().lower()).strip("_")
        try:
            attrs[name] = float(value.strip())
        except ValueError:
            attrs[name] = value.strip()
    if "elapsed_time_per_iteration_ms" in attrs:
        attrs["elapsed_ms"] = attrs.pop("elapsed_time_per_iteration_ms")
    return Classified("iteration", severity="info", attrs=attrs)
